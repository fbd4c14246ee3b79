"""Register source files as partitions and materialize them through Dagster, one run
per document, so a broken file fails its own run and nothing else.

Progress comes from what Dagster records: the run's events reach a listener on the
instance as they are stored (step done, materialization metadata, check evaluations), and
a document's summary is read from the materialization metadata of its stages."""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from dagster import (
    AssetCheckSeverity,
    AssetKey,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    Definitions,
    EventLogEntry,
    define_asset_job,
)

from rag_assets.ingest import stages as pipeline, planning
from rag_assets.defs.ingestion.assets import ingestion_assets
from rag_assets.defs.ingestion.partitions import documents_partitions
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.settings import Settings
from rag_assets.versions import CODE_VERSIONS

# The event log keeps every message for the UI; the terminal only needs warnings.
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
# The name `materialize()` gives its job: the UI shows these runs as plain materializations.
RUN_JOB_NAME = "__ephemeral_asset_job__"
STAGES = list(CODE_VERSIONS)  # pipeline order


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
    status: str  # "indexed" | "unchanged" | "duplicate" | "failed"
    message: str = ""
    run_id: str | None = None
    warnings: list[str] = field(default_factory=list)
    stages: list[StageReport] = field(default_factory=list)  # settled in this run, in order
    failed_checks: list[tuple[str, str]] = field(default_factory=list)  # (check, its description)
    metadata: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage -> its latest metadata


def open_instance(settings: Settings) -> DagsterInstance:
    settings.dagster_home.mkdir(parents=True, exist_ok=True)
    config = settings.dagster_home / "dagster.yaml"
    if not config.exists():
        config.write_text("telemetry:\n  enabled: false\n")
    return DagsterInstance.from_config(str(settings.dagster_home))


