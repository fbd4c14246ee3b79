"""The job one ingest run executes and the resources it needs, built alike by the process
starting the run (rag_assets/orchestration/ingest_runs.py) and by a Celery worker rebuilding
it (rag_assets/orchestration/celery_runs.py)."""

from __future__ import annotations

from typing import Any

from dagster import Definitions, define_asset_job

from rag_assets.defs.ingestion.assets import IngestionGraph, build_ingestion_graph, product_graph
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.settings import Settings

# The event log keeps every message for the UI; the terminal only needs warnings.
QUIET_CONSOLE = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
# The name `materialize()` gives its job: the UI shows these runs as plain materializations.
RUN_JOB_NAME = "__ephemeral_asset_job__"


def graph_for(settings: Settings, graph: IngestionGraph | None = None) -> IngestionGraph:
    """The graph given, else the product's (rebuilt when another embedder is configured:
    the embedder is part of some stages' code versions)."""
    if graph is not None:
        return graph
    return (
        product_graph
        if settings.embedder == product_graph.embedder
        else build_ingestion_graph(embedder=settings.embedder)
    )


def resource_fields(settings: Settings) -> dict[str, Any]:
    """The KnowledgeStoreResource's fields for these settings (plain values: Celery workers
    rebuild the resource from them)."""
    return {
        "store": str(settings.store),
        "embedder": settings.embedder,
        "max_file_bytes": settings.max_file_bytes,
        "convert_timeout_s": settings.convert_timeout_s,
        "default_groups": list(settings.default_groups),
        "budget": settings.budget.model_dump(),
        "follow_links_inside": settings.follow_links_inside,
    }


def resources_for(settings: Settings, graph: IngestionGraph) -> dict:
    return {graph.resource_key: KnowledgeStoreResource(**resource_fields(settings))}


def stage_job(graph: IngestionGraph, stages: list[str], resources: dict, executor_def=None):
    """The job `materialize()` would build; built here so the run id is known before the run
    starts (the event listener is registered under it), and so Celery workers can rebuild it."""
    defs = Definitions(
        jobs=[
            define_asset_job(RUN_JOB_NAME, selection=[graph.key(stage) for stage in stages], executor_def=executor_def)
        ],
        assets=graph.assets,
        resources=resources,
    )
    return defs.resolve_job_def(RUN_JOB_NAME)
