from dagster import Definitions

from rag_assets.defs.ingestion.assets import ingestion_assets
from rag_assets.defs.evaluation.assets import evaluation_assets, evaluation_jobs, evaluation_schedules
from rag_assets.defs.ingestion.jobs import ingest_job
from rag_assets.defs.maintenance.assets import maintenance_jobs, maintenance_schedules
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.defs.ingestion.schedules import nightly_reindex
from rag_assets.defs.ingestion.sensors import inbox_sensor

defs = Definitions(
    assets=[*ingestion_assets, *evaluation_assets],
    jobs=[ingest_job, *evaluation_jobs, *maintenance_jobs],
    sensors=[inbox_sensor],
    schedules=[nightly_reindex, *evaluation_schedules, *maintenance_schedules],
    resources={"knowledge": KnowledgeStoreResource()},
)
