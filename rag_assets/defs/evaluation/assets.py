"""Evaluation runs as Dagster assets.

``retrieval_evaluation`` is partitioned by evaluation target (the golden question sets and
the BEIR benchmarks of rag_assets/evaluation/targets.py) and sits downstream of the index
assets (``dense_embeddings``, ``lexical_index`` and the ``publication`` that makes their
rows visible), so the asset graph shows which index materializations produced which
score; the run's summary also records, per document, the Dagster run and data version of
each index asset.

A materialization (1) ingests the target's collection into its own knowledge store through
the ingestion assets (benchmark corpora as shards of ≤ 2,000 records, one partition each;
unchanged documents are skipped), (2) ranks every query with bm25, dense and hybrid (and
the protocol reference BM25 for benchmarks), (3) writes ``evaluations/runs/<run-id>/`` and
(4) reports the table, the plot and headline figures as asset metadata.

``evaluate_retrieval`` is the job; ``nightly_benchmarks`` runs it on every benchmark whose
data is present, at 03:30 (after the 02:00 re-index). It is RUNNING by default: a
benchmark that is not run every night stops being a regression check, it only acts when a
Dagster daemon runs (``dagster dev`` or a deployment), it skips with a reason when
``../shared`` is absent, and after the first night the embedding cache makes it cheap.
"""

from dagster import (
    AllPartitionMapping,
    AssetKey,
    AssetRecordsFilter,
    AssetDep,
    AssetExecutionContext,
    AssetSelection,
    Config,
    DataVersion,
    DefaultScheduleStatus,
    Failure,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    StaticPartitionsDefinition,
    asset,
    define_asset_job,
    in_process_executor,
    schedule,
)

from rag_assets.defs.ingestion.assets import ingestion_assets
from rag_assets.defs.ingestion.runs import ingest
from rag_assets.ingest.stages import remove_document
from rag_assets.store import KnowledgeStore, document_key_for
from rag_assets.evaluation import provenance, targets
from rag_assets.evaluation.reporting import image_markdown, markdown_table
from rag_assets.evaluation.evaluate import EvalOptions, EvaluationError, evaluate

GROUP = "evaluation"
INDEX_ASSETS = [a for a in ingestion_assets if a.key.to_user_string() in ("dense_embeddings", "lexical_index", "publication")]

evaluation_partitions = StaticPartitionsDefinition(targets.target_names())


class EvaluationConfig(Config):
    """Run options (defaults: the whole target)."""

    queries: int = 0  # benchmarks: evaluate a slice of this many queries (0 = all)
    distractors: int = 0  # slice: records added besides the judged ones
    store: str = ""  # evaluate this existing knowledge store as it is (no ingestion)
    resamples: int = 2000  # bootstrap resamples (≥ 1,000)
    reference: bool = True  # benchmarks: also run the protocol reference BM25
    runs_dir: str = ""  # default: $RAG_ASSETS_EVAL_RUNS or evaluations/runs
    stores_dir: str = ""  # default: $RAG_ASSETS_EVAL_STORES or data/evaluation


@asset(
    name="retrieval_evaluation",
    partitions_def=evaluation_partitions,
    group_name=GROUP,
    deps=[AssetDep(a, partition_mapping=AllPartitionMapping()) for a in INDEX_ASSETS],
    code_version=provenance.EVALUATION_VERSION,
    required_resource_keys={"knowledge"},
    description="Retrieval metrics per engine (bm25, dense, hybrid RRF) with 95 % bootstrap CIs, paired tests, "
                "breakdowns and the context measure, for one question set or benchmark.",
)
def retrieval_evaluation(context: AssetExecutionContext, config: EvaluationConfig) -> MaterializeResult:
    name = context.partition_key
    options = EvalOptions(queries=config.queries, distractors=config.distractors, store=config.store,
                          resamples=max(1000, config.resamples), reference=config.reference,
                          runs_dir=config.runs_dir, stores_dir=config.stores_dir)
    try:
        result = evaluate(name, context.resources.knowledge.settings(), collection_ingestion(context.instance, context.log.info),
                          options, log=context.log.info, latest_materialization=latest_materialization(context.instance))
    except (EvaluationError, FileNotFoundError) as exc:
        raise Failure(description=str(exc)) from exc
    summary = result.summary
    return MaterializeResult(metadata=evaluation_metadata(summary, result.plots),
                             data_version=DataVersion(evaluation_data_version(summary)))


