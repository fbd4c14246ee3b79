from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

from rag_assets.defs.assets import ingestion_assets
from rag_assets.defs.partitions import documents_partitions
from rag_assets.defs.resources import KnowledgeStoreResource

# In-process: the embedding model loads once per run instead of once per step.
ingest_job = define_asset_job(
    "ingest_documents",
    selection=AssetSelection.assets(*ingestion_assets),
    partitions_def=documents_partitions,
    executor_def=in_process_executor,
)

defs = Definitions(
    assets=ingestion_assets,
    jobs=[ingest_job],
    resources={"knowledge": KnowledgeStoreResource()},
)
