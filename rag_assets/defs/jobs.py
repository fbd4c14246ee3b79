from dagster import AssetSelection, define_asset_job, in_process_executor

from rag_assets.defs.assets import ingestion_assets
from rag_assets.defs.partitions import documents_partitions

# In-process: the embedding model loads once per run instead of once per step.
ingest_job = define_asset_job(
    "ingest_documents",
    selection=AssetSelection.assets(*ingestion_assets),
    partitions_def=documents_partitions,
    executor_def=in_process_executor,
)
