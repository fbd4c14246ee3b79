"""Weekly housekeeping of the indexes: an op job, outside the asset lineage (it changes
how the indexes are stored, not what they hold), and its schedule."""

import datetime as dt

from dagster import (
    Config,
    DefaultScheduleStatus,
    MetadataValue,
    OpExecutionContext,
    Output,
    ScheduleDefinition,
    in_process_executor,
    job,
    op,
)

from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.index import maintenance
from rag_assets.store import KnowledgeStore


class CompactDenseConfig(Config):
    older_than_days: float = maintenance.DEFAULT_OLDER_THAN.total_seconds() / 86400
    """Files of LanceDB versions older than this are deleted (the latest version is always
    kept). 0 removes every older version: only when nothing else uses the table."""


class MergeLexicalConfig(Config):
    force: bool = True
    """Rewrite the entries into fresh segments, dropping old segments and tombstones (see
    rag_assets.index.maintenance); false: only wait for merges and garbage-collect."""


def _figures_metadata(result: dict) -> dict:
    metadata = {"seconds": result.get("seconds", 0.0)}
    if result.get("skipped"):
        metadata["skipped"] = MetadataValue.text(result["skipped"])
        return metadata
    for moment in ("before", "after"):
        for name, value in result[moment].items():
            metadata[f"{name}_{moment}"] = value
    return metadata


@op(description="LanceDB optimize(): compacts fragments, removes files of old versions.")
def compact_dense_index(
    context: OpExecutionContext, config: CompactDenseConfig, knowledge: KnowledgeStoreResource
) -> Output[dict]:
    directory = KnowledgeStore(knowledge.settings().store).lancedb_dir
    if not directory.exists():
        result = {"skipped": f"no LanceDB folder at {directory}", "seconds": 0.0}
    else:
        result = maintenance.compact_dense(directory, older_than=dt.timedelta(days=config.older_than_days))
    context.log.info(f"dense index: {result}")
    return Output(result, metadata=_figures_metadata(result))


# Same pool as the lexical_index asset: Dagster serializes the Tantivy writers, the file
# lock in LexicalIndex._writer() covers writers outside Dagster.
@op(
    description="Tantivy: compacts the entries into fresh segments, garbage-collects unused files.",
    pool="tantivy_writer",
)
def merge_lexical_index(
    context: OpExecutionContext, config: MergeLexicalConfig, knowledge: KnowledgeStoreResource
) -> Output[dict]:
    directory = KnowledgeStore(knowledge.settings().store).tantivy_dir
    if not (directory / "meta.json").exists():
        result = {"skipped": f"no Tantivy index at {directory}", "seconds": 0.0}
    else:
        result = maintenance.merge_lexical(directory, force=config.force)
    context.log.info(f"lexical index: {result}")
    return Output(result, metadata=_figures_metadata(result))


@job(
    name="maintenance",
    executor_def=in_process_executor,
    description="Index housekeeping: LanceDB compaction and old-version cleanup, Tantivy segment merge. "
    "Safe while readers search.",
)
def maintenance_job():
    compact_dense_index()
    merge_lexical_index()


# Sundays 03:00, after the nightly re-indexing (02:00).
maintenance_schedule = ScheduleDefinition(
    name="maintenance_schedule",
    job=maintenance_job,
    cron_schedule="0 3 * * 0",
    execution_timezone="Europe/Paris",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Weekly index housekeeping (Sunday 03:00).",
)

maintenance_jobs = [maintenance_job]
maintenance_schedules = [maintenance_schedule]
