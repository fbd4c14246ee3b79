"""Freshness decided by Dagster alone, on a real instance: the inbox sensor adds and deletes
partitions and observes files, the stages' automation conditions (evaluated by Dagster's
own `evaluate_automation_conditions`, as the `ingestion_automation` sensor does) request
what changed, the planner `rag-assets ingest` uses (orchestration/planner.py, on Dagster's public API)
agrees with them and with the UI's stale status, and the requested runs are executed through
the runs module the CLI uses."""

import shutil

import pytest
from dagster import (
    DagsterInstance,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Definitions,
    SensorResult,
    SkipReason,
    build_sensor_context,
    evaluate_automation_conditions,
)

from rag_assets import versions
from rag_assets.dagster_records import record_observations
from rag_assets.defs.ingestion.assets import (
    STAGES,
    build_ingestion_graph,
    product_graph,
    source_observations,
    source_versions,
)
from rag_assets.defs.ingestion.jobs import automation_sensor, observe_sources_job, withdraw_job
from rag_assets.defs.ingestion.schedules import nightly_reindex
from rag_assets.defs.ingestion.sensors import inbox_sensor
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.index.dense import DenseIndex
from rag_assets.index.lexical import LexicalIndex
from rag_assets.orchestration import ingest_runs, planner
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.settings import SAMPLES_DIR
from rag_assets.store import KnowledgeStore
from rag_assets_tests.support.stores import make_settings

PARTITIONS = product_graph.partitions.name


@pytest.fixture
def env(tmp_path, monkeypatch):
    settings = make_settings(tmp_path)
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    monkeypatch.setenv("RAG_ASSETS_INBOX", str(inbox))
    settings = settings.model_copy(update={"inbox": inbox})
    instance = DagsterInstance.ephemeral()
    resources = {"knowledge": KnowledgeStoreResource(store=str(settings.store), embedder=settings.embedder)}
    yield settings, instance, resources, inbox
    instance.dispose()


class Automation:
    """Dagster's automation evaluation, tick after tick (the cursor carries over, as the
    automation sensor's does), and the requested runs executed one per document."""

    def __init__(self, settings, instance, resources, graph=product_graph):
        self.settings, self.instance, self.resources, self.cursor = settings, instance, resources, None
        self.use(graph)

    def use(self, graph):
        self.graph = graph
        self.defs = Definitions(assets=graph.assets, resources=self.resources)

    def tick(self) -> dict[str, list[str]]:
        """{document: [requested stages, pipeline order]}"""
        result = evaluate_automation_conditions(defs=self.defs, instance=self.instance, cursor=self.cursor)
        self.cursor = result.cursor
        requested: dict[str, set[str]] = {}
        for stage in STAGES:
            for partition in result.get_requested_partitions(self.graph.key(stage)):
                requested.setdefault(partition, set()).add(stage)
        return {key: [s for s in STAGES if s in stages] for key, stages in sorted(requested.items())}

    def run(self, requested: dict[str, list[str]]) -> list:
        registry = KnowledgeStore(self.settings.store).registry()
        return [
            ingest_runs.materialize_document(self.settings, self.instance, key, stages, registry[key], graph=self.graph)
            for key, stages in requested.items()
        ]


def ui_stale_status(instance, graph, resources, keys) -> dict[str, list[str]]:
    """Per document, the stages the UI shows stale or missing: Dagster's own resolver, not
    exported (imported here only, to hold the planner to it)."""
    from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
    from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
    from dagster._time import get_current_datetime

    asset_graph = Definitions(assets=graph.assets, resources=resources).resolve_asset_graph()
    view = AssetGraphView(
        temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
        instance=instance,
        asset_graph=asset_graph,
    )
    resolver = CachingStaleStatusResolver(instance, asset_graph, view)
    unfresh = (StaleStatus.STALE, StaleStatus.MISSING)
    return {key: [s for s in STAGES if resolver.get_status(graph.key(s), key) in unfresh] for key in keys}


