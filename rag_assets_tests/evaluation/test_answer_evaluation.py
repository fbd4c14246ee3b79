"""The answer evaluation: an asset beside retrieval_evaluation on every golden set with
expected answers, one options type for the CLI, the asset and evaluate_answers, the
nightly local-model schedule, the scoring of expected figures and the run folder; then,
on the sample store built through Dagster, `golden-sample/answer_evaluation` materialized
in a real instance and printed by the CLI."""

import argparse

import polars as pl
import pytest
from dagster import (
    AssetKey,
    DefaultScheduleStatus,
    Definitions,
    RunRequest,
    SkipReason,
    build_schedule_context,
    define_asset_job,
    validate_run_config,
)

from rag_assets.commands.evaluate import add_eval_parser, answer_options
from rag_assets.defs.evaluation.answers import nightly_request
from rag_assets.defs.evaluation.assets import CORPORA, nightly_local_model_answers
from rag_assets.evaluation import answer_reporting, targets
from rag_assets.evaluation.answer_scoring import answer_head, error_row, expected_of, score_answer
from rag_assets.evaluation.answer_summary import median_interval, summarize_rows, totals
from rag_assets.evaluation.answers import AnswerEvalOptions, has_answers, select
from rag_assets.evaluation.questions import Question, load_questions
from rag_assets.store import KnowledgeStore


def _cli_args(argv):
    parser = argparse.ArgumentParser(prog="rag-assets")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(argv)


def test_golden_sets_with_answers_get_an_answer_evaluation_on_their_corpus():
    from rag_assets.defs.definitions import defs

    graph = defs.resolve_asset_graph()
    for name in targets.target_names():
        key = AssetKey([name, "answer_evaluation"])
        if not (name in targets.GOLDEN and has_answers(name)):
            assert not graph.has(key) and CORPORA[name].answers is None
            continue
        node = graph.get(key)
        assert {AssetKey([name, s]) for s in ("dense_embeddings", "lexical_index", "publication")} <= node.parent_keys
        assert node.group_name == "evaluation"
    assert graph.has(AssetKey(["golden-sample", "answer_evaluation"]))
    assert graph.has(AssetKey(["golden-insurance", "answer_evaluation"]))


def test_one_options_type_for_the_cli_the_asset_and_evaluate_answers(tmp_path):
    args = _cli_args(
        [
            "eval",
            "golden-insurance",
            "--answers",
            "--answerer",
            "gguf",
            "--subset",
            "local-nightly",
            "--eval-store",
            str(tmp_path),
        ]
    )
    options = answer_options(args, tmp_path / "runs")
    assert isinstance(options, AnswerEvalOptions)
    assert (options.answerer, options.subset, options.store) == ("gguf", "local-nightly", str(tmp_path.resolve()))
    # the asset's run config is AnswerEvalOptions: what the CLI passes is validated by Dagster as such
    corpus = CORPORA["golden-insurance"]
    job = Definitions(
        assets=corpus.assets,
        resources={corpus.resource_key: corpus.resource()},
        jobs=[define_asset_job("answers", selection=[corpus.answers.key])],
    ).resolve_job_def("answers")
    config = {"ops": {corpus.answers.op.name: {"config": options.model_dump()}}}
    assert validate_run_config(job, config)["ops"][corpus.answers.op.name]["config"] == options.model_dump()


def test_the_nightly_subset_has_twenty_questions_or_more_with_traps_of_every_kind():
    questions = load_questions(targets.GOLDEN["golden-insurance"].questions_path)
    subset = select(questions, "golden-insurance", "local-nightly")
    assert len(subset) >= 20
    assert {"out-of-corpus", "false-number", "near-miss-term"} <= {q.trap for q in subset}


def test_nightly_local_model_run_needs_a_gguf_and_the_built_corpus(tmp_path):
    assert nightly_local_model_answers.default_status == DefaultScheduleStatus.RUNNING
    assert isinstance(nightly_local_model_answers(build_schedule_context()), (RunRequest, SkipReason))
    store = tmp_path / "knowledge"
    assert "unset" in nightly_request("2026-12-01", None, store).skip_message
    assert "not found" in nightly_request("2026-12-01", str(tmp_path / "absent.gguf"), store).skip_message
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    assert "not built" in nightly_request("2026-12-01", str(gguf), store).skip_message
    document = tmp_path / "policy.md"
    document.write_text("# Police\n", encoding="utf-8")
    KnowledgeStore(store).register([document])
    request = nightly_request("2026-12-01", str(gguf), store)
    assert isinstance(request, RunRequest) and request.run_key == "local-model-answers-2026-12-01"