def plain_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata values as Python values (a MetadataValue's `.value`)."""
    return {key: getattr(value, "value", value) for key, value in metadata.items()}


def failed_checks(events: Iterable) -> list[tuple[str, str]]:
    """(check name, description) of the checks that failed and stop a run (blocking, ERROR
    severity), from the run's ASSET_CHECK_EVALUATION events."""
    found = []
    for event in events:
        if event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.asset_check_evaluation_data
            if (not evaluation.passed and evaluation.blocking is not False
                    and evaluation.severity == AssetCheckSeverity.ERROR):
                found.append((evaluation.check_name, evaluation.description or "failed"))
    return found


def failure_message(events: Iterable) -> str:
    """Why a run failed: the failed checks' own descriptions when blocking checks stopped it,
    else the step's failure description or its error message."""
    events = list(events)
    for event in events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            return _step_failure_message(event, failed_checks(events))
    return "run failed"


def _step_failure_message(event, checks: list[tuple[str, str]]) -> str:
    error = event.step_failure_data.error
    if checks and error is not None and error.cls_name == "DagsterAssetCheckFailedError":
        return "\n".join(f"{name}: {description}" for name, description in checks)
    user_error = error.cause if error and error.cause else error
    description = getattr(event.step_failure_data.user_failure_data, "description", None)
    return description or (user_error.message.strip() if user_error else "step failed")


def _failure_message(result) -> str:  # kept for callers holding an ExecuteInProcessResult
    return failure_message(result.all_events)


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
        kind, step = event.event_type, event.step_key
        if kind == DagsterEventType.STEP_START:
            self._started[step] = timestamp
        elif kind == DagsterEventType.ASSET_CHECK_EVALUATION:
            self.failed_checks.extend(failed_checks([event]))
        elif kind == DagsterEventType.ASSET_MATERIALIZATION:
            materialization = event.step_materialization_data.materialization
            self.metadata[materialization.asset_key.to_user_string()] = plain_metadata(materialization.metadata)
        elif kind in (DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE):
            started = self._started.get(step)
            seconds = timestamp - started if started is not None else None
            if kind == DagsterEventType.STEP_SUCCESS:
                report = StageReport(self.document_id, self.path, step, "done", seconds, self.metadata.get(step, {}))
            else:
                message = _step_failure_message(event, self.failed_checks)
                report = StageReport(self.document_id, self.path, step, "failed", seconds,
                                     self.metadata.get(step, {}), message)
            self.stages.append(report)
            if self.on_stage:
                self.on_stage(report)


def _job(stages: list[str], resources: dict):
    """The job `materialize()` would build; built here so the run id is known before the run
    starts (the event listener is registered under it)."""
    defs = Definitions(
        jobs=[define_asset_job(RUN_JOB_NAME, selection=[AssetKey(stage) for stage in stages])],
        assets=ingestion_assets,
        resources=resources,
    )
    return defs.resolve_job_def(RUN_JOB_NAME)


def recorded_metadata(instance: DagsterInstance, key: str, stages: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The metadata of the latest materialization of each stage for document `key`."""
    found = {}
    for stage in stages:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey(stage), asset_partitions=[key]), limit=1).records
        if records and records[0].asset_materialization is not None:
            found[stage] = plain_metadata(records[0].asset_materialization.metadata)
    return found


def materialize_document(settings: Settings, instance: DagsterInstance, key: str, stages: list[str],
                         source: Path, on_stage: Callable[[StageReport], None] | None = None) -> IngestOutcome:
    """One run for one document, materializing `stages` (and their checks); `on_stage(report)`
    is called as each stage's step succeeds or fails."""
    resources = {"knowledge": KnowledgeStoreResource(store=str(settings.store), embedder=settings.embedder,
                                                     max_file_bytes=settings.max_file_bytes,
                                                     convert_timeout_s=settings.convert_timeout_s)}
    run_id = str(uuid.uuid4())  # Dagster's own run ids are uuid4 strings
    events = RunEvents(key, source, on_stage)
    instance.add_event_listener(run_id, events)
    try:
        result = _job(stages, resources).execute_in_process(
            run_config=QUIET_CONSOLE, instance=instance, partition_key=key, raise_on_error=False,
            tags={"rag_assets/source": str(source)}, run_id=run_id)
    finally:
        stage_reports, run_metadata = events.stages, events.metadata
        events.detach()
    if not result.success:
        return IngestOutcome(key, source, "failed", failure_message(result.all_events), result.run_id,
                             stages=stage_reports, failed_checks=failed_checks(result.all_events),
                             metadata=run_metadata)
    earlier = recorded_metadata(instance, key, [s for s in STAGES if s not in stages])
    return IngestOutcome(key, source, "indexed", run_id=result.run_id,
                         warnings=pipeline.document_warnings(settings, key), stages=stage_reports,
                         metadata={**earlier, **run_metadata})


def ingest(
    paths: Iterable[Path],
    settings: Settings,
    instance: DagsterInstance,
    force: bool = False,
    on_outcome: Callable[[IngestOutcome, int, int], None] | None = None,
    on_stage: Callable[[StageReport, int, int], None] | None = None,
) -> list[IngestOutcome]:
    """Register the files as `documents` partitions and run each new or changed one.
    `on_outcome(outcome, done, total)` is called as each document is settled, and
    `on_stage(report, number, total)` as each stage of document `number` is."""
    work = planning.plan(settings, planning.candidate_files(paths), force=force)
    instance.add_dynamic_partitions(documents_partitions.name, list(work.paths))
    total = len(work.duplicates) + len(work.unchanged) + len(work.to_run)
    outcomes: list[IngestOutcome] = []

    def settle(outcome: IngestOutcome) -> None:
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome, len(outcomes), total)

    for path, owner in work.duplicates.items():
        settle(IngestOutcome(owner, path, "duplicate", f"same content as {owner}: indexed once, name recorded"))
    for key in work.unchanged:
        settle(IngestOutcome(key, work.paths[key], "unchanged", metadata=recorded_metadata(instance, key, STAGES)))
    for key, stages in work.to_run.items():
        number = len(outcomes) + 1
        report = (lambda stage_report, n=number: on_stage(stage_report, n, total)) if on_stage else None
        settle(materialize_document(settings, instance, key, stages, work.paths[key], on_stage=report))
    return outcomes
