"""Evaluation runs as Dagster assets, each over its own corpus graph.

Every evaluation target (the golden question sets and the BEIR benchmarks of
rag_assets/evaluation/targets.py) has a corpus graph made by the product's asset factory
(rag_assets/defs/ingestion/assets.py) under its own key prefix, dynamic partitions and
knowledge-store resource, and an evaluation asset downstream of its index assets:

    scifact/source_file ⇢ scifact/source_document → … → scifact/children → scifact/lexical_index
        → scifact/publication → scifact/retrieval_evaluation

A golden set whose questions carry expected answers also gets ``<set>/answer_evaluation``
beside it, on the same corpus (rag_assets/defs/evaluation/answers.py).

The store is ``$RAG_ASSETS_EVAL_STORES/<target>/knowledge``. A UI click materializes any
of these assets against that store; no benchmark document ever lands under the product's
keys or partitions. The evaluation asset only reads the store: it never ingests. The CLI
(`rag-assets eval NAME`, rag_assets/orchestration/evaluation_runs.py) registers the
collection as partitions, runs the corpus graph as `rag-assets ingest` does, then
materializes the evaluation.
A document of the collection that failed to ingest is named in the run's headline, its
metadata and its table; the questions whose evidence lies in it count as misses.

Benchmark slices (``--queries``) are corpora of their own, built on the fly by the CLI
with the same factory (``scifact_q30d150/…``): they are not part of the code location,
so their partitions never mix with the full corpus's.

``nightly_benchmarks`` (03:30, RUNNING by default) refreshes every available benchmark's
corpus (shards, partitions, observations of the shard files); the stages' automation
conditions ingest what changed and the evaluation asset's condition re-evaluates once
the corpus has settled (nothing upstream in progress). It only acts when a Dagster daemon
runs and skips with a reason when ``../shared`` is absent.
"""

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    Config,
    DagsterInstance,
    DataVersion,
    DefaultScheduleStatus,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    OpExecutionContext,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    asset,
    in_process_executor,
    job,
    op,
    schedule,
)

from rag_assets.dagster_records import failed_documents, latest_materialization, record_observations
from rag_assets.defs.evaluation.answers import build_answer_evaluation, build_local_model_nightly
from rag_assets.defs.evaluation.specs import EVALUATION_CONDITION, GROUP, INDEX_STAGES
from rag_assets.defs.ingestion.assets import (
    IngestionGraph,
    build_ingestion_graph,
    source_observations,
    source_versions,
)
from rag_assets.defs.ingestion.jobs import build_withdraw_job, run_withdrawal
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.evaluation import provenance, targets
from rag_assets.evaluation.answers import has_answers
from rag_assets.evaluation.evaluate import EvalOptions, EvaluationError, evaluate
from rag_assets.evaluation.reporting import failure_headline, image_markdown, markdown_table
from rag_assets.ingest import planning
from rag_assets.store import KnowledgeStore, document_key_for

EVALUATION = "retrieval_evaluation"


class EvalConfig(EvalOptions, Config):
    """The evaluation asset's run config: the fields of EvalOptions, declared there once."""


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


@dataclass(frozen=True)
class Corpus:
    """One evaluation target's corpus graph, its evaluation assets and its store."""

    name: str  # the target
    label: str  # the target, or its slice (scifact@q30d150)
    graph: IngestionGraph
    evaluation: AssetsDefinition
    withdraw_job: object
    answers: AssetsDefinition | None = None  # golden sets whose questions carry expected answers

    @property
    def resource_key(self) -> str:
        return self.graph.resource_key

    @property
    def evaluation_key(self) -> AssetKey:
        return self.evaluation.key

    def store(self, stores_root: Path | None = None) -> Path:
        return (stores_root or targets.eval_stores_root()) / self.label / "knowledge"

    def resource(self, stores_root: Path | None = None, embedder: str = "") -> KnowledgeStoreResource:
        return KnowledgeStoreResource(store=str(self.store(stores_root)), embedder=embedder)

    @property
    def assets(self) -> list:
        return [*self.graph.assets, self.evaluation, *([self.answers] if self.answers is not None else [])]


