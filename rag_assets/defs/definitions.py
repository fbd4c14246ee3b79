"""Dagster definitions: thin assets over the plain modules of rag_assets."""

from dagster import Definitions

from rag_assets.defs.evaluation.assets import corpus_resources, evaluation_assets, evaluation_jobs, evaluation_schedules
from rag_assets.defs.ingestion.assets import product_graph
from rag_assets.defs.ingestion.jobs import automation_sensor, ingest_job, observe_sources_job, withdraw_job
from rag_assets.defs.ingestion.schedules import nightly_reindex
from rag_assets.defs.ingestion.sensors import inbox_sensor
from rag_assets.defs.maintenance.assets import maintenance_jobs, maintenance_schedules
from rag_assets.defs.resources import KnowledgeStoreResource

defs = Definitions(
    assets=[*product_graph.assets, *evaluation_assets],
    jobs=[ingest_job, observe_sources_job, withdraw_job, *evaluation_jobs, *maintenance_jobs],
    sensors=[inbox_sensor, automation_sensor],
    schedules=[nightly_reindex, *evaluation_schedules, *maintenance_schedules],
    resources={"knowledge": KnowledgeStoreResource(), **corpus_resources()},
)
