"""What the evaluation assets of a corpus share: their group, the index stages they sit
downstream of, their automation condition, a run config schema generated from an options
dataclass, and what Dagster recorded about the corpus (documents that failed to ingest,
the latest materialization of each stage)."""

import dataclasses
import typing
from pathlib import Path

from dagster import (
    AssetRecordsFilter,
    AutomationCondition,
    DagsterInstance,
    DagsterRunStatus,
    Field,
    RunsFilter,
)

from rag_assets.defs.ingestion.assets import IngestionGraph
from rag_assets.defs.ingestion.runs import failure_message
from rag_assets.index.publication import read_publication
from rag_assets.store import KnowledgeStore

GROUP = "evaluation"
INDEX_STAGES = ("dense_embeddings", "lexical_index", "publication")

# Re-evaluate when the corpus's indexes changed (or the evaluation's code), once nothing
# upstream is in progress: the runs of one corpus refresh are requested together, so the
# evaluation waits for the last of them.
EVALUATION_CONDITION = (
    # dagster types since_last_handled's self as AutomationCondition[AssetKey | AssetCheckKey]
    (AutomationCondition.any_deps_updated() | AutomationCondition.code_version_changed()).since_last_handled()  # type: ignore[misc]
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("corpus indexes updated, corpus settled")


# An evaluation asset's run config is its options dataclass itself: the schema is generated
# from the fields (Dagster's Config classes are pydantic models; a generated schema keeps
# one declaration).
_PYTHON_TYPES = {int: int, str: str, bool: bool, float: float}


def dataclass_schema(cls) -> dict:
    hints = typing.get_type_hints(cls)
    return {
        f.name: Field(_PYTHON_TYPES[hints[f.name]], default_value=f.default, is_required=False)
        for f in dataclasses.fields(cls)
    }


def failed_documents(instance: DagsterInstance, graph: IngestionGraph, store: Path) -> dict[str, dict]:
    """Documents registered in the store that no publication serves: document id ->
    {"file", "reason"}, the reason being the failure of the latest failed run of that
    partition in this corpus graph."""
    knowledge = KnowledgeStore(store)
    published = read_publication(knowledge) if knowledge.root.exists() else {}
    failed = {}
    for key, path in sorted(knowledge.registry().items()):
        if key not in published:
            failed[key] = {"file": path, "reason": last_failure(instance, graph, key)}
    return failed


def last_failure(instance: DagsterInstance, graph: IngestionGraph, partition: str) -> str | None:
    """Why the latest failed run of this corpus graph on `partition` failed (its steps are
    this graph's ops: another graph may hold a partition of the same name)."""
    ours = {stage.op.name for stage in graph.stages}
    records = instance.get_run_records(
        RunsFilter(tags={"dagster/partition": partition}, statuses=[DagsterRunStatus.FAILURE]), limit=20
    )
    for record in records:
        events = [
            entry.dagster_event
            for entry in instance.all_logs(record.dagster_run.run_id)
            if entry.dagster_event is not None
        ]
        if any(event.step_key in ours for event in events):
            return failure_message(events)
    return None


def latest_materialization(instance: DagsterInstance, graph: IngestionGraph):
    """``(stage, partition) -> {run_id, data_version, timestamp}`` of its latest materialization."""

    def latest(stage: str, partition: str) -> dict | None:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=graph.key(stage), asset_partitions=[partition]), limit=1
        ).records
        if not records:
            return None
        record = records[0]
        tags = record.asset_materialization.tags or {}
        return {
            "run_id": record.run_id,
            "data_version": tags.get("dagster/data_version"),
            "timestamp": record.timestamp,
        }

    return latest