def _question(**fields) -> Question:
    return Question(
        **{"id": "q1", "question": "", "evidence": (), "question_type": "numeric", "content_type": "text", **fields}
    )


def test_a_scored_row_and_an_error_row_say_the_same_of_their_question():
    from rag_assets.answering.model import Answer, Route

    question = _question(question="Bonjour", answer="Bonjour.", trap="out-of-corpus")
    route = Route("direct", "greeting", "Bonjour", "Bonjour", [], 0, direct_reply="Bonjour.")
    scored = score_answer(question, Answer("a1", "Bonjour", None, route, "direct"), None, {})
    failed = error_row(question, RuntimeError("endpoint down"), 1.5)
    fields = ["qid", "split", "question", "question_type", "content_type", "trap", "expected_answer", "answerable"]
    assert list(scored)[: len(fields)] == list(failed)[: len(fields)] == fields
    assert {k: scored[k] for k in fields} == {k: failed[k] for k in fields}
    assert failed["answerable"] is False and failed["answer_correct"] is None
    assert failed["error"] == "RuntimeError: endpoint down" and failed["refused"] is True


def test_expected_figures_are_the_head_of_the_answer_without_the_false_figure():
    assert (
        answer_head("80 € par nuit et par personne (petit déjeuner inclus) ; 3 nuits")
        == "80 € par nuit et par personne"
    )
    trap = _question(
        question="La franchise inondation en zone A est-elle bien de 3 000 € ?",
        answer="non : 5 000 €",
        trap="false-number",
    )
    assert [f.describe() for f in expected_of(trap).figures] == ["5 000 €"]
    corrected = _question(
        question="Pourquoi le SCR est-il calibré à 99,9 % ?",
        answer="il est calibré à 99,5 %, pas 99,9 %",
        trap="false-number",
    )
    assert [f.describe() for f in expected_of(corrected).figures] == ["99,5 %"]
    words = _question(question="Que se passe-t-il ?", answer="réduction de l'indemnité")
    assert expected_of(words).figures == [] and expected_of(words).terms


def _row(qid, **values):
    base = {
        "qid": qid,
        "answerable": True,
        "refused": False,
        "trap": None,
        "citation_correct": True,
        "answer_correct": True,
        "n_unsupported_numbers": 0,
        "n_withheld": 0,
        "premise_flagged": False,
        "latency_s": 0.5,
        "cited_pages": [],
        "question_type": "numeric",
        "split": "dev",
    }
    return {**base, **values}


def test_summary_has_confidence_intervals_and_the_run_folder_is_written(tmp_path):
    rows = [
        _row("a", cited_pages=[3, 4]),
        _row("b", answer_correct=False, latency_s=1.5),
        _row("c", refused=True, citation_correct=None, answer_correct=False, latency_s=0.1),
        _row("t1", trap="out-of-corpus", answerable=False, refused=True, answer_correct=None),
        _row("t2", trap="false-number", premise_flagged=True, false_premise_corrected=True),
    ]
    metrics = summarize_rows(rows, resamples=1000, seed=7)
    assert metrics["refused_answerable"]["mean"] == pytest.approx(0.25) and metrics["refused_answerable"]["n"] == 4
    assert metrics["out_of_corpus_refused"]["mean"] == 1.0 and metrics["false_premise_flagged"]["mean"] == 1.0
    for cell in (metrics["answer_correct"], metrics["citation_correct"]):
        assert cell["ci_low"] <= cell["mean"] <= cell["ci_high"]
    assert metrics["latency_s"]["statistic"] == "median" and metrics["latency_s"]["mean"] == 0.5
    assert median_interval([], 1000)["n"] == 0
    summary = {
        "run_id": "r",
        "run_dir": str(tmp_path),
        "target": "golden-sample",
        "label": "golden-sample",
        "answerer": {"kind": "extractive", "description": "extractive (offline)"},
        "counts": {**totals(rows), "failed_documents": []},
        "metrics": metrics,
        "bootstrap": {"resamples": 1000, "seed": 7},
        "breakdowns": {},
    }
    answer_reporting.write_run(tmp_path, summary, rows)
    frame = pl.read_parquet(tmp_path / "per_question.parquet")  # an empty list beside a list of pages
    assert frame.height == 5 and frame["cited_pages"].to_list()[:2] == ["[3, 4]", "[]"]
    assert (tmp_path / answer_reporting.PLOTS["headline"]).stat().st_size > 0
    table = answer_reporting.text_table(summary)
    for label in (
        "citation correctness",
        "answer correctness",
        "unsupported numbers",
        "out-of-corpus refused",
        "false numbers corrected",
        "median latency (s)",
    ):
        assert label in table
    assert "5 questions: 4 answerable (1 refused), 1 out-of-corpus (1 refused)" in table


