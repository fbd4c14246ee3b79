"""Register source files as partitions and materialize them through Dagster, one run
per document, so a broken file fails its own run and nothing else.

What to run is read from Dagster's records: the files are observed (``source_file``'s data
version is their sha256), then the stale status the UI shows names, per document, the stale
or missing stages (planner.py); those and everything downstream of them run in one run.
An unchanged document runs nothing.

Progress comes from what Dagster records: the run's events reach a listener on the
instance as they are stored (step done, materialization metadata, check evaluations), and
a document's summary (warnings included) is read from the materialization metadata of its
stages."""

from __future__ import annotations

import multiprocessing
import sys
import uuid
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from dagster import (
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    EventLogEntry,
    RunsFilter,
)

from rag_assets.dagster_records import (
    failed_checks,
    failure_message,
    plain_metadata,
    record_observations,
    step_failure_message,
)
from rag_assets.defs.ingestion.assets import (
    REFUSED_METADATA,
    STAGES,
    IngestionGraph,
    product_graph,
    source_observations,
    source_versions,
)
from rag_assets.defs.ingestion.stage_jobs import QUIET_CONSOLE, graph_for, resources_for, stage_job
from rag_assets.errors import printable
from rag_assets.ingest import planning
from rag_assets.orchestration import planner
from rag_assets.settings import Settings
from rag_assets.store import safe_file_name


@dataclass
class StageReport:
    """One stage of one document, settled in a run: its materialization metadata (plain values)."""

    document_id: str
    path: Path
    stage: str
    status: str  # "done" | "failed"
    seconds: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    message: str = ""


@dataclass
class IngestOutcome:
    document_id: str
    path: Path
    status: str  # "indexed" | "unchanged" | "duplicate" | "failed" | "refused" (over a budget, a link)
    message: str = ""
    run_id: str | None = None
    warnings: list[str] = field(default_factory=list)
    stages: list[StageReport] = field(default_factory=list)  # settled in this run, in order
    failed_checks: list[tuple[str, str]] = field(default_factory=list)  # (check, its description)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage -> its latest metadata


class RunEvents:
    """Listener for one run's events (`DagsterInstance.add_event_listener`): Dagster calls it
    with each EventLogEntry as it stores it, in the thread executing the run, so a stage is
    reported the moment its step is done."""

    def __init__(self, document_id: str, path: Path, on_stage: Callable[[StageReport], None] | None = None):
        self.document_id, self.path, self.on_stage = document_id, path, on_stage
        self.stages: list[StageReport] = []
        self.failed_checks: list[tuple[str, str]] = []
        self.metadata: dict[str, dict[str, Any]] = {}
        self._started: dict[str, float] = {}
        self.detached = False

    def detach(self) -> None:
        """After the run: the instance keeps its listeners, so drop what this one holds."""
        self.detached, self.on_stage = True, None
        self.stages, self.failed_checks, self.metadata, self._started = [], [], {}, {}

    def __call__(self, entry: EventLogEntry) -> None:
        event = entry.dagster_event
        if event is None or self.detached:
            return
        try:
            self._handle(event, entry.timestamp)
        except Exception as exc:  # noqa: BLE001 - a progress report must never break the run
            print(f"progress report failed on {event.event_type_value}: {exc!r}", file=sys.stderr)

    def _handle(self, event, timestamp: float) -> None:
        # a prefixed asset's step is "<prefix>__<stage>": reports name the stage
        kind, step = event.event_type, (event.step_key or "").split("__")[-1]
        if kind == DagsterEventType.STEP_START:
            self._started[step] = timestamp
        elif kind == DagsterEventType.ASSET_CHECK_EVALUATION:
            self.failed_checks.extend(failed_checks([event]))
        elif kind == DagsterEventType.ASSET_MATERIALIZATION:
            materialization = event.step_materialization_data.materialization
            self.metadata[materialization.asset_key.path[-1]] = plain_metadata(materialization.metadata)
        elif kind in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE):
            started = self._started.get(step)
            seconds = timestamp - started if started is not None else None
            if kind == DagsterEventType.STEP_SUCCESS:
                report = StageReport(self.document_id, self.path, step, "done", seconds, self.metadata.get(step, {}))
            else:
                message = step_failure_message(event, self.failed_checks)
                report = StageReport(
                    self.document_id, self.path, step, "failed", seconds, self.metadata.get(step, {}), message
                )
            self.stages.append(report)
            if self.on_stage:
                self.on_stage(report)


def metadata_warnings(metadata: Mapping[str, Any]) -> list[str]:
    """The `warnings` metadata of a stage: a list, or Markdown/text with one warning per line."""
    value = metadata.get("warnings")
    if not value:
        return []
    if isinstance(value, str):
        return [line.strip().removeprefix("- ") for line in value.splitlines() if line.strip()]
    if isinstance(value, (list, tuple)):
        return [str(w) for w in value]
    return [str(value)]


