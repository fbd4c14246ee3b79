"""`rag-assets eval NAME [--answers]` through Dagster: the corpus graph first (ingest_runs.py,
as `rag-assets ingest`: one run per stale or missing document), then one run of the
evaluation asset (retrieval or answers), which only reads the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from dagster import DagsterInstance, Definitions, define_asset_job

from rag_assets.dagster_records import failure_message, plain_metadata
from rag_assets.defs.evaluation.assets import collection, corpus_for
from rag_assets.defs.ingestion.jobs import run_withdrawal
from rag_assets.defs.ingestion.stage_jobs import RUN_JOB_NAME
from rag_assets.evaluation import targets
from rag_assets.evaluation.answers import AnswerEvalOptions
from rag_assets.evaluation.evaluate import EvalOptions
from rag_assets.orchestration import ingest_runs
from rag_assets.settings import Settings

INFO_CONSOLE = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


@dataclass
class EvaluationRun:
    success: bool
    run_id: str
    run_dir: Path | None = None
    message: str = ""
    outcomes: list = field(default_factory=list)  # the corpus's ingest outcomes (none with an existing store)
    metadata: dict = field(default_factory=dict)  # the evaluation asset's materialization metadata (plain values)


def run_evaluation(
    name: str,
    options: EvalOptions,
    settings: Settings,
    instance: DagsterInstance,
    stores_root: Path | None = None,
    log: Callable[[str], None] = print,
) -> EvaluationRun:
    label = targets.label_of(name, options.queries, options.distractors)
    corpus = corpus_for(name, label, settings.embedder)
    resource = corpus.resource(stores_root, settings.embedder)
    outcomes = [] if options.store else build_corpus_store(corpus, resource.settings(), instance, log)
    return materialize(corpus, corpus.evaluation, options.model_dump(), resource, instance, outcomes)


def run_answer_evaluation(
    name: str,
    options: AnswerEvalOptions,
    settings: Settings,
    instance: DagsterInstance,
    stores_root: Path | None = None,
    log: Callable[[str], None] = print,
) -> EvaluationRun:
    """`rag-assets eval NAME --answers`: the corpus graph (unless `options.store`), then
    ``NAME/answer_evaluation``."""
    corpus = corpus_for(name, name, settings.embedder)
    if corpus.answers is None:
        return EvaluationRun(False, "", message=f"{name}: no question carries an expected answer")
    resource = corpus.resource(stores_root, settings.embedder)
    outcomes = [] if options.store else build_corpus_store(corpus, resource.settings(), instance, log)
    return materialize(corpus, corpus.answers, options.model_dump(), resource, instance, outcomes)


def build_corpus_store(
    corpus, corpus_settings: Settings, instance: DagsterInstance, log: Callable[[str], None]
) -> list:
    """Withdraw what left the collection, then run the corpus graph for every stale or
    missing document (ingest_runs.py, as `rag-assets ingest`); the ingest outcomes."""
    files, leftovers = collection(corpus, corpus_settings)
    if leftovers:
        log(f"withdrawing {len(leftovers)} document(s) no longer part of {corpus.label}: {', '.join(leftovers)}")
        run_withdrawal(instance, corpus.graph, corpus.withdraw_job, corpus_settings, leftovers)
    log(f"{corpus.label}: {len(files)} document(s) in {corpus_settings.store}")
    return ingest_runs.ingest(
        files,
        corpus_settings,
        instance,
        graph=corpus.graph,
        on_outcome=lambda o, done, total: log(
            f"[{done}/{total}] {o.status:9s} {o.path.name} {o.message.splitlines()[0] if o.message else ''}".rstrip()
        ),
    )


def materialize(corpus, evaluation, config: dict, resource, instance: DagsterInstance, outcomes: list) -> EvaluationRun:
    """One in-process run of an evaluation asset of `corpus` with its run config."""
    job = Definitions(
        assets=corpus.assets,
        resources={corpus.resource_key: resource},
        jobs=[define_asset_job(RUN_JOB_NAME, selection=[evaluation.key])],
    ).resolve_job_def(RUN_JOB_NAME)
    run_config = {**INFO_CONSOLE, "ops": {evaluation.op.name: {"config": config}}}
    result = job.execute_in_process(
        run_config=run_config,
        instance=instance,
        raise_on_error=False,
        tags={"rag_assets/source": f"cli eval {corpus.label} {evaluation.key.path[-1]}"},
    )
    if not result.success:
        return EvaluationRun(False, result.run_id, message=failure_message(result.all_events), outcomes=outcomes)
    [event] = result.asset_materializations_for_node(evaluation.op.name)
    metadata = plain_metadata(event.metadata)
    return EvaluationRun(True, result.run_id, Path(metadata["run_dir"]), outcomes=outcomes, metadata=metadata)
