"""Register source files as partitions and materialize them through Dagster, one run
per document, so a broken file fails its own run and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from dagster import AssetKey, DagsterEventType, DagsterInstance, materialize

from rag_assets import pipeline, planning
from rag_assets.defs.assets import ingestion_assets
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.settings import Settings


# The event log keeps every message for the UI; the terminal only needs warnings.
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@dataclass
class IngestOutcome:
    document_id: str
    path: Path
    status: str  # "indexed" | "unchanged" | "duplicate" | "failed"
    message: str = ""
    run_id: str | None = None
    warnings: list[str] = field(default_factory=list)


def open_instance(settings: Settings) -> DagsterInstance:
    settings.dagster_home.mkdir(parents=True, exist_ok=True)
    config = settings.dagster_home / "dagster.yaml"
    if not config.exists():
        config.write_text("telemetry:\n  enabled: false\n")
    return DagsterInstance.from_config(str(settings.dagster_home))


def _failure_message(result) -> str:
    for event in result.all_events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            error = event.step_failure_data.error
            user_error = error.cause if error and error.cause else error
            description = getattr(event.step_failure_data.user_failure_data, "description", None)
            return description or (user_error.message.strip() if user_error else "step failed")
    return "run failed"


def materialize_document(settings: Settings, instance: DagsterInstance, key: str, stages: list[str],
                         source: Path) -> IngestOutcome:
    """One run for one document, materializing `stages` (and their checks)."""
    resources = {"knowledge": KnowledgeStoreResource(store=str(settings.store), embedder=settings.embedder,
                                                     max_file_bytes=settings.max_file_bytes)}
    result = materialize(ingestion_assets, selection=[AssetKey(stage) for stage in stages], partition_key=key,
                         instance=instance, resources=resources, raise_on_error=False,
                         tags={"rag_assets/source": str(source)}, run_config=QUIET_CONSOLE)
    if not result.success:
        return IngestOutcome(key, source, "failed", _failure_message(result), result.run_id)
    return IngestOutcome(key, source, "indexed", run_id=result.run_id,
                         warnings=pipeline.document_warnings(settings, key))


def ingest(
    paths: Iterable[Path],
    settings: Settings,
    instance: DagsterInstance,
    force: bool = False,
    on_outcome: Callable[[IngestOutcome, int, int], None] | None = None,
) -> list[IngestOutcome]:
    """Register the files as `documents` partitions and run each new or changed one.
    `on_outcome(outcome, done, total)` is called as each document is settled."""
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
        settle(IngestOutcome(key, work.paths[key], "unchanged"))
    for key, stages in work.to_run.items():
        settle(materialize_document(settings, instance, key, stages, work.paths[key]))
    return outcomes