def _warnings(metadata: Mapping[str, Mapping[str, Any]]) -> list[str]:
    return [w for stage in STAGES for w in metadata_warnings(metadata.get(stage, {}))]


def refused_for_budget(events: Iterable) -> bool:
    """The run's failed step was refused for a budget (its Failure names the setting)."""
    for event in events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            data = event.step_failure_data.user_failure_data
            return bool(data is not None and REFUSED_METADATA in (data.metadata or {}))
    return False


def recorded_metadata(
    instance: DagsterInstance, key: str, stages: Iterable[str], graph: IngestionGraph | None = None
) -> dict[str, dict[str, Any]]:
    """The metadata of the latest materialization of each stage for document `key`."""
    graph = graph or product_graph
    found = {}
    for stage in stages:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=graph.key(stage), asset_partitions=[key]), limit=1
        ).records
        if records and records[0].asset_materialization is not None:
            found[stage] = plain_metadata(records[0].asset_materialization.metadata)
    return found


def on_workers(settings: Settings, graph: IngestionGraph) -> bool:
    """Whether `graph`'s runs go to Celery workers: chosen by the settings, and only for the
    product's graph, the one a worker can rebuild from the settings alone (an evaluation
    corpus's graph is built by its own definitions)."""
    return settings.executor == "celery" and graph.prefix is None


def materialize_document(
    settings: Settings,
    instance: DagsterInstance,
    key: str,
    stages: list[str],
    source: Path,
    on_stage: Callable[[StageReport], None] | None = None,
    graph: IngestionGraph | None = None,
    orchestrators: Executor | None = None,
) -> IngestOutcome:
    """One run for one document, materializing `stages` (and their checks); `on_stage(report)`
    is called as each stage's step succeeds or fails. On Celery workers, the run is
    orchestrated in one of the `orchestrators` processes when given, else here."""
    graph = graph_for(settings, graph)
    resources = resources_for(settings, graph)
    events = RunEvents(key, source, on_stage)
    tags = {"rag_assets/source": str(source)}
    try:
        if on_workers(settings, graph):
            # imported only when chosen: Celery is not needed otherwise
            from rag_assets.orchestration.celery_runs import finished_run, orchestrate

            run_id = (
                orchestrators.submit(orchestrate, settings, stages, key, tags).result()
                if orchestrators
                else orchestrate(settings, stages, key, tags, instance)
            )
            # the workers stored the steps' events: read back now that the run is over
            result = finished_run(instance, run_id)
            for entry in result.entries:
                events(entry)
        else:
            run_id = str(uuid.uuid4())  # Dagster's own run ids are uuid4 strings
            instance.add_event_listener(run_id, events)
            result = stage_job(graph, stages, resources).execute_in_process(
                run_config=QUIET_CONSOLE,
                instance=instance,
                partition_key=key,
                raise_on_error=False,
                tags=tags,
                run_id=run_id,
            )
    finally:
        stage_reports, run_metadata = events.stages, events.metadata
        events.detach()
    if not result.success:
        status = "refused" if refused_for_budget(result.all_events) else "failed"
        return IngestOutcome(
            key,
            source,
            status,
            failure_message(result.all_events),
            result.run_id,
            stages=stage_reports,
            failed_checks=failed_checks(result.all_events),
            metadata=run_metadata,
        )
    earlier = recorded_metadata(instance, key, [s for s in STAGES if s not in stages], graph)
    metadata = {**earlier, **run_metadata}
    return IngestOutcome(
        key,
        source,
        "indexed",
        run_id=result.run_id,
        warnings=_warnings(metadata),
        stages=stage_reports,
        metadata=metadata,
    )