def inbox_tick(settings, instance, resources, cursor=None):
    """One inbox sensor evaluation, then what the daemon does with its result: observations
    reported, partitions added/deleted, the requested withdrawal runs executed."""
    with build_sensor_context(instance=instance, resources=resources, cursor=cursor) as context:
        result = inbox_sensor(context)
    if isinstance(result, SkipReason):
        return cursor, result
    assert isinstance(result, SensorResult)
    assert not [r for r in result.run_requests or [] if r.job_name != withdraw_job.name], "the sensor runs no stage"
    for event in result.asset_events or []:
        instance.report_runless_asset_event(event)
    for request in result.dynamic_partitions_requests or []:
        if type(request).__name__.startswith("Add"):
            instance.add_dynamic_partitions(PARTITIONS, list(request.partition_keys))
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(PARTITIONS, key)
    for request in result.run_requests or []:
        assert withdraw_job.execute_in_process(
            run_config=request.run_config, instance=instance, resources=resources
        ).success
    return result.cursor, result


def test_schedules_and_sensors_run_by_default():
    assert inbox_sensor.default_status == DefaultSensorStatus.RUNNING
    assert automation_sensor.default_status == DefaultSensorStatus.RUNNING  # Dagster's default one starts STOPPED
    assert nightly_reindex.default_status == DefaultScheduleStatus.RUNNING
    assert nightly_reindex.job_name == observe_sources_job.name  # it only observes; automation re-runs
    from rag_assets.defs.definitions import defs

    assert defs.resolve_sensor_def("ingestion_automation") is automation_sensor
    graph = defs.resolve_asset_graph()
    for stage in STAGES:
        assert graph.get(product_graph.key(stage)).automation_condition is not None, stage
        assert graph.get(product_graph.key(stage)).kinds, stage  # what it writes, shown in the UI


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_inbox_add_change_delete_runs_exactly_what_changed(env):
    settings, instance, resources, inbox = env
    automation = Automation(settings, instance, resources)
    assert automation.tick() == {}
    shutil.copy(SAMPLES_DIR / "avenant-1-contrat-MX-200.html", inbox / "avenant.html")
    shutil.copy(SAMPLES_DIR / "note-provisionnement-non-vie.md", inbox / "note.md")
    cursor, _ = inbox_tick(settings, instance, resources)
    keys = sorted(instance.get_dynamic_partitions(PARTITIONS))
    assert len(keys) == 2, "a new file in the inbox is a new partition"
    requested = automation.tick()
    assert requested == {key: STAGES for key in keys}, "…and runs, every stage, one run per document"
    assert {o.status for o in automation.run(requested)} == {"indexed"}
    assert automation.tick() == {}, "nothing runs twice"
    cursor, skipped = inbox_tick(settings, instance, resources, cursor)
    assert isinstance(skipped, SkipReason), "an unchanged file is not observed again"

    doc = inbox / "avenant.html"
    [changed_key] = [k for k in keys if k.startswith("avenant")]
    doc.write_text(doc.read_text(encoding="utf-8").replace("deux (2) mois", "quatre (4) semaines"), encoding="utf-8")
    cursor, _ = inbox_tick(settings, instance, resources, cursor)
    # the UI's stale status: the changed document's source_document, nothing of the other one
    stale = planner.stale_or_missing(instance, product_graph, keys)
    assert stale == ui_stale_status(instance, product_graph, resources, keys)
    assert stale == {key: (["source_document"] if key == changed_key else []) for key in keys}
    requested = automation.tick()
    assert requested == {changed_key: STAGES}, "a changed file re-runs exactly its partition"
    assert requested == planner.stages_to_run(instance, product_graph, [changed_key])
    [outcome] = automation.run(requested)
    assert outcome.status == "indexed"
    hits = KnowledgeBase.open(settings.store).search("préavis quatre semaines", k=2)
    assert "quatre (4) semaines" in hits[0].text
    assert automation.tick() == {}

    doc.unlink()
    cursor, result = inbox_tick(settings, instance, resources, cursor)
    assert [r.job_name for r in result.run_requests] == [withdraw_job.name], "withdrawal is a job"
    store = KnowledgeStore(settings.store)
    assert instance.get_dynamic_partitions(PARTITIONS) == [k for k in keys if k != changed_key]
    assert DenseIndex(store.lancedb_dir).count(changed_key) == 0
    assert LexicalIndex(store.tantivy_dir).count(changed_key) == 0
    assert not store.document_dir(changed_key).exists() and changed_key not in store.registry()
    assert all("MX-200" not in h.text for h in KnowledgeBase.open(settings.store).search("préavis résiliation", k=5))
    assert automation.tick() == {}
    assert isinstance(inbox_tick(settings, instance, resources, cursor)[1], SkipReason)


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_code_version_bump_requests_the_stage_and_everything_downstream(env, monkeypatch, tmp_path):
    settings, instance, resources, _ = env
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("note-provisionnement-non-vie.md", "avenant-1-contrat-MX-200.html"):
        shutil.copy(SAMPLES_DIR / name, docs / name)
    outcomes = ingest_runs.ingest([docs], settings, instance)
    assert {o.status for o in outcomes} == {"indexed"}
    keys = sorted(o.document_id for o in outcomes)
    automation = Automation(settings, instance, resources)
    assert automation.tick() == {}

    monkeypatch.setitem(versions.CODE_VERSIONS, "parents", "bumped")
    bumped = build_ingestion_graph()
    automation.use(bumped)
    # (b) the UI's stale status names parents (the root), and what runs is it and its downstream
    assert planner.stale_or_missing(instance, bumped, keys) == {key: ["parents"] for key in keys}
    assert ui_stale_status(instance, bumped, resources, keys) == {key: ["parents"] for key in keys}
    downstream = ["parents", "children", "dense_embeddings", "lexical_index", "publication"]
    assert planner.stages_to_run(instance, bumped, keys) == {key: downstream for key in keys}
    # (a) Dagster's automation evaluation requests the same, for every document, nothing upstream
    requested = automation.tick()
    assert requested == {key: downstream for key in keys}
    assert all("source_document" not in s and "docling_document" not in s for s in requested.values())
    results = automation.run(requested)
    assert {o.status for o in results} == {"indexed"}
    assert [s.stage for s in results[0].stages] == downstream
    assert planner.stale_or_missing(instance, bumped, keys) == {key: [] for key in keys}
    assert ui_stale_status(instance, bumped, resources, keys) == {key: [] for key in keys}
    assert automation.tick() == {}
    again = ingest_runs.ingest([docs], settings, instance, graph=bumped)
    assert {o.status for o in again} == {"unchanged"}


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_nightly_observation_lets_automation_rerun_a_changed_file(env, tmp_path):
    settings, instance, resources, _ = env
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("note-provisionnement-non-vie.md", "avenant-1-contrat-MX-200.html"):
        shutil.copy(SAMPLES_DIR / name, docs / name)
    outcomes = ingest_runs.ingest([docs], settings, instance)
    automation = Automation(settings, instance, resources)
    assert automation.tick() == {}
    note = docs / "note-provisionnement-non-vie.md"
    note.write_text(
        note.read_text(encoding="utf-8") + "\n\nAjout : méthode de Bornhuetter-Ferguson.\n", encoding="utf-8"
    )
    job = Definitions(assets=product_graph.assets, jobs=[observe_sources_job], resources=resources).resolve_job_def(
        nightly_reindex.job_name
    )
    assert job.execute_in_process(instance=instance).success
    [changed] = [o.document_id for o in outcomes if o.path == note]
    assert automation.tick() == {changed: STAGES}


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_a_rematerialized_input_makes_its_downstream_stale_only_with_another_data_version(env, tmp_path):
    settings, instance, resources, _ = env
    docs = tmp_path / "docs"
    docs.mkdir()
    note = docs / "note.md"
    shutil.copy(SAMPLES_DIR / "note-provisionnement-non-vie.md", note)
    [outcome] = ingest_runs.ingest([docs], settings, instance)
    key = outcome.document_id
    # source_document alone again, same bytes: a newer record of the same data version
    assert ingest_runs.materialize_document(settings, instance, key, ["source_document"], note).status == "indexed"
    assert planner.stale_or_missing(instance, product_graph, [key]) == {key: []}
    assert ui_stale_status(instance, product_graph, resources, [key]) == {key: []}
    note.write_text(note.read_text(encoding="utf-8") + "\n\nAjout : une ligne.\n", encoding="utf-8")
    record_observations(instance, source_observations(product_graph, source_versions(settings, [key])))
    assert planner.stale_or_missing(instance, product_graph, [key]) == {key: ["source_document"]}
    # source_document alone again, changed bytes: what read the older version is stale
    assert ingest_runs.materialize_document(settings, instance, key, ["source_document"], note).status == "indexed"
    assert planner.stale_or_missing(instance, product_graph, [key]) == {key: ["docling_document"]}
    assert ui_stale_status(instance, product_graph, resources, [key]) == {key: ["docling_document"]}
    assert [o.status for o in ingest_runs.ingest([docs], settings, instance)] == ["indexed"]
    assert planner.stale_or_missing(instance, product_graph, [key]) == {key: []}
