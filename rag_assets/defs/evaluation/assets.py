"""Evaluation runs as Dagster assets, each over its own corpus graph.

Every evaluation target (the golden question sets and the BEIR benchmarks of
rag_assets/evaluation/targets.py) has a corpus graph made by the product's asset factory
(rag_assets/defs/ingestion/assets.py) under its own key prefix, dynamic partitions and
knowledge-store resource, and an evaluation asset downstream of its index assets:

    scifact/source_file ⇢ scifact/source_document → … → scifact/children → scifact/lexical_index
        → scifact/publication → scifact/retrieval_evaluation

The store is ``$RAG_ASSETS_EVAL_STORES/<target>/knowledge``. A UI click materializes any
of these assets against that store; no benchmark document ever lands under the product's
keys or partitions. The evaluation asset only reads the store: it never ingests. The CLI
(`rag-assets eval NAME`) registers the collection as partitions, runs the corpus graph
through the same runs module as `rag-assets ingest`, then materializes the evaluation.
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

import dataclasses
import re
import typing
from dataclasses import dataclass
from pathlib import Path

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    AssetKey,
    AssetRecordsFilter,
    AssetsDefinition,
    AutomationCondition,
    DagsterInstance,
    DagsterRunStatus,
    DataVersion,
    DefaultScheduleStatus,
    DynamicPartitionsDefinition,
    Failure,
    Field,
    MaterializeResult,
    MetadataValue,
    OpExecutionContext,
    RunsFilter,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    asset,
    in_process_executor,
    job,
    op,
    schedule,
)

from rag_assets.defs.ingestion.assets import IngestionGraph, build_ingestion_graph
from rag_assets.defs.ingestion.runs import failure_message, observe_sources, run_withdrawal
from rag_assets.defs.ingestion.jobs import build_withdraw_job
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.evaluation import provenance, targets
from rag_assets.evaluation.evaluate import EvalOptions, EvaluationError, evaluate
from rag_assets.evaluation.reporting import failure_headline, image_markdown, markdown_table
from rag_assets.index.publication import read_publication
from rag_assets.ingest import planning
from rag_assets.store import KnowledgeStore, document_key_for

GROUP = "evaluation"
INDEX_STAGES = ("dense_embeddings", "lexical_index", "publication")
EVALUATION = "retrieval_evaluation"

# The asset's run config is EvalOptions itself: its schema is generated from the dataclass
# (Dagster's Config classes are pydantic models; a generated schema keeps one declaration).
_PYTHON_TYPES = {int: int, str: str, bool: bool, float: float}


def options_schema() -> dict:
    hints = typing.get_type_hints(EvalOptions)
    return {f.name: Field(_PYTHON_TYPES[hints[f.name]], default_value=f.default, is_required=False)
            for f in dataclasses.fields(EvalOptions)}


def options_config(options: EvalOptions) -> dict:
    return dataclasses.asdict(options)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


@dataclass(frozen=True)
class Corpus:
    """One evaluation target's corpus graph, its evaluation asset and its store."""

    name: str  # the target
    label: str  # the target, or its slice (scifact@q30d150)
    graph: IngestionGraph
    evaluation: AssetsDefinition
    withdraw_job: object

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
        return [*self.graph.assets, self.evaluation]


