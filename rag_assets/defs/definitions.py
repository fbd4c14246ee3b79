from dagster import Definitions

from rag_assets.defs.assets import ingestion_assets
from rag_assets.defs.jobs import ingest_job
from rag_assets.defs.maintenance import maintenance_jobs, maintenance_schedules
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.defs.schedules import nightly_reindex
from rag_assets.defs.sensors import inbox_sensor

defs = Definitions(
    assets=ingestion_assets,
    jobs=[ingest_job, *maintenance_jobs],
    sensors=[inbox_sensor],
    schedules=[nightly_reindex, *maintenance_schedules],
    resources={"knowledge": KnowledgeStoreResource()},
)