def collection_ingestion(instance, log):
    """``(files, settings) -> outcomes``: the collection through the ingestion assets, the
    documents of its store that are no longer part of it (an older shard layout) withdrawn."""
    def ingest_collection(files, settings):
        store = KnowledgeStore(settings.store)
        for stale in set(store.registry()) - {document_key_for(p) for p in files}:
            log(f"withdrawing {stale}: no longer part of the collection")
            remove_document(settings, stale)
        return ingest(files, settings, instance,
                      on_outcome=lambda o, *_: log(f"{o.status:9s} {o.path.name} {o.message}".rstrip()))

    return ingest_collection


def latest_materialization(instance):
    """``(asset, partition) -> {run_id, data_version, timestamp}`` of its latest materialization."""
    def latest(asset: str, partition: str) -> dict | None:
        try:
            records = instance.fetch_materializations(
                AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[partition]), limit=1
            ).records
        except Exception:  # an instance without this asset
            return None
        if not records:
            return None
        record = records[0]
        tags = record.asset_materialization.tags or {}
        return {"run_id": record.run_id, "data_version": tags.get("dagster/data_version"), "timestamp": record.timestamp}

    return latest


def evaluation_data_version(summary: dict) -> str:
    """Same code, model, index versions, dataset and options → same data version."""
    versions = summary["versions"]
    index = {doc: stamp.get("version") for doc, stamp in versions["index"].items()}
    code = {k: v for k, v in versions["code"].items() if k != "python"}
    return provenance.combined([code, versions["model"], index, versions["dataset"], summary["config"]["slice"],
                                summary["metrics"]["bootstrap"]])[:24]


def evaluation_metadata(summary: dict, plots: dict) -> dict:
    metadata = {
        "scores": MetadataValue.md(markdown_table(summary)),
        "run_id": MetadataValue.text(summary["run_id"]),
        "run_dir": MetadataValue.path(summary["run_dir"]),
        "label": MetadataValue.text(summary["label"]),
        "judged_queries": MetadataValue.int(summary["counts"]["judged"]),
        "units_indexed": MetadataValue.int(summary["counts"]["units_indexed"]),
        "model": MetadataValue.text(f"{summary['versions']['model']['embedder']} @ {summary['versions']['model']['revision']}"),
        "code_version": MetadataValue.text(f"{summary['versions']['code']['git_commit']}"
                                           f"{' (dirty)' if summary['versions']['code']['git_dirty'] else ''}"),
        "dataset": MetadataValue.json(summary["versions"]["dataset"]),
        "index_versions": MetadataValue.json({doc: stamp.get("version") for doc, stamp in summary["versions"]["index"].items()}),
    }
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


evaluation_job = define_asset_job(
    "evaluate_retrieval",
    selection=AssetSelection.assets(retrieval_evaluation),
    executor_def=in_process_executor,
    description="Evaluate one question set or benchmark (ingests its collection first when needed).",
)


def benchmark_run_requests(date_key: str):
    names = [name for name in targets.benchmark_names() if targets.available(name)]
    if not names:
        return SkipReason("no benchmark data found (../shared/benchmarks is absent)")
    return [RunRequest(run_key=f"{name}-{date_key}", partition_key=name, tags={"rag_assets/reason": "nightly benchmark"})
            for name in names]


@schedule(job=evaluation_job, cron_schedule="30 3 * * *", execution_timezone="Europe/Paris",
          default_status=DefaultScheduleStatus.RUNNING,
          description="Evaluates every available benchmark (SciFact, PIAF dev, CACM) each night at 03:30.")
def nightly_benchmarks(context: ScheduleEvaluationContext):
    import datetime as dt

    try:
        scheduled = context.scheduled_execution_time
    except Exception:  # a context built outside a tick (tests, manual evaluation)
        scheduled = None
    return benchmark_run_requests((scheduled or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%d"))


evaluation_assets = [retrieval_evaluation]
evaluation_jobs = [evaluation_job]
evaluation_schedules = [nightly_benchmarks]
