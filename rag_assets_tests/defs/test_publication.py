"""Readers during a re-index see one version of a document, never a mix; a killed
indexing process leaves the previous version searchable and the next run repairs."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from rag_assets.index.publication import published_version
from rag_assets.ingest.stages import load_parents
from rag_assets.orchestration.ingest_runs import ingest
from rag_assets.orchestration.instance import open_instance
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.store import KnowledgeStore
from rag_assets_tests.support.stores import make_settings, settings_env

pytestmark = [pytest.mark.slow, pytest.mark.dagster_run]  # ingests in subprocesses, one of them killed

QUESTION = "garantie dommages franchise sinistre"


def note(version: str, paragraphs: int = 6) -> str:
    sections = []
    for section in range(paragraphs):
        sections.append(
            f"## Article {section + 1}\n\n"
            + " ".join(
                f"Version {version}, clause {section}.{i} : la garantie couvre les dommages du sinistre {i} "
                f"avec une franchise de {100 * (i + 1)} € selon la version {version}."
                for i in range(6)
            )
        )
    return "# Conditions de la garantie\n\n" + "\n\n".join(sections)


@pytest.fixture
def kb_env(tmp_path):
    settings = make_settings(tmp_path)
    doc = tmp_path / "conditions.md"
    doc.write_text(note("alpha"), encoding="utf-8")
    with open_instance(settings) as instance:
        [first] = ingest([doc], settings, instance)
        assert first.status == "indexed"
        yield settings, instance, doc, first.document_id


def test_readers_see_one_version_during_reindex(kb_env):
    settings, instance, doc, key = kb_env
    store = KnowledgeStore(settings.store)
    versions = {published_version(store, key): {p["parent_id"] for p in load_parents(store, key)}}
    kb = KnowledgeBase.open(settings.store)
    results, errors, stop = [], [], threading.Event()

    def reader():
        try:
            while not stop.is_set():
                results.append([(h.version, h.parent_id) for h in kb.search(QUESTION, k=10)])
        except Exception as exc:  # surfaced below
            errors.append(exc)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for version in ("beta", "gamma"):
            doc.write_text(note(version), encoding="utf-8")
            [outcome] = ingest([doc], settings, instance)
            assert outcome.status == "indexed"
            versions[published_version(store, key)] = {p["parent_id"] for p in load_parents(store, key)}
            time.sleep(0.3)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not errors, errors
    assert len(results) > 5 and len(versions) == 3
    seen = set()
    for hits in results:
        stamps = {v for v, _ in hits}
        assert len(stamps) <= 1, f"mixed versions in one result set: {stamps}"
        for stamp, parent in hits:
            assert parent in versions[stamp], "parent comes from the version its hit claims"
        seen |= stamps
    assert len(seen) >= 2, "the reader saw the re-index happen"


def test_killed_indexing_keeps_previous_version_and_next_run_repairs(kb_env):
    settings, instance, doc, key = kb_env
    store = KnowledgeStore(settings.store)
    old_version = published_version(store, key)
    doc.write_text(note("delta", paragraphs=40), encoding="utf-8")  # long enough to embed for seconds
    children = store.children_path(key)
    before = children.stat().st_mtime_ns
    process = subprocess.Popen(
        [sys.executable, "-m", "rag_assets.cli", "ingest", str(doc)],
        env=settings_env(settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 240
    while time.time() < deadline and (not children.exists() or children.stat().st_mtime_ns == before):
        assert process.poll() is None, "indexing finished before it could be killed"
        time.sleep(0.05)
    time.sleep(0.5)  # into the embedding stage
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()

    assert published_version(store, key) == old_version
    kb = KnowledgeBase.open(settings.store)
    hits = kb.search("clause franchise version alpha", k=3)
    assert hits and all(h.version == old_version for h in hits)
    assert "alpha" in hits[0].text and "delta" not in hits[0].text

    [repaired] = ingest([doc], settings, instance)
    assert repaired.status == "indexed"
    new_version = published_version(store, key)
    assert new_version != old_version
    hits = KnowledgeBase.open(settings.store).search("clause franchise version delta", k=3)
    assert hits and "delta" in hits[0].text and all(h.version == new_version for h in hits)
