"""The inbox sensor: files dropped in, changed in or removed from the watched folder
become partitions, runs and withdrawals."""

from dagster import AssetKey, DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, SkipReason, sensor

from rag_assets.ingest import stages as pipeline, planning
from rag_assets.defs.ingestion.jobs import ingest_job
from rag_assets.defs.ingestion.partitions import documents_partitions
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.hashing import sha256_file
from rag_assets.settings import Settings


def evaluate_inbox(settings: Settings) -> SensorResult | SkipReason:
    settings.inbox.mkdir(parents=True, exist_ok=True)
    work = planning.plan(settings, planning.candidate_files([settings.inbox]))
    gone = planning.withdrawn(settings, settings.inbox)
    for key in gone:
        pipeline.remove_document(settings, key)  # rows in both indexes, artifacts, publication, registry
    requests = [
        # the run key names the bytes: one run per version of a file, however many ticks see it
        RunRequest(partition_key=key, run_key=f"{key}:{sha256_file(work.paths[key])}",
                   asset_selection=[AssetKey(stage) for stage in stages],
                   tags={"rag_assets/source": str(work.paths[key])})
        for key, stages in work.to_run.items()
    ]
    if not requests and not gone and not work.paths:
        return SkipReason(f"no documents in {settings.inbox}")
    return SensorResult(
        run_requests=requests,
        dynamic_partitions_requests=[
            documents_partitions.build_add_request(sorted(work.paths)),
            documents_partitions.build_delete_request(sorted(gone)),
        ],
    )


# Running by default: dropping a file in the inbox is how users expect to add it.
@sensor(job=ingest_job, minimum_interval_seconds=30, default_status=DefaultSensorStatus.RUNNING,
        description="Watches the inbox folder ($RAG_ASSETS_INBOX).")
def inbox_sensor(context: SensorEvaluationContext, knowledge: KnowledgeStoreResource):
    return evaluate_inbox(knowledge.settings())
