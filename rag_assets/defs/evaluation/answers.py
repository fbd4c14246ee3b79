"""Answers measured like retrieval, as Dagster assets: ``<set>/answer_evaluation`` for each
golden set whose questions carry expected answers, downstream of the set's corpus graph
(beside ``<set>/retrieval_evaluation``). It asks every question through the product's
`ask` with the answerer of its run config (the configured one by default: extractive when
no endpoint or GGUF is set) and only reads the corpus's store. The work is
rag_assets/evaluation/answers.py; this module is the asset, its metadata and the nightly
local-model run.

``nightly_local_model_answers`` (04:30, RUNNING by default) materializes
``golden-insurance/answer_evaluation`` with the local GGUF (``RAG_ASSETS_LLM_GGUF``) on the
fixed ``local-nightly`` subset; it skips with a reason when no GGUF is configured or the
corpus is not built.
"""

from pathlib import Path
from typing import Any

from dagster import (
    AllPartitionMapping,
    AssetDep,
    AssetExecutionContext,
    AssetsDefinition,
    Config,
    DataVersion,
    DefaultScheduleStatus,
    Failure,
    MaterializeResult,
    MetadataValue,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    asset,
    define_asset_job,
    schedule,
)

from rag_assets.dagster_records import failed_documents, latest_materialization
from rag_assets.defs.evaluation.specs import EVALUATION_CONDITION, GROUP, INDEX_STAGES
from rag_assets.defs.ingestion.assets import IngestionGraph
from rag_assets.evaluation import provenance, targets
from rag_assets.evaluation.answer_reporting import PLOTS, markdown_table
from rag_assets.evaluation.answers import AnswerEvalOptions, AnswerEvaluationError, evaluate_answers
from rag_assets.evaluation.reporting import image_markdown
from rag_assets.settings import load_settings
from rag_assets.store import KnowledgeStore

ANSWERS = "answer_evaluation"
ANSWERS_VERSION = "1"
NIGHTLY_SUBSET = "local-nightly"


class AnswerEvalConfig(AnswerEvalOptions, Config):
    """The answer evaluation asset's run config: the fields of AnswerEvalOptions, declared there once."""


def build_answer_evaluation(name: str, prefix: str, graph: IngestionGraph) -> AssetsDefinition:
    resource_key = graph.resource_key

    @asset(
        key=[prefix, ANSWERS],
        group_name=GROUP,
        deps=[AssetDep(graph.key(stage), partition_mapping=AllPartitionMapping()) for stage in INDEX_STAGES],
        code_version=ANSWERS_VERSION,
        required_resource_keys={resource_key},
        automation_condition=EVALUATION_CONDITION,
        description=f"Answers to {targets.describe(name)}: citation and answer correctness, numbers absent from "
        "the cited sources, withheld paragraphs, out-of-corpus refusals, false premises, latency, with "
        "95 % bootstrap CIs. Asks through the product's `ask`; reads the corpus's store only.",
    )
    def answer_evaluation(context: AssetExecutionContext, config: AnswerEvalConfig) -> MaterializeResult:
        settings = getattr(context.resources, resource_key).settings()
        store = Path(config.store).resolve() if config.store else settings.store
        try:
            result = evaluate_answers(
                name,
                settings,
                config,
                log=context.log.info,
                failed_documents=failed_documents(context.instance, graph.step_keys, store),
                latest_materialization=latest_materialization(context.instance, graph.key),
            )
        except AnswerEvaluationError as exc:
            raise Failure(description=str(exc)) from exc
        return MaterializeResult(
            metadata=answer_metadata(result.summary, result.plots),
            data_version=DataVersion(answer_data_version(result.summary)),
        )

    return answer_evaluation


def answer_data_version(summary: dict) -> str:
    """Same code, index versions, questions, options and answerer → same data version."""
    versions = summary["versions"]
    code = {k: v for k, v in versions["code"].items() if k != "python"}
    index = {doc: stamp.get("version") for doc, stamp in versions["index"].items()}
    return provenance.combined(
        [code, index, versions["dataset"], summary["options"], summary["answerer"]["description"]]
    )[:24]


