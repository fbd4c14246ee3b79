"""Nightly re-indexing of whatever is stale."""

from dagster import AssetKey, DefaultScheduleStatus, RunRequest, ScheduleEvaluationContext, SkipReason, schedule

from rag_assets.ingest import planning
from rag_assets.defs.ingestion.jobs import ingest_job
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.settings import Settings


def stale_run_requests(settings: Settings) -> list[RunRequest] | SkipReason:
    """A run per stale document, selecting the first outdated stage and everything
    downstream of it: a code-version bump of docling_document re-runs parents, children,
    both indexes and publication too, not just the next hop."""
    stale = planning.stale(settings)
    if not stale:
        return SkipReason("every document is up to date")
    return [
        RunRequest(partition_key=key, asset_selection=[AssetKey(stage) for stage in stages],
                   tags={"rag_assets/reason": "stale"})
        for key, stages in sorted(stale.items())
    ]


@schedule(job=ingest_job, cron_schedule="0 2 * * *", execution_timezone="Europe/Paris",
          default_status=DefaultScheduleStatus.RUNNING,
          description="Re-materializes stale documents every night at 02:00.")
def nightly_reindex(context: ScheduleEvaluationContext, knowledge: KnowledgeStoreResource):
    return stale_run_requests(knowledge.settings())