# Re-evaluate when the corpus's indexes changed (or the evaluation's code), once nothing
# upstream is in progress: the runs of one corpus refresh are requested together, so the
# evaluation waits for the last of them.
EVALUATION_CONDITION = (
    (AutomationCondition.any_deps_updated() | AutomationCondition.code_version_changed()).since_last_handled()
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("corpus indexes updated, corpus settled")


def build_corpus(name: str, label: str | None = None, embedder: str | None = None) -> Corpus:
    label = label or name
    prefix = _safe(label.replace("@", "_"))
    graph = build_ingestion_graph(prefix=prefix, partitions=DynamicPartitionsDefinition(name=f"{prefix}_documents"),
                                  resource_key=f"knowledge_{prefix.replace('-', '_')}",
                                  group=f"corpus_{prefix.replace('-', '_')}", embedder=embedder)
    resource_key = graph.resource_key

    @asset(
        key=[prefix, EVALUATION],
        group_name=GROUP,
        deps=[AssetDep(graph.key(stage), partition_mapping=AllPartitionMapping()) for stage in INDEX_STAGES],
        code_version=provenance.EVALUATION_VERSION,
        required_resource_keys={resource_key},
        config_schema=options_schema(),
        automation_condition=EVALUATION_CONDITION if label == name else None,
        description=f"Retrieval metrics of {targets.describe(name)} per engine (bm25, dense, hybrid RRF) with 95 % "
                    "bootstrap CIs, paired tests, breakdowns and the context measure. Reads the corpus's store only.",
    )
    def retrieval_evaluation(context: AssetExecutionContext) -> MaterializeResult:
        options = EvalOptions(**context.op_execution_context.op_config)
        settings = getattr(context.resources, resource_key).settings()
        store = Path(options.store).resolve() if options.store else settings.store
        failed = failed_documents(context.instance, graph, store)
        try:
            result = evaluate(name, settings, options, log=context.log.info,
                              latest_materialization=latest_materialization(context.instance, graph),
                              failed_documents=failed)
        except (EvaluationError, FileNotFoundError) as exc:
            raise Failure(description=str(exc)) from exc
        if failed:
            context.log.warning(failure_headline(result.summary))
        return MaterializeResult(metadata=evaluation_metadata(result.summary, result.plots),
                                 data_version=DataVersion(evaluation_data_version(result.summary)))

    withdraw_job = build_withdraw_job(f"{prefix.replace('-', '_')}_withdraw_documents", resource_key)
    return Corpus(name, label, graph, retrieval_evaluation, withdraw_job)


def failed_documents(instance: DagsterInstance, graph: IngestionGraph, store: Path) -> dict[str, dict]:
    """Documents registered in the store that no publication serves: document id ->
    {"file", "reason"}, the reason being the failure of the latest failed run of that
    partition in this corpus graph."""
    knowledge = KnowledgeStore(store)
    published = read_publication(knowledge) if knowledge.root.exists() else {}
    failed = {}
    for key, path in sorted(knowledge.registry().items()):
        if key not in published:
            failed[key] = {"file": path, "reason": last_failure(instance, graph, key)}
    return failed


def last_failure(instance: DagsterInstance, graph: IngestionGraph, partition: str) -> str | None:
    """Why the latest failed run of this corpus graph on `partition` failed (its steps are
    this graph's ops: another graph may hold a partition of the same name)."""
    ours = {stage.op.name for stage in graph.stages}
    records = instance.get_run_records(RunsFilter(tags={"dagster/partition": partition},
                                                  statuses=[DagsterRunStatus.FAILURE]), limit=20)
    for record in records:
        events = [entry.dagster_event for entry in instance.all_logs(record.dagster_run.run_id)
                  if entry.dagster_event is not None]
        if any(event.step_key in ours for event in events):
            return failure_message(events)
    return None


def latest_materialization(instance: DagsterInstance, graph: IngestionGraph):
    """``(stage, partition) -> {run_id, data_version, timestamp}`` of its latest materialization."""
    def latest(stage: str, partition: str) -> dict | None:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=graph.key(stage), asset_partitions=[partition]), limit=1).records
        if not records:
            return None
        record = records[0]
        tags = record.asset_materialization.tags or {}
        return {"run_id": record.run_id, "data_version": tags.get("dagster/data_version"), "timestamp": record.timestamp}

    return latest


def evaluation_data_version(summary: dict) -> str:
    """Same code, model, index versions, dataset, retrieval configuration, options and
    failures → same data version."""
    versions = summary["versions"]
    index = {doc: stamp.get("version") for doc, stamp in versions["index"].items()}
    code = {k: v for k, v in versions["code"].items() if k != "python"}
    failed = sorted(f["document"] for f in summary["counts"].get("failed_documents") or [])
    return provenance.combined([code, versions["model"], index, versions["dataset"], summary["config"]["slice"],
                                summary["config"].get("retrieval"), summary["metrics"]["bootstrap"], failed])[:24]