def answer_metadata(summary: dict, plots: dict) -> dict:
    counts = summary["counts"]
    metadata: dict[str, Any] = {
        "headline": MetadataValue.text(
            f"{counts['questions']} questions answered by {summary['answerer']['description']}: "
            f"{counts['answerable_refused']}/{counts['answerable']} answerable refused, "
            f"{counts['unsupported_numbers_shown']} shown numbers absent from their cited sources, "
            f"{counts['paragraphs_withheld']} paragraphs withheld"
        ),
        "scores": MetadataValue.md(markdown_table(summary)),
        "run_id": MetadataValue.text(summary["run_id"]),
        "run_dir": MetadataValue.path(summary["run_dir"]),
        "label": MetadataValue.text(summary["label"]),
        "answerer": MetadataValue.text(summary["answerer"]["description"]),
        "questions": MetadataValue.int(counts["questions"]),
        "failed_documents": MetadataValue.int(len(counts.get("failed_documents") or [])),
        "dataset": MetadataValue.json(summary["versions"]["dataset"]),
    }
    for key, path in plots.items():
        metadata[f"plot {key}"] = MetadataValue.md(image_markdown(path, Path(PLOTS[key]).stem))
    # plain floats: the UI plots them across materializations
    for key in (
        "citation_correct",
        "answer_correct",
        "refused_answerable",
        "unsupported_numbers",
        "out_of_corpus_refused",
        "false_premise_flagged",
        "latency_s",
    ):
        cell = summary["metrics"].get(key) or {}
        if cell.get("mean") is not None:
            metadata[key] = MetadataValue.float(float(cell["mean"]))
    return metadata


def nightly_request(date_key: str, gguf: str | None, store: Path):
    """The nightly local-model run, or why it is skipped."""
    if not gguf or not Path(gguf).expanduser().is_file():
        return SkipReason(f"no local model: RAG_ASSETS_LLM_GGUF is {'unset' if not gguf else f'{gguf} (not found)'}")
    if not KnowledgeStore(store).registry():
        return SkipReason(f"golden-insurance's corpus is not built ({store}); run `rag-assets eval golden-insurance`")
    return RunRequest(
        run_key=f"local-model-answers-{date_key}",
        tags={"rag_assets/reason": "nightly local-model answers", "rag_assets/gguf": Path(gguf).name},
    )


def build_local_model_nightly(answers: AssetsDefinition, stores_root: Path | None = None):
    """The job (the answer evaluation of `answers` with the local GGUF on the fixed subset)
    and its nightly schedule."""
    job = define_asset_job(
        "local_model_answers",
        selection=[answers.key],
        config={"ops": {answers.op.name: {"config": {"answerer": "gguf", "subset": NIGHTLY_SUBSET}}}},
        description=f"Answer evaluation of {answers.key.path[0]} with the local GGUF (RAG_ASSETS_LLM_GGUF) on the "
        f"fixed '{NIGHTLY_SUBSET}' subset.",
    )
    store = (stores_root or targets.eval_stores_root()) / answers.key.path[0] / "knowledge"

    @schedule(
        job=job,
        cron_schedule="30 4 * * *",
        execution_timezone="Europe/Paris",
        default_status=DefaultScheduleStatus.RUNNING,
        description="Evaluates the answers of the local model (RAG_ASSETS_LLM_GGUF) on golden-insurance's "
        f"'{NIGHTLY_SUBSET}' subset at 04:30 (about 25 min on 2 cores); skips without a GGUF.",
    )
    def nightly_local_model_answers(context: ScheduleEvaluationContext):
        import datetime as dt

        try:
            scheduled = context.scheduled_execution_time
        except Exception:  # a context built outside a tick (tests, manual evaluation)
            scheduled = None
        return nightly_request(
            (scheduled or dt.datetime.now(dt.timezone.utc)).strftime("%Y-%m-%d"), load_settings().llm_gguf, store
        )

    return job, nightly_local_model_answers
