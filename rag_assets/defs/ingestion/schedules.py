"""Nightly re-indexing: observe every source file; the stages' automation conditions
(evaluated by the `ingestion_automation` sensor) re-run exactly what changed."""

from dagster import DefaultScheduleStatus, ScheduleDefinition

from rag_assets.defs.ingestion.jobs import observe_sources_job

nightly_reindex = ScheduleDefinition(
    name="nightly_reindex",
    job=observe_sources_job,
    cron_schedule="0 2 * * *",
    execution_timezone="Europe/Paris",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Observes every document's file at 02:00; automation re-runs the changed ones.",
)
