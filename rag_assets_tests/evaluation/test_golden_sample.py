"""The sample golden set evaluated on the sample knowledge base (built once per session by
the `sample_kb` fixture): evidence resolves, every engine is scored with CIs, the run
folder holds the summary, the per-question Parquet and the plots. Asserts pipeline
correctness, not timings."""

import polars as pl
import pytest

from rag_assets.evaluation import reporting
from rag_assets.evaluation.evaluate import EvalOptions, evaluate
from rag_assets.evaluation.questions import load_questions
from rag_assets.evaluation.targets import GOLDEN


@pytest.fixture(scope="module")
def sample_run(sample_kb, tmp_path_factory):
    settings, _, _ = sample_kb
    runs = tmp_path_factory.mktemp("runs")
    return evaluate(
        "golden-sample",
        settings,
        EvalOptions(store=str(settings.store), runs_dir=str(runs), resamples=1000),
        log=lambda _: None,
    )


def test_every_evidence_quote_resolves_to_a_parent(sample_run):
    counts = sample_run.summary["counts"]
    questions = load_questions(GOLDEN["golden-sample"].questions_path)
    assert counts["unmatched_evidence"] == []
    assert counts["judged"] == sum(q.judged for q in questions)
    assert counts["unjudged"] == [q.id for q in questions if not q.judged]  # out-of-corpus traps


def test_metrics_per_engine_with_confidence_intervals(sample_run):
    engines = sample_run.summary["metrics"]["engines"]
    assert set(engines) == {"bm25", "dense", "hybrid"}
    for values in engines.values():
        assert {"ndcg@10", "recall@5", "recall@10", "recall@20", "recall@100", "mrr@10", "hit_rate@5"} <= set(values)
        for cell in values.values():
            assert cell["ci_low"] <= cell["mean"] <= cell["ci_high"]
    # a sanity floor, not a benchmark: the sample answers are in the corpus
    assert engines["hybrid"]["hit_rate@10"]["mean"] >= 0.8
    assert set(sample_run.summary["metrics"]["paired_differences"]) == {
        "bm25 - dense",
        "bm25 - hybrid",
        "dense - hybrid",
    }
    assert sample_run.summary["compare"]["stat_test"] == "fisher"


def test_breakdowns_and_context_measure(sample_run):
    summary = sample_run.summary
    assert {"table", "text", "formula"} <= set(summary["breakdowns"]["content_type"])
    assert "numeric" in summary["breakdowns"]["question_type"]
    assert {"none", "false-number", "near-miss-term", "acronym-only"} <= set(summary["breakdowns"]["trap"])
    context = summary["context"]
    assert context["k"] == 5 and 0 < context["evidence_share"]["mean"] <= 1
    assert context["context_tokens"]["mean"] > 0


def test_context_parents_are_what_the_client_serves(sample_run, sample_kb):
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    settings, _, _ = sample_kb
    kb = KnowledgeBase.open(settings.store)
    frame = pl.read_parquet(sample_run.run_dir / reporting.PER_QUESTION)
    questions = {q.id: q for q in load_questions(GOLDEN["golden-sample"].questions_path)}
    for row in frame.filter(pl.col("engine") == "hybrid").head(12).iter_rows(named=True):
        question = questions[row["qid"]]
        served = [h.parent_id for h in kb.search(question.question, k=5, groups=list(question.groups))]
        assert list(row["context_parent_ids"]) == served, row["qid"]


def test_run_folder_holds_versions_parquet_and_plots(sample_run):
    run_dir = sample_run.run_dir
    summary = reporting.load_summary(run_dir)
    versions = summary["versions"]
    assert versions["model"]["embedder"] and versions["model"]["revision"]
    assert len(versions["index"]) == 5 and all(s["version"] for s in versions["index"].values())
    assert versions["dataset"]["questions_sha256"] and versions["code"]["stage_code_versions"]
    frame = pl.read_parquet(run_dir / reporting.PER_QUESTION)
    assert set(frame["engine"]) == {"bm25", "dense", "hybrid"}
    assert len(frame) == 3 * len(load_questions(GOLDEN["golden-sample"].questions_path))
    hybrid = frame.filter((pl.col("engine") == "hybrid") & pl.col("judged"))
    assert hybrid["evidence_share"].is_between(0, 1).all() and (hybrid["context_tokens"] > 0).all()
    for name in ("recall_at_k.png", "metrics_by_engine.png", "by_question_type.png", "by_content_type.png"):
        assert (run_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| engine |" in (run_dir / reporting.TABLE).read_text()
    assert reporting.latest_run(run_dir.parent, "golden-sample") == run_dir


def test_a_configured_reranker_is_evaluated_as_its_own_engine(sample_kb, tmp_path):
    settings, _, _ = sample_kb

    def prefers_tables(question, hits):  # a stand-in for a cross-encoder: scores in [0, 1]
        return [1.0 if "|" in hit.text else 0.0 for hit in hits]

    result = evaluate(
        "golden-sample",
        settings,
        EvalOptions(store=str(settings.store), runs_dir=str(tmp_path), resamples=1000),
        log=lambda _: None,
        reranker=prefers_tables,
    )
    assert "reranked" in result.summary["metrics"]["engines"]
    assert result.summary["config"]["reranker"] == "prefers_tables"
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    kb = KnowledgeBase.open(settings.store)
    frame = pl.read_parquet(result.run_dir / reporting.PER_QUESTION)
    top10 = {(row["engine"], row["qid"]): row["top10"] for row in frame.iter_rows(named=True)}
    for qid in ("s01", "s13", "s35"):
        top = list(top10["reranked", qid])
        has_table = ["|" in kb.parent(p)["text"] for p in top]
        assert has_table == sorted(has_table, reverse=True), qid  # tables first, as the scores say
        assert set(top) <= set(top10["hybrid", qid]) | set(top[: sum(has_table)]), qid