def evaluation_metadata(summary: dict, plots: dict) -> dict:
    failed = summary["counts"].get("failed_documents") or []
    metadata = {
        "headline": MetadataValue.text(failure_headline(summary) or
                                       f"{summary['counts']['judged']} judged questions, every document ingested"),
        "scores": MetadataValue.md(markdown_table(summary)),
        "run_id": MetadataValue.text(summary["run_id"]),
        "run_dir": MetadataValue.path(summary["run_dir"]),
        "label": MetadataValue.text(summary["label"]),
        "judged_queries": MetadataValue.int(summary["counts"]["judged"]),
        "units_indexed": MetadataValue.int(summary["counts"]["units_indexed"]),
        "failed_documents": MetadataValue.int(len(failed)),
        "questions_on_failed_documents": MetadataValue.int(len(summary["counts"].get("questions_on_failed_documents")
                                                               or [])),
        "model": MetadataValue.text(f"{summary['versions']['model']['embedder']} @ {summary['versions']['model']['revision']}"),
        "code_version": MetadataValue.text(f"{summary['versions']['code']['git_commit']}"
                                           f"{' (dirty)' if summary['versions']['code']['git_dirty'] else ''}"),
        "dataset": MetadataValue.json(summary["versions"]["dataset"]),
        "retrieval": MetadataValue.json(summary["config"].get("retrieval") or {}),  # fusion spec and switches
        "index_versions": MetadataValue.json({doc: stamp.get("version") for doc, stamp in summary["versions"]["index"].items()}),
    }
    if failed:
        metadata["failed_documents_list"] = MetadataValue.json(failed)
    if "recall" in plots:
        metadata["recall_at_k"] = MetadataValue.md(image_markdown(plots["recall"], "recall@k per engine"))
    if "question_type" in plots:
        metadata["by_question_type"] = MetadataValue.md(image_markdown(plots["question_type"], "nDCG@10 by question type"))
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
    observe_sources(instance, corpus.graph, settings, keys)
    return files


def _slice_of(corpus: Corpus) -> tuple[int, int]:
    match = re.search(r"@q(\d+)d(\d+)$", corpus.label)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


@op(description="Writes each available benchmark's shards, registers them as its corpus's partitions and "
                "observes them; automation ingests what changed, then re-evaluates.")
def refresh_benchmark_corpora(context: OpExecutionContext) -> None:
    names = [name for name in targets.benchmark_names() if targets.available(name)]
    if not names:
        context.log.info("no benchmark data found (../shared/benchmarks is absent)")
    for name in names:
        corpus = CORPORA[name]
        settings = corpus.resource().settings()
        files = refresh_collection(context.instance, corpus, settings)
        context.log.info(f"{name}: {len(files)} shard(s) registered in {settings.store}")


@job(name="refresh_benchmarks", executor_def=in_process_executor,
     description="Refreshes the benchmark corpora (shards, partitions, observations).")
def refresh_benchmarks_job():
    refresh_benchmark_corpora()


def benchmark_run_requests(date_key: str):
    names = [name for name in targets.benchmark_names() if targets.available(name)]
    if not names:
        return SkipReason("no benchmark data found (../shared/benchmarks is absent)")
    return [RunRequest(run_key=f"benchmarks-{date_key}", tags={"rag_assets/reason": "nightly benchmark",
                                                               "rag_assets/benchmarks": ",".join(names)})]


@schedule(job=refresh_benchmarks_job, cron_schedule="30 3 * * *", execution_timezone="Europe/Paris",
          default_status=DefaultScheduleStatus.RUNNING,
          description="Refreshes every available benchmark (SciFact, PIAF dev, CACM) at 03:30; automation ingests "
                      "what changed and re-evaluates.")
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
evaluation_jobs = [refresh_benchmarks_job, *(corpus.withdraw_job for corpus in CORPORA.values())]
evaluation_schedules = [nightly_benchmarks]