def build_corpus(name: str, label: str | None = None, embedder: str | None = None) -> Corpus:
    label = label or name
    prefix = _safe(label.replace("@", "_"))
    graph = build_ingestion_graph(
        prefix=prefix,
        partitions=DynamicPartitionsDefinition(name=f"{prefix}_documents"),
        resource_key=f"knowledge_{prefix.replace('-', '_')}",
        group=f"corpus_{prefix.replace('-', '_')}",
        embedder=embedder,
    )
    resource_key = graph.resource_key

    @asset(
        key=[prefix, EVALUATION],
        group_name=GROUP,
        deps=[AssetDep(graph.key(stage), partition_mapping=AllPartitionMapping()) for stage in INDEX_STAGES],
        code_version=provenance.EVALUATION_VERSION,
        required_resource_keys={resource_key},
        automation_condition=EVALUATION_CONDITION if label == name else None,
        description=f"Retrieval metrics of {targets.describe(name)} per engine (bm25, dense, hybrid RRF) with 95 % "
        "bootstrap CIs, paired tests, breakdowns and the context measure. Reads the corpus's store only.",
    )
    def retrieval_evaluation(context: AssetExecutionContext, config: EvalConfig) -> MaterializeResult:
        settings = getattr(context.resources, resource_key).settings()
        store = Path(config.store).resolve() if config.store else settings.store
        failed = failed_documents(context.instance, graph.step_keys, store)
        try:
            result = evaluate(
                name,
                settings,
                config,
                log=context.log.info,
                latest_materialization=latest_materialization(context.instance, graph.key),
                failed_documents=failed,
            )
        except (EvaluationError, FileNotFoundError) as exc:
            raise Failure(description=str(exc)) from exc
        if failed:
            context.log.warning(failure_headline(result.summary))
        return MaterializeResult(
            metadata=evaluation_metadata(result.summary, result.plots),
            data_version=DataVersion(evaluation_data_version(result.summary)),
        )

    withdraw_job = build_withdraw_job(f"{prefix.replace('-', '_')}_withdraw_documents", resource_key)
    answers = build_answer_evaluation(name, prefix, graph) if label == name and has_answers(name) else None
    return Corpus(name, label, graph, retrieval_evaluation, withdraw_job, answers)


def evaluation_data_version(summary: dict) -> str:
    """Same code, model, index versions, dataset, retrieval configuration, options and
    failures → same data version."""
    versions = summary["versions"]
    index = {doc: stamp.get("version") for doc, stamp in versions["index"].items()}
    code = {k: v for k, v in versions["code"].items() if k != "python"}
    failed = sorted(f["document"] for f in summary["counts"].get("failed_documents") or [])
    return provenance.combined(
        [
            code,
            versions["model"],
            index,
            versions["dataset"],
            summary["config"]["slice"],
            summary["config"].get("retrieval"),
            summary["metrics"]["bootstrap"],
            failed,
        ]
    )[:24]


def evaluation_metadata(summary: dict, plots: dict) -> dict:
    failed = summary["counts"].get("failed_documents") or []
    metadata: dict[str, Any] = {
        "headline": MetadataValue.text(
            failure_headline(summary) or f"{summary['counts']['judged']} judged questions, every document ingested"
        ),
        "scores": MetadataValue.md(markdown_table(summary)),
        "run_id": MetadataValue.text(summary["run_id"]),
        "run_dir": MetadataValue.path(summary["run_dir"]),
        "label": MetadataValue.text(summary["label"]),
        "judged_queries": MetadataValue.int(summary["counts"]["judged"]),
        "units_indexed": MetadataValue.int(summary["counts"]["units_indexed"]),
        "failed_documents": MetadataValue.int(len(failed)),
        "questions_on_failed_documents": MetadataValue.int(
            len(summary["counts"].get("questions_on_failed_documents") or [])
        ),
        "model": MetadataValue.text(
            f"{summary['versions']['model']['embedder']} @ {summary['versions']['model']['revision']}"
        ),
        "code_version": MetadataValue.text(
            f"{summary['versions']['code']['git_commit']}"
            f"{' (dirty)' if summary['versions']['code']['git_dirty'] else ''}"
        ),
        "dataset": MetadataValue.json(summary["versions"]["dataset"]),
        "retrieval": MetadataValue.json(summary["config"].get("retrieval") or {}),  # fusion spec and switches
        "index_versions": MetadataValue.json(
            {doc: stamp.get("version") for doc, stamp in summary["versions"]["index"].items()}
        ),
    }
    if failed:
        metadata["failed_documents_list"] = MetadataValue.json(failed)
    if "recall" in plots:
        metadata["recall_at_k"] = MetadataValue.md(image_markdown(plots["recall"], "recall@k per engine"))
    if "question_type" in plots:
        metadata["by_question_type"] = MetadataValue.md(
            image_markdown(plots["question_type"], "nDCG@10 by question type")
        )
    # plain floats: the UI plots them across materializations
    for engine, values in summary["metrics"]["engines"].items():
        for metric in ("ndcg@10", "recall@100"):
            if metric in values and values[metric]["mean"] is not None:
                metadata[f"{engine} {metric}"] = MetadataValue.float(float(values[metric]["mean"]))
    if summary.get("context"):
        metadata["context evidence share"] = MetadataValue.float(float(summary["context"]["evidence_share"]["mean"]))
        metadata["context tokens"] = MetadataValue.float(float(summary["context"]["context_tokens"]["mean"]))
    return metadata


