from dagster import AssetSelection, define_asset_job, in_process_executor

from rag_assets.defs.ingestion.assets import ingestion_assets

# In-process: the embedding model loads once per run instead of once per step.
ingest_job = define_asset_job(
    "ingest_documents",
    selection=AssetSelection.assets(*ingestion_assets),
    executor_def=in_process_executor,
)
