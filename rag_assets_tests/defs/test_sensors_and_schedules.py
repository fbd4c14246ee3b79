"""The inbox sensor and the nightly schedule, evaluated without the daemon; the runs
they request are executed through a real Dagster instance."""

import dataclasses
import shutil

import pytest
from dagster import DagsterInstance, SensorResult, SkipReason, build_schedule_context, build_sensor_context

from rag_assets import versions
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.defs.ingestion.partitions import documents_partitions
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.defs.ingestion.runs import materialize_document
from rag_assets.defs.ingestion.schedules import nightly_reindex
from rag_assets.defs.ingestion.sensors import inbox_sensor
from rag_assets.index.dense import DenseIndex
from rag_assets.index.lexical import LexicalIndex
from rag_assets.settings import SAMPLES_DIR
from rag_assets.store import KnowledgeStore
from rag_assets_tests.conftest import make_settings


@pytest.fixture
def inbox_env(tmp_path, monkeypatch):
    settings = make_settings(tmp_path)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    monkeypatch.setenv("RAG_ASSETS_INBOX", str(inbox))
    settings = dataclasses.replace(settings, inbox=inbox)
    instance = DagsterInstance.ephemeral()
    resources = {"knowledge": KnowledgeStoreResource(store=str(settings.store), embedder=settings.embedder)}
    yield settings, instance, resources, inbox
    instance.dispose()


def tick(settings, instance, resources):
    """One sensor evaluation, then what the daemon would do with its result."""
    with build_sensor_context(instance=instance, resources=resources) as context:
        result = inbox_sensor(context)
    if isinstance(result, SkipReason):
        return []
    assert isinstance(result, SensorResult)
    for request in result.dynamic_partitions_requests or []:
        if request.partition_keys and type(request).__name__.startswith("Add"):
            instance.add_dynamic_partitions(documents_partitions.name, list(request.partition_keys))
        elif request.partition_keys:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(documents_partitions.name, key)
    outcomes = []
    for run in result.run_requests or []:
        stages = [key.path[-1] for key in run.asset_selection]
        outcomes.append(materialize_document(settings, instance, run.partition_key, stages, inbox_path(settings, run)))
    return outcomes


def inbox_path(settings, run):
    from pathlib import Path

    return Path(run.tags["rag_assets/source"])


def test_add_modify_delete_in_the_inbox(inbox_env):
    settings, instance, resources, inbox = inbox_env
    doc = inbox / "avenant.html"
    shutil.copy(SAMPLES_DIR / "avenant-1-contrat-MX-200.html", doc)
    [added] = tick(settings, instance, resources)
    assert added.status == "indexed"
    key = added.document_id
    assert instance.get_dynamic_partitions(documents_partitions.name) == [key]
    assert tick(settings, instance, resources) == [], "an unchanged file is not run again"

    doc.write_text(doc.read_text(encoding="utf-8").replace("deux (2) mois", "quatre (4) semaines"), encoding="utf-8")
    [changed] = tick(settings, instance, resources)
    assert changed.status == "indexed" and changed.document_id == key
    hits = KnowledgeBase.open(settings.store).search("préavis quatre semaines", k=2)
    assert "quatre (4) semaines" in hits[0].text

    doc.unlink()
    assert tick(settings, instance, resources) == []
    store = KnowledgeStore(settings.store)
    assert instance.get_dynamic_partitions(documents_partitions.name) == []
    assert DenseIndex(store.lancedb_dir).count(key) == 0
    assert LexicalIndex(store.tantivy_dir).count(key) == 0
    assert not store.document_dir(key).exists()
    assert KnowledgeBase.open(settings.store).search("préavis", k=3) == []


def test_code_version_bump_reaches_every_downstream_stage(inbox_env, monkeypatch):
    settings, instance, resources, inbox = inbox_env
    shutil.copy(SAMPLES_DIR / "note-provisionnement-non-vie.md", inbox / "note.md")
    [done] = tick(settings, instance, resources)
    with build_schedule_context(instance=instance, resources=resources) as context:
        assert isinstance(nightly_reindex(context), SkipReason)
    monkeypatch.setitem(versions.CODE_VERSIONS, "docling_document", "bumped")
    with build_schedule_context(instance=instance, resources=resources) as context:
        [request] = nightly_reindex(context)
    assert request.partition_key == done.document_id
    assert [k.path[-1] for k in request.asset_selection] == [
        "docling_document", "parents", "children", "dense_embeddings", "lexical_index", "publication"]
