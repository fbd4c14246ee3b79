"""The sample corpus ingested with RAG_ASSETS_EXECUTOR=celery: two Celery workers
(dagster-celery's app, `--pool=solo`) and a Redis broker on 127.0.0.1, the Dagster
instance on a real PostgreSQL server, gives the parents, children and search results of
the in-process run (``sample_kb``)."""

from __future__ import annotations

import pytest
from dagster import DagsterEventType

from rag_assets.ingest.stages import load_children, load_parents
from rag_assets.orchestration.ingest_runs import ingest
from rag_assets.orchestration.instance import open_instance
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.store import KnowledgeStore
from rag_assets_tests.support.stores import make_settings, settings_env

pytestmark = [pytest.mark.slow, pytest.mark.dagster_run, pytest.mark.celery]

QUESTIONS = [
    "franchise inondation zone A",
    "préavis résiliation MX-200",
    "provision pour sinistres à payer",
    "maintenance préventive visites annuelles",
]


@pytest.fixture(scope="module")
def celery_cluster():
    from rag_assets_tests.support.celery_workers import CeleryCluster, unavailable_reason

    if reason := unavailable_reason():
        pytest.skip(reason)
    cluster = CeleryCluster()
    yield cluster
    cluster.stop()


def _content(settings, document_ids):
    store = KnowledgeStore(settings.store)
    return {
        doc: (
            [(p["parent_id"], p["text"]) for p in load_parents(store, doc)],
            [(c["child_id"], c["parent_id"], c["contextualized"]) for c in load_children(store, doc)],
        )
        for doc in sorted(document_ids)
    }


def _results(settings):
    kb = KnowledgeBase.open(settings.store)
    return {
        q: [(h.document_id, h.parent_id, [(e, r) for e, r in sorted(h.ranks.items())]) for h in kb.search(q, k=5)]
        for q in QUESTIONS
    }


def test_two_celery_workers_give_the_in_process_store(
    sample_kb, sample_copy, postgres_server, celery_cluster, tmp_path
):
    reference, _, in_process = sample_kb
    settings = make_settings(tmp_path).model_copy(
        update={
            "dagster": "postgres",
            "postgres_url": postgres_server.database(),
            "executor": "celery",
            "celery_broker": celery_cluster.broker,
        }
    )
    celery_cluster.start(2, settings_env(settings))
    instance = open_instance(settings)
    try:
        outcomes = ingest([sample_copy], settings, instance)
        assert {o.document_id: o.status for o in outcomes} == {o.document_id: "indexed" for o in in_process}, [
            (o.document_id, o.message) for o in outcomes if o.status != "indexed"
        ]
        # each stage was reported (read back from the workers' events), in pipeline order per document
        assert all([s.stage for s in o.stages][-1] == "publication" for o in outcomes)
        workers = {
            entry.dagster_event.engine_event_data.metadata["Celery worker"].value
            for o in outcomes
            for entry in instance.all_logs(o.run_id, of_type=DagsterEventType.ENGINE_EVENT)
            if "Celery worker" in entry.dagster_event.engine_event_data.metadata
        }
        assert workers == set(celery_cluster.names), "both workers executed steps"
    finally:
        instance.dispose()
    documents = [o.document_id for o in in_process]
    assert _content(settings, documents) == _content(reference, documents)
    assert _results(settings) == _results(reference)
