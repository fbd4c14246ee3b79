"""Ingest runs whose stages execute on Celery workers (dagster-celery), chosen by
``RAG_ASSETS_EXECUTOR=celery``.

A process orchestrates the run (the caller's, or one process per run in flight when
`ingest` has several documents to run): it submits each ready step as a Celery task to
the broker, and a worker rebuilds the job (``stage_job_for``, named in the task by
module and function) and executes the step against the Dagster instance the run was
created in. Workers therefore need that instance (a PostgreSQL one when they are on other
machines), the store's settings in their environment, and this package importable; they
are started with

    celery -A dagster_celery.app worker --pool=solo

and a ``dagster_celery_config`` module on their path naming the broker (what
``dagster-celery worker start -y`` writes). ``--pool=solo``: a conversion runs in a child
process, which Celery's default pool (daemonic processes) forbids.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from celery.exceptions import DuplicateTaskNameWarning
from dagster import (
    DagsterEvent,
    DagsterInstance,
    DagsterRunStatus,
    EventLogEntry,
    JobDefinition,
    build_reconstructable_job,
    execute_job,
)
from dagster_celery import celery_executor

from rag_assets.defs.ingestion.assets import build_ingestion_graph, product_graph
from rag_assets.defs.ingestion.stage_jobs import QUIET_CONSOLE, resource_fields, stage_job
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.orchestration.instance import open_instance
from rag_assets.settings import Settings


def stage_job_for(embedder: str, stages: list[str], resource: dict) -> JobDefinition:
    """The product's job materializing `stages`, on the Celery executor (called again by
    each worker with the same plain arguments)."""
    graph = product_graph if embedder == product_graph.embedder else build_ingestion_graph(embedder=embedder)
    return stage_job(
        graph, stages, {graph.resource_key: KnowledgeStoreResource(**resource)}, executor_def=celery_executor
    )


@dataclass
class FinishedRun:
    """What `materialize_document` reads of a run once it is over (as of an in-process result)."""

    run_id: str
    success: bool
    entries: list[EventLogEntry]

    @property
    def all_events(self) -> list[DagsterEvent]:
        return [entry.dagster_event for entry in self.entries if entry.dagster_event is not None]


def finished_run(instance: DagsterInstance, run_id: str) -> FinishedRun:
    return FinishedRun(
        run_id, instance.get_run_by_id(run_id).status == DagsterRunStatus.SUCCESS, list(instance.all_logs(run_id))
    )


def orchestrate(
    settings: Settings, stages: list[str], key: str, tags: dict[str, str], instance: DagsterInstance | None = None
) -> str:
    """One run for document `key`, its steps executed by the workers; returns its id once it
    is over. Without `instance` (in a process of its own), opens the settings' instance."""
    if instance is None:
        with open_instance(settings) as own:
            return orchestrate(settings, stages, key, tags, own)
    job = build_reconstructable_job(
        __name__,
        stage_job_for.__name__,
        reconstructable_kwargs={"embedder": settings.embedder, "stages": stages, "resource": resource_fields(settings)},
    )
    # The run config is stored with the run and shown by the UI, broker URL included: a
    # password in that URL is readable by whoever reads the runs.
    executor = {"broker": settings.celery_broker, "backend": settings.celery_backend or settings.celery_broker}
    with warnings.catch_warnings():
        # dagster-celery registers its one task body again for each step it submits; Celery
        # keeps the first (the same code) and warns each time
        warnings.simplefilter("ignore", DuplicateTaskNameWarning)
        return execute_job(
            job,
            instance,
            run_config={**QUIET_CONSOLE, "execution": {"config": executor}},
            tags={**tags, "dagster/partition": key},
            raise_on_error=False,
        ).run_id
