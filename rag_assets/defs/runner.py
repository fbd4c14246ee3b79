"""Register source files as partitions and materialize them through Dagster, one run
per document, so a broken file fails its own run and nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from dagster import DagsterEventType, DagsterInstance, materialize

from rag_assets import pipeline
from rag_assets.defs.assets import ingestion_assets
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.settings import Settings
from rag_assets.sources import SIDECAR_SUFFIX
from rag_assets.store import KnowledgeStore


# The event log keeps every message for the UI; the terminal only needs warnings.
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@dataclass
class IngestOutcome:
    document_id: str
    path: Path
    status: str  # "indexed" | "unchanged" | "failed"
    message: str = ""
    run_id: str | None = None


def expand_paths(paths: Iterable[Path]) -> list[Path]:
    """Files as given; folders recursively (sidecar metadata files are not documents)."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files.extend(p for p in sorted(path.rglob("*")) if p.is_file() and not p.name.endswith(SIDECAR_SUFFIX)
                         and not p.name.startswith(".") and p.suffix != ".py" and p.name != "README.md")
        else:
            files.append(path)
    return files


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


def ingest(
    paths: Iterable[Path],
    settings: Settings,
    instance: DagsterInstance,
    force: bool = False,
    on_outcome: Callable[[IngestOutcome], None] | None = None,
) -> list[IngestOutcome]:
    store = KnowledgeStore(settings.store)
    keys = store.register(expand_paths(paths))
    instance.add_dynamic_partitions(documents_partitions.name, list(keys))
    resources = {"knowledge": KnowledgeStoreResource(store=str(settings.store), embedder=settings.embedder)}
    outcomes = []
    for key, path in keys.items():
        if not force and pipeline.is_up_to_date(settings, key, path):
            outcome = IngestOutcome(key, path, "unchanged")
        else:
            result = materialize(ingestion_assets, partition_key=key, instance=instance, resources=resources,
                                 raise_on_error=False, tags={"rag_assets/source": str(path)},
                                 run_config=QUIET_CONSOLE)
            if result.success:
                outcome = IngestOutcome(key, path, "indexed", run_id=result.run_id)
            else:
                outcome = IngestOutcome(key, path, "failed", _failure_message(result), result.run_id)
        outcomes.append(outcome)
        if on_outcome:
            on_outcome(outcome)
    return outcomes
