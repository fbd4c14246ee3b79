"""Jobs of the ingestion: materialize documents (UI), observe the source files, withdraw
documents (and run a withdrawal in process, as the evaluation corpora's refresh does inside
its own run), and the sensor that evaluates the stages' automation conditions."""

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    Config,
    DagsterInstance,
    DefaultSensorStatus,
    OpExecutionContext,
    define_asset_job,
    in_process_executor,
    job,
    op,
)

from rag_assets.defs.ingestion.assets import IngestionGraph, product_graph
from rag_assets.defs.ingestion.stage_jobs import QUIET_CONSOLE, resources_for
from rag_assets.ingest import stages as pipeline
from rag_assets.settings import Settings

# In-process: the embedding model loads once per run instead of once per step.
ingest_job = define_asset_job(
    "ingest_documents",
    selection=AssetSelection.assets(*product_graph.stages),
    executor_def=in_process_executor,
)

# Observing records each registered file's sha256 as the data version of its source_file
# partition; the stages' automation conditions then run what changed, nothing else.
observe_sources_job = define_asset_job(
    "observe_sources",
    selection=AssetSelection.assets(product_graph.source_key),
    executor_def=in_process_executor,
    description="Observes every registered document's file (sha256); automation re-runs what changed.",
)


class WithdrawConfig(Config):
    document_ids: list[str]


def build_withdraw_job(name: str, resource_key: str):
    """A job removing documents from the store its resource names: rows in both indexes,
    artifacts, publication entry, registration. (Their partitions are deleted by whoever
    requests it: the inbox sensor, or the evaluation's corpus refresh.)"""

    @op(
        name=f"{name}_op",
        required_resource_keys={resource_key},
        description="Withdraws the documents: both indexes, artifacts, publication, registry.",
    )
    def withdraw(context: OpExecutionContext, config: WithdrawConfig) -> None:
        settings = getattr(context.resources, resource_key).settings()
        for document_id in config.document_ids:
            pipeline.remove_document(settings, document_id)
            context.log.info(f"withdrew {document_id} from {settings.store}")

    @job(name=name, executor_def=in_process_executor, description=withdraw.description)
    def withdraw_job():
        withdraw()

    return withdraw_job


withdraw_job = build_withdraw_job("withdraw_documents", "knowledge")


def withdraw_run_config(job_def, document_ids: list[str]) -> dict:
    return {"ops": {f"{job_def.name}_op": {"config": {"document_ids": sorted(document_ids)}}}}


def run_withdrawal(
    instance: DagsterInstance, graph: IngestionGraph, job_def, settings: Settings, document_ids: list[str]
) -> bool:
    """Delete the documents' partitions, then run the withdrawal job on them (both indexes,
    artifacts, publication, registry)."""
    for key in document_ids:
        if instance.has_dynamic_partition(graph.partitions.name, key):
            instance.delete_dynamic_partition(graph.partitions.name, key)
    result = job_def.execute_in_process(
        run_config={**withdraw_run_config(job_def, document_ids), **QUIET_CONSOLE},
        instance=instance,
        resources=resources_for(settings, graph),
        raise_on_error=False,
    )
    return result.success


# Dagster's default automation sensor starts STOPPED; a stage whose input changed must be
# re-run without anyone switching it on, so this one is RUNNING by default. It evaluates
# every asset that carries an automation condition (the product's and the evaluation
# corpora's stages).
automation_sensor = AutomationConditionSensorDefinition(
    "ingestion_automation",
    target=AssetSelection.all(),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Runs the stages whose upstream data or code version changed (their automation conditions).",
)
