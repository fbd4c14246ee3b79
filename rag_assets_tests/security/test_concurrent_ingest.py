"""Issue 13, a probe that passed, kept as a test: two `rag-assets ingest` processes started
at once on the same folder and store leave consistent counts — each document published
once, with as many rows in either engine as it has children, and no other version."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from rag_assets.index.dense import DenseIndex
from rag_assets.index.lexical import LexicalIndex
from rag_assets.index.publication import published_version
from rag_assets.ingest.stages import load_children
from rag_assets.settings import SAMPLES_DIR
from rag_assets.store import KnowledgeStore
from rag_assets_tests.support.stores import make_settings

pytestmark = [pytest.mark.slow, pytest.mark.dagster_run]  # two ingest subprocesses

NOTES = ["note-provisionnement-non-vie.md", "note-interne-procedure.md"]


def test_two_ingest_processes_at_once_leave_consistent_counts(tmp_path):
    settings = make_settings(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in NOTES:
        shutil.copy(SAMPLES_DIR / name, docs / name)
        shutil.copy(SAMPLES_DIR / f"{name}.meta.yaml", docs / f"{name}.meta.yaml")
    env = {**os.environ, "RAG_ASSETS_STORE": str(settings.store), "DAGSTER_HOME": str(settings.dagster_home)}
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "rag_assets.cli", "ingest", str(docs)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=900)[0] for process in processes]
    assert [p.returncode for p in processes] == [0, 0], "\n\n".join(o[-3000:] for o in outputs)

    store = KnowledgeStore(settings.store)
    dense, lexical = DenseIndex(store.lancedb_dir), LexicalIndex(store.tantivy_dir)
    keys = sorted(store.registry())
    assert len(keys) == len(NOTES)
    for key in keys:
        version = published_version(store, key)
        children = len(load_children(store, key))
        assert children and dense.count(key) == lexical.count(key) == children, key
        assert dense.versions()[key] == lexical.versions()[key] == {version}, key
