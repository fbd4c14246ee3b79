"""What Dagster recorded, read through its public API (and observations written), for the
bodies of the definitions (rag_assets.defs) and the runners driving them
(rag_assets.orchestration) alike: why a run failed and which checks stopped it, metadata as
plain values, the latest observation or materialization of an asset partition, and the
documents of a store that no publication serves, with the failure of their latest run.

Nothing here knows the project's definitions: assets are named by their keys, a graph's
steps by their keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Mapping

from dagster import (
    AssetCheckSeverity,
    AssetKey,
    AssetObservation,
    AssetRecordsFilter,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    RunsFilter,
)

from rag_assets.index.publication import read_publication
from rag_assets.store import KnowledgeStore

# Dagster's tag for the data version an observation or a materialization records (DataVersion(...)).
DATA_VERSION_TAG = "dagster/data_version"

# (storage id, tags) of an observation or materialization
Record = tuple[int, Mapping[str, str]]


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
            if (
                not evaluation.passed
                and evaluation.blocking is not False
                and evaluation.severity == AssetCheckSeverity.ERROR
            ):
                found.append((evaluation.check_name, evaluation.description or "failed"))
    return found


def failure_message(events: Iterable) -> str:
    """Why a run failed: the failed checks' own descriptions when blocking checks stopped it,
    else the step's failure description or its error message."""
    events = list(events)
    for event in events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            return step_failure_message(event, failed_checks(events))
    return "run failed"


def step_failure_message(event, checks: list[tuple[str, str]]) -> str:
    """Why the step of a STEP_FAILURE event failed, given the checks that failed in its run."""
    error = event.step_failure_data.error
    if checks and error is not None and error.cls_name == "DagsterAssetCheckFailedError":
        return "\n".join(f"{name}: {description}" for name, description in checks)
    user_error = error.cause if error and error.cause else error
    description = getattr(event.step_failure_data.user_failure_data, "description", None)
    return description or (user_error.message.strip() if user_error else "step failed")


def latest_record(
    instance: DagsterInstance, asset_key: AssetKey, partition: str, observed: bool, before: int | None = None
) -> Record | None:
    """The latest observation (`observed`: an observable source) or materialization of the
    asset's `partition` (stored before storage id `before` when given)."""
    records_filter = AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition], before_storage_id=before)
    fetch = instance.fetch_observations if observed else instance.fetch_materializations
    for record in fetch(records_filter, limit=1).records:
        event = record.asset_observation if observed else record.asset_materialization
        if event is not None:
            return record.storage_id, event.tags or {}
    return None


def record_observations(instance: DagsterInstance, observations: Iterable[AssetObservation]) -> None:
    """Report each observation whose data version differs from the last one recorded for its
    partition (an unchanged file is not observed again)."""
    for observation in observations:
        last = latest_record(instance, observation.asset_key, observation.partition, observed=True)
        if last is None or last[1].get(DATA_VERSION_TAG) != observation.tags[DATA_VERSION_TAG]:
            instance.report_runless_asset_event(observation)


def failed_documents(instance: DagsterInstance, steps: Collection[str], store: Path) -> dict[str, dict]:
    """Documents registered in the store that no publication serves: document id ->
    {"file", "reason"}, the reason being the failure of the latest failed run of that
    partition among the runs of a graph whose step keys are `steps`."""
    knowledge = KnowledgeStore(store)
    published = read_publication(knowledge) if knowledge.root.exists() else {}
    failed = {}
    for key, path in sorted(knowledge.registry().items()):
        if key not in published:
            failed[key] = {"file": path, "reason": last_failure(instance, steps, key)}
    return failed


def last_failure(instance: DagsterInstance, steps: Collection[str], partition: str) -> str | None:
    """Why the latest failed run on `partition` of the graph whose step keys are `steps`
    failed (another graph may hold a partition of the same name)."""
    records = instance.get_run_records(
        RunsFilter(tags={"dagster/partition": partition}, statuses=[DagsterRunStatus.FAILURE]), limit=20
    )
    for record in records:
        events = [
            entry.dagster_event
            for entry in instance.all_logs(record.dagster_run.run_id)
            if entry.dagster_event is not None
        ]
        if any(event.step_key in steps for event in events):
            return failure_message(events)
    return None


def latest_materialization(instance: DagsterInstance, key_of: Callable[[str], AssetKey]):
    """``(stage, partition) -> {run_id, data_version, timestamp}`` of its latest
    materialization, the stage's asset key being ``key_of(stage)``."""

    def latest(stage: str, partition: str) -> dict | None:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=key_of(stage), asset_partitions=[partition]), limit=1
        ).records
        if not records:
            return None
        record = records[0]
        tags = record.asset_materialization.tags or {}
        return {
            "run_id": record.run_id,
            "data_version": tags.get(DATA_VERSION_TAG),
            "timestamp": record.timestamp,
        }

    return latest