@pytest.mark.slow  # needs the sample store (built through Dagster once per session)
def test_golden_sample_answer_evaluation_through_dagster_and_the_cli(sample_kb, tmp_path, capsys):
    from rag_assets.orchestration.evaluation_runs import run_answer_evaluation

    settings, instance, _ = sample_kb
    runs = tmp_path / "runs"
    options = AnswerEvalOptions(answerer="extractive", store=str(settings.store), resamples=1000, runs_dir=str(runs))
    run = run_answer_evaluation("golden-sample", options, settings, instance, log=lambda _: None)
    assert run.success, run.message
    assert instance.get_latest_materialization_event(AssetKey(["golden-sample", "answer_evaluation"]))
    metadata = run.metadata
    assert "| citation correctness |" in metadata["scores"] and "data:image/png;base64" in metadata["plot headline"]
    assert metadata["questions"] == 56 and metadata["answerer"] == "extractive (offline)"
    # what the sample set must show: numbers from the sources only, premises caught, most traps
    # refused (the fitted gate lets the broker-commission question through: its figure is
    # reported by the runs and the README, not hidden by a rule for it)
    assert metadata["out_of_corpus_refused"] >= 0.6 and metadata["unsupported_numbers"] == 0.0
    assert metadata["citation_correct"] >= 0.9 and metadata["false_premise_flagged"] >= 0.6
    frame = pl.read_parquet(run.run_dir / "per_question.parquet")
    assert frame.height == 56 and {"citation_correct", "answer_correct", "premise_flagged", "latency_s"} <= set(
        frame.columns
    )
    t05 = frame.filter(pl.col("qid") == "t05").row(0, named=True)
    assert t05["premise_flagged"] and t05["false_premise_corrected"] and "5 000 €" in t05["answer_text"]
    args = _cli_args(["eval", "golden-sample", "--answers", "--show", "--runs-dir", str(runs)])
    assert args.func(args, settings) == 0
    out = capsys.readouterr().out
    assert "answerer: extractive (offline)" in out and "false premises flagged" in out and "[" in out


def test_stage_times_and_tokens_are_summed_up_as_medians_and_printed():
    timed = [
        _row("a", retrieval_s=1.0, prefill_s=8.0, prefill_tokens=900, generation_s=6.0, verification_s=4.0),
        _row("b", retrieval_s=3.0, prefill_s=12.0, prefill_tokens=1100, generation_s=10.0, verification_s=2.0),
        _row("c", refused=True, retrieval_s=2.0),  # refused: no model call after retrieval
    ]
    metrics = summarize_rows(timed, resamples=1000, seed=7)
    assert metrics["stage:retrieval_s"]["mean"] == 2.0 and metrics["stage:retrieval_s"]["n"] == 3
    assert metrics["stage:prefill_s"]["mean"] == 10.0 and metrics["stage:prefill_tokens"]["mean"] == 1000
    assert "stage:cached_tokens" not in metrics  # a stage no question had
    line = answer_reporting.stages_line({"metrics": metrics})
    assert line.startswith("per question, median: retrieval 2.0 s, prefill tokens 1,000, prefill 10.0 s")
    assert "generation 8.0 s" in line and "verification 3.0 s" in line
    untimed = summarize_rows([_row("a")], resamples=1000, seed=7)  # the extractive answerer times no stage
    assert answer_reporting.stages_line({"metrics": untimed}) == ""
    assert totals([_row("a", answer_retries=1), _row("b", answer_retries=0), _row("c")])["answer_retries"] == 1