CORPORA: dict[str, Corpus] = {name: build_corpus(name) for name in targets.target_names()}


def corpus_for(name: str, label: str | None = None, embedder: str | None = None) -> Corpus:
    """The code location's corpus of target `name`, or a slice's corpus built on the fly."""
    corpus = CORPORA[name]
    if (label in (None, name)) and (embedder in (None, corpus.graph.embedder)):
        return corpus
    return build_corpus(name, label, embedder)


def collection(corpus: Corpus, settings) -> tuple[list[Path], list[str]]:
    """The collection's files (benchmark shards written when their bytes change) and the
    documents of its store that are no longer part of it (an older shard layout)."""
    files = targets.collection_files(corpus.name, settings.store, *_slice_of(corpus))
    leftovers = sorted(set(KnowledgeStore(settings.store).registry()) - {document_key_for(f) for f in files})
    return files, leftovers


def refresh_collection(instance: DagsterInstance, corpus: Corpus, settings) -> list[Path]:
    """Withdraw what left the collection, register its files as partitions of the corpus
    and record their observations: automation takes it from there."""
    files, leftovers = collection(corpus, settings)
    if leftovers:
        run_withdrawal(instance, corpus.graph, corpus.withdraw_job, settings, leftovers)
    keys = list(planning.register(settings, files).paths)
    known = set(instance.get_dynamic_partitions(corpus.graph.partitions.name))
    instance.add_dynamic_partitions(corpus.graph.partitions.name, [k for k in keys if k not in known])
    record_observations(instance, source_observations(corpus.graph, source_versions(settings, keys)))
    return files


def _slice_of(corpus: Corpus) -> tuple[int, int]:
    match = re.search(r"@q(\d+)d(\d+)$", corpus.label)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


@op(
    description="Writes each available benchmark's shards, registers them as its corpus's partitions and "
    "observes them; automation ingests what changed, then re-evaluates."
)
def refresh_benchmark_corpora(context: OpExecutionContext) -> None:
    names = [name for name in targets.benchmark_names() if targets.available(name)]
    if not names:
        context.log.info("no benchmark data found (../shared/benchmarks is absent)")
    for name in names:
        corpus = CORPORA[name]
        settings = corpus.resource().settings()
        files = refresh_collection(context.instance, corpus, settings)
        context.log.info(f"{name}: {len(files)} shard(s) registered in {settings.store}")


@job(
    name="refresh_benchmarks",
    executor_def=in_process_executor,
    description="Refreshes the benchmark corpora (shards, partitions, observations).",
)
def refresh_benchmarks_job():
    refresh_benchmark_corpora()


def benchmark_run_requests(date_key: str):
    names = [name for name in targets.benchmark_names() if targets.available(name)]
    if not names:
        return SkipReason("no benchmark data found (../shared/benchmarks is absent)")
    return [
        RunRequest(
            run_key=f"benchmarks-{date_key}",
            tags={"rag_assets/reason": "nightly benchmark", "rag_assets/benchmarks": ",".join(names)},
        )
    ]


@schedule(
    job=refresh_benchmarks_job,
    cron_schedule="30 3 * * *",
    execution_timezone="Europe/Paris",
    default_status=DefaultScheduleStatus.RUNNING,
    description="Refreshes every available benchmark (SciFact, PIAF dev, CACM) at 03:30; automation ingests "
    "what changed and re-evaluates.",
)
def nightly_benchmarks(context: ScheduleEvaluationContext):
    import datetime as dt

    try:
        scheduled = context.scheduled_execution_time
    except Exception:  # a context built outside a tick (tests, manual evaluation)
        scheduled = None
    return benchmark_run_requests((scheduled or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%d"))


def corpus_resources() -> dict:
    return {corpus.resource_key: corpus.resource() for corpus in CORPORA.values()}


evaluation_assets = [a for corpus in CORPORA.values() for a in corpus.assets]
local_model_job, nightly_local_model_answers = build_local_model_nightly(CORPORA["golden-insurance"].answers)
evaluation_jobs = [refresh_benchmarks_job, local_model_job, *(corpus.withdraw_job for corpus in CORPORA.values())]
evaluation_schedules = [nightly_benchmarks, nightly_local_model_answers]