def ingest(
    paths: Iterable[Path],
    settings: Settings,
    instance: DagsterInstance,
    force: bool = False,
    on_outcome: Callable[[IngestOutcome, int, int], None] | None = None,
    on_stage: Callable[[StageReport, int, int], None] | None = None,
    graph: IngestionGraph | None = None,
) -> list[IngestOutcome]:
    """Register the files as partitions of `graph` (default: the product's `documents`),
    observe them, and run each document's stale or missing stages and what is downstream
    of them (`force`: every stage). `on_outcome(outcome, done, total)` is called as each
    document is settled, and `on_stage(report, number, total)` as each stage of document
    `number` is."""
    graph = graph_for(settings, graph)
    links: dict[Path, str] = {}  # symbolic links not followed, named by themselves
    registration = planning.register(settings, planning.candidate_files(paths, settings.follow_links_inside, links))
    keys = list(registration.paths)
    known = set(instance.get_dynamic_partitions(graph.partitions.name))
    instance.add_dynamic_partitions(graph.partitions.name, [key for key in keys if key not in known])
    record_observations(instance, source_observations(graph, source_versions(settings, keys)))
    plan = planner.plan(instance, graph, settings, keys, force)
    total = len(registration.duplicates) + len(keys) + len(links)
    outcomes: list[IngestOutcome] = []

    def settle(outcome: IngestOutcome) -> None:
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome, len(outcomes), total)

    for path, reason in links.items():
        settle(IngestOutcome(safe_file_name(path.name), path, "refused", f"{printable(path)}: {reason}"))
    for key in [k for k in keys if not plan[k]]:
        metadata = recorded_metadata(instance, key, STAGES, graph)
        settle(
            IngestOutcome(key, registration.paths[key], "unchanged", warnings=_warnings(metadata), metadata=metadata)
        )
    pending = [k for k in keys if plan[k]]

    def materialize(key: str, number: int, orchestrators: Executor | None = None) -> IngestOutcome:
        report = (lambda stage_report: on_stage(stage_report, number, total)) if on_stage else None
        return materialize_document(
            settings,
            instance,
            key,
            plan[key],
            registration.paths[key],
            on_stage=report,
            graph=graph,
            orchestrators=orchestrators,
        )

    if on_workers(settings, graph) and pending:
        # Several documents in flight, their steps on the workers. Each run is orchestrated in
        # a process of its own: Dagster sets up a run's logging with logging.config.dictConfig,
        # which deadlocks against another run logging in the same process.
        with (
            ProcessPoolExecutor(settings.celery_runs, mp_context=multiprocessing.get_context("spawn")) as processes,
            ThreadPoolExecutor(settings.celery_runs, thread_name_prefix="celery-run") as threads,
        ):
            futures = [
                threads.submit(materialize, key, len(outcomes) + n, processes) for n, key in enumerate(pending, start=1)
            ]
            for future in as_completed(futures):
                settle(future.result())
    else:
        for key in pending:
            settle(materialize(key, len(outcomes) + 1))
    # after the originals: a copy is settled as its original was
    settled = {o.document_id: o for o in outcomes if o.path == registration.paths.get(o.document_id)}
    for path, owner in registration.duplicates.items():
        settle(duplicate_outcome(instance, path, owner, settled.get(owner)))
    return outcomes


def duplicate_outcome(
    instance: DagsterInstance, path: Path, owner: str, original: IngestOutcome | None
) -> IngestOutcome:
    """A file holding the same bytes as document `owner`: indexed once when the original is,
    else refused or failed as the original was (its `original` outcome in this ingest, else
    its latest run), with the original's reason."""
    if original is not None:
        status, message = original.status, original.message
    else:
        status, message = latest_run_outcome(instance, owner)
    if status in ("failed", "refused"):
        return IngestOutcome(owner, path, status, f"same content as {owner}, which was {status}: {message}")
    return IngestOutcome(owner, path, "duplicate", f"same content as {owner}: indexed once, name recorded")


def latest_run_outcome(instance: DagsterInstance, key: str) -> tuple[str, str]:
    """("failed" or "refused", why) when document `key`'s latest run failed, else ("indexed", "")."""
    runs = instance.get_runs(RunsFilter(tags={"dagster/partition": key}), limit=1)
    if not runs or runs[0].status != DagsterRunStatus.FAILURE:
        return "indexed", ""
    events = [
        entry.dagster_event
        for entry in instance.all_logs(
            runs[0].run_id, of_type={DagsterEventType.STEP_FAILURE, DagsterEventType.ASSET_CHECK_EVALUATION}
        )
    ]
    return ("refused" if refused_for_budget(events) else "failed"), failure_message(events)


def stage_records(instance: DagsterInstance) -> list[dict[str, Any]]:
    """Every successful stage of every run the instance holds: the document (partition), the
    stage, its step's seconds (start to success) and its materialization metadata."""
    kinds = {DagsterEventType.STEP_START, DagsterEventType.STEP_SUCCESS, DagsterEventType.ASSET_MATERIALIZATION}
    found = []
    for run in instance.get_runs():
        started: dict[str, float] = {}
        metadata: dict[str, dict[str, Any]] = {}
        for entry in instance.all_logs(run.run_id, of_type=kinds):
            event, step = entry.dagster_event, (entry.dagster_event.step_key or "").split("__")[-1]
            if event.event_type == DagsterEventType.STEP_START:
                started[step] = entry.timestamp
            elif event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
                materialization = event.step_materialization_data.materialization
                metadata[materialization.asset_key.path[-1]] = plain_metadata(materialization.metadata)
            elif step in started:
                found.append(
                    {
                        "document": run.tags.get("dagster/partition"),
                        "stage": step,
                        "seconds": entry.timestamp - started[step],
                        "metadata": metadata.get(step, {}),
                    }
                )
    return found
