"""Answers measured like retrieval: every question of a golden set asked through
the product's own `ask`, with the configured answerer (the offline extractive answerer by
default, an OpenAI-compatible endpoint, or a local GGUF), each answer scored against the
question's `answer`, `evidence` and `trap`:

* route and sub-questions, the sources cited, the gate's decision per sub-question;
* **citation correctness**: a cited source holds one of the question's evidence quotes
  (document + quote matching of evaluation/evidence.py, the same rule as retrieval qrels);
* **answer correctness**: the figures of the expected answer (its head: what comes
  before a parenthesis or a semicolon; the false figure of a false-number trap excluded)
  are in the answer (its premise notes included: they come first, with their source)
  after normalisation (answering/figures.py: "5 000 €" = "5000 €" =
  "5.000 €", "30 jours" = "un mois"); an expected answer without figures is scored by its
  key terms (half of them present, analysed like the index). An optional judge endpoint
  scores free text too, recorded as the judge's verdict, never mixed with ours;
* support verdicts of the shown paragraphs, the numbers of the shown paragraphs found in
  none of their cited sources (recounted here from the sources, not read from the
  answer's flags), the paragraphs withheld by the kill switch (counted apart);
* refusal of out-of-corpus traps, refusal of answerable questions;
* false premises (false-number and near-miss-term traps): flagged (the answer says the
  question's figure or named guarantee is contradicted or absent), and for a false number
  corrected (flagged and the right figure given); premise flags on ordinary questions are
  counted as false alarms;
* latency and tokens;
* evidence on the page: for each shown paragraph quoting a PDF source, whether the text
  pypdfium2 reads inside its highlighted boxes holds the quote, the boxes covering at most
  twice the quote's own lines (answering/highlight.py); the run keeps the highlighted pages
  of a few questions in ``evidence/``.

Means carry 95 % percentile-bootstrap CIs (evaluation/metrics.py's resampling, fixed
seed); the median latency gets its own bootstrap interval. A run is written to
``evaluations/runs/<UTC time>-<label>-answers-<answerer>/``: summary.json, per_question.parquet,
table.md and plots.

This module is the run (options, question selection, answerers); one answer is scored in
answer_scoring.py, the judge is answer_judge.py, the rows are summed up in
answer_summary.py and the run folder is written by answer_reporting.py.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict

from rag_assets.evaluation import metrics as m
from rag_assets.evaluation import provenance, reporting, targets
from rag_assets.evaluation.answer_judge import judge
from rag_assets.evaluation.answer_scoring import document_files, error_row, score_answer
from rag_assets.evaluation.answer_summary import breakdowns, summarize_rows, totals
from rag_assets.evaluation.questions import Question, load_questions
from rag_assets.evaluation.splits import in_split
from rag_assets.hashing import sha256_file
from rag_assets.settings import PROJECT_ROOT, Settings

ANSWERERS = ("configured", "extractive", "gguf")
# Fixed question subsets (ids), `--subset NAME`: data beside the question sets
SUBSETS: dict[str, dict[str, tuple[str, ...]]] = {
    name: {subset: tuple(ids) for subset, ids in subsets.items()}
    for name, subsets in json.loads((PROJECT_ROOT / "evaluations" / "subsets.json").read_text(encoding="utf-8")).items()
    if name != "about"
}
EVIDENCE_SAMPLE = 5  # questions whose highlighted evidence pages a run keeps


class AnswerEvalOptions(BaseModel):
    """The answer evaluation's options: the CLI's flags and the Dagster asset's run config
    (rag_assets/defs/evaluation/answers.py: AnswerEvalConfig)."""

    model_config = ConfigDict(extra="forbid")

    answerer: str = "configured"  # configured (settings; extractive when none) | extractive | gguf
    gguf: str = ""  # answerer=gguf: the GGUF file (default $RAG_ASSETS_LLM_GGUF)
    checks: Literal["", "auto", "model", "rules"] = ""  # "" = $RAG_ASSETS_LLM_CHECKS (answering/config.py)
    subset: str = ""  # "" = every question; a named subset (SUBSETS) or comma-separated ids
    split: str = ""  # "" = every question; "dev" (odd ids) | "test" (even ids)
    judge_base_url: str = ""  # optional judge endpoint (key: $RAG_ASSETS_EVAL_JUDGE_API_KEY)
    judge_model: str = ""
    store: str = ""  # evaluate this existing knowledge store as it is
    resamples: int = m.RESAMPLES
    seed: int = m.SEED
    runs_dir: str = ""  # default: $RAG_ASSETS_EVAL_RUNS or evaluations/runs
    run_id: str = ""  # default: <UTC time>-<label>-answers-<answerer>


@dataclass
class AnswerEvalResult:
    summary: dict
    run_dir: Path
    markdown: str
    rows: list[dict] = field(default_factory=list)
    plots: dict[str, Path] = field(default_factory=dict)


class AnswerEvaluationError(RuntimeError):
    pass


def has_answers(name: str) -> bool:
    """A golden set whose questions carry expected answers (the answer evaluation applies)."""
    target = targets.GOLDEN.get(name)
    if target is None or not target.questions_path.exists():
        return False
    return any(q.answer for q in load_questions(target.questions_path))


# ------------------------------------------------------------------------- selection


def select(questions: list[Question], name: str, subset: str = "", split: str = "") -> list[Question]:
    if subset:
        named = SUBSETS.get(name, {}).get(subset)
        ids = list(named) if named else [s.strip() for s in subset.split(",") if s.strip()]
        known = {q.id for q in questions}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise AnswerEvaluationError(f"{name}: subset {subset!r} names unknown questions {', '.join(unknown)}")
        questions = [q for q in questions if q.id in set(ids)]
    try:
        return in_split(questions, split)
    except ValueError as error:
        raise AnswerEvaluationError(str(error)) from error


# ------------------------------------------------------------------------ answerers


class _Answerer:
    """What answers: (endpoints, offline, description); a local GGUF is served for the run."""

    def __init__(self, options: AnswerEvalOptions, settings: Settings):
        self.options, self.settings = options, settings
        self.local: Any = None  # a LocalLLM once started (imported only when asked for)
        self.endpoints: list = []
        self.offline = False
        self.description = "extractive (offline)"

    def __enter__(self) -> "_Answerer":
        from rag_assets.answering.config import endpoints_from_settings

        choice = self.options.answerer or "configured"
        if choice not in ANSWERERS:
            raise AnswerEvaluationError(f"answerer must be one of {', '.join(ANSWERERS)}, not {choice!r}")
        gguf = self.options.gguf or (getattr(self.settings, "llm_gguf", None) or "")
        if choice == "extractive":
            self.offline = True
            return self
        if choice == "configured":
            self.endpoints = endpoints_from_settings(self.settings)
        if choice == "gguf" or (choice == "configured" and gguf):
            if not gguf:
                raise AnswerEvaluationError("answerer gguf needs a GGUF file (--gguf or RAG_ASSETS_LLM_GGUF)")
            from rag_assets.answering.local_llm import LocalLLM

            self.local = LocalLLM(gguf)
            self.endpoints.append(self.local.start())
        if not self.endpoints:
            self.offline = True
        else:
            self.description = " → ".join(e.label for e in self.endpoints)
        return self

    @property
    def kind(self) -> str:
        if self.offline:
            return "extractive"
        return "gguf" if self.local is not None and len(self.endpoints) == 1 else "endpoint"

    def __exit__(self, *exc) -> None:
        if self.local is not None:
            self.local.stop()


def _judge_client(options: AnswerEvalOptions):
    if not options.judge_base_url:
        return None
    from rag_assets.answering.generation import Endpoint, LLMClient

    return LLMClient(
        [
            Endpoint(
                base_url=options.judge_base_url,
                model=options.judge_model or "default",
                api_key=os.environ.get("RAG_ASSETS_EVAL_JUDGE_API_KEY"),
                name="judge",
            )
        ]
    )


# ------------------------------------------------------------------------------ run


def evaluate_answers(
    name: str,
    settings: Settings,
    options: AnswerEvalOptions | None = None,
    log: Callable[[str], None] = print,
    failed_documents: dict[str, dict] | None = None,
    latest_materialization=None,
) -> AnswerEvalResult:
    """Ask every selected question of golden set `name` through `ask` on the store
    `options.store` (else `settings.store`), score the answers and write the run."""
    from rag_assets.answering.ask import AskOptions, ask
    from rag_assets.retrieve.knowledge_base import KnowledgeBase
    from rag_assets.store import KnowledgeStore

    options = options or AnswerEvalOptions()
    if options.resamples < 1000:
        raise AnswerEvaluationError(f"bootstrap needs at least 1,000 resamples (got {options.resamples})")
    if name not in targets.GOLDEN:
        raise AnswerEvaluationError(f"{name}: answers are evaluated on golden sets only ({', '.join(targets.GOLDEN)})")
    if not has_answers(name):
        raise AnswerEvaluationError(f"{name}: no question carries an expected answer")
    if options.store:
        settings = settings.model_copy(update={"store": Path(options.store).resolve()})
    if options.checks:
        settings = settings.model_copy(update={"llm_checks": options.checks})
    if not KnowledgeStore(settings.store).registry():
        raise AnswerEvaluationError(f"{name}: no document in {settings.store}; build it first (rag-assets eval {name})")
    started = time.perf_counter()
    target = targets.GOLDEN[name]
    questions = select(load_questions(target.questions_path), name, options.subset, options.split)
    kb = KnowledgeBase.from_settings(settings)
    documents = document_files(kb)
    failed = dict(sorted((failed_documents or {}).items()))
    if not documents:  # every answer would be a refusal: a run that measures nothing
        raise AnswerEvaluationError(
            f"{name}: no document of {settings.store} is published: "
            + (
                "; ".join(f"{Path(f.get('file') or d).name}: {f.get('reason')}" for d, f in failed.items())
                or f"build it first (rag-assets eval {name})"
            )
        )
    judge_llm = _judge_client(options)
    rows: list[dict] = []
    shown: list[tuple[str, Any]] = []  # (question id, answer) whose evidence pages the run keeps
    with _Answerer(options, settings) as answerer:
        log(f"{name}: {len(questions)} questions answered by {answerer.description}")
        for number, question in enumerate(questions, start=1):
            asked = time.perf_counter()
            try:
                answer = ask(
                    kb,
                    question.question,
                    user_groups=list(question.groups) or None,
                    endpoints=answerer.endpoints,
                    offline=answerer.offline,
                    options=AskOptions(log=False, memory=False),
                    settings=settings,
                )
            except Exception as exc:  # one failure is a row, not the end of the run
                rows.append(error_row(question, exc, time.perf_counter() - asked))
                log(f"[{number}/{len(questions)}] {question.id} error: {exc}")
                continue
            judged = None
            if judge_llm is not None and question.answer:
                try:
                    judged = judge(judge_llm, question.question, question.answer, answer.text)
                except Exception as exc:
                    judged = {"verdict": None, "reason": f"judge failed: {type(exc).__name__}: {exc}", "model": None}
            row = score_answer(question, answer, kb, documents, judged)
            rows.append(row)
            if row["evidence_ok"] and len(shown) < EVIDENCE_SAMPLE:
                shown.append((question.id, answer))
            log(
                f"[{number}/{len(questions)}] {question.id} {'refused' if row['refused'] else 'answered'}"
                f" citation={_flag(row.get('citation_correct'))} answer={_flag(row.get('answer_correct'))}"
                f" premise={_flag(row.get('premise_flagged'))} unsupported={row.get('n_unsupported_numbers')}"
                f" withheld={row.get('n_withheld')} {row['latency_s']:.1f} s"
            )
        kind, description = answerer.kind, answerer.description
        local = (
            {"gguf": str(answerer.local.gguf_path), "load_seconds": answerer.local.load_seconds}
            if answerer.local is not None
            else None
        )

    label = (
        name
        if not options.subset
        else f"{name}[{options.subset if options.subset in SUBSETS.get(name, {}) else 'subset'}]"
    )
    summary = {
        **reporting.run_header(name, label, "answers", options.run_id, f"{name}-answers-{kind}", options.runs_dir),
        "seconds": round(time.perf_counter() - started, 1),
        "answerer": {
            "kind": kind,
            "description": description,
            "checks": settings.llm_checks,
            "local": local,
            "judge": {"base_url": options.judge_base_url, "model": options.judge_model}
            if options.judge_base_url
            else None,
        },
        "options": options.model_dump(),
        "versions": {
            "code": provenance.code_version(),
            "index": provenance.index_stamps(kb, latest_materialization),
            "dataset": {
                "questions_file": target.questions,
                "questions_sha256": sha256_file(target.questions_path),
                "subset": options.subset,
                "split": options.split,
                "question_ids": [q.id for q in questions],
                "documents": len(kb.document_ids()),
            },
            "store": str(settings.store),
            "embedder": settings.embedder,
        },
        "counts": {**totals(rows), "failed_documents": [{"document": d, **f} for d, f in failed.items()]},
        "metrics": summarize_rows(rows, options.resamples, options.seed),
        "bootstrap": {"resamples": options.resamples, "seed": options.seed, "confidence": m.CONFIDENCE},
        "breakdowns": breakdowns(rows, options.resamples, options.seed),
    }
    from rag_assets.evaluation import answer_reporting

    run_dir = Path(summary["run_dir"])
    pages = [
        item["path"]
        for qid, answer in shown
        for item in answer.evidence_images(run_dir / answer_reporting.EVIDENCE_DIR, prefix=qid)
        if item["path"]
    ]
    answer_reporting.write_run(run_dir, summary, rows, [str(Path(p).relative_to(run_dir)) for p in pages])
    plots = {key: run_dir / file for key, file in summary["files"]["plots"].items()}
    return AnswerEvalResult(summary, run_dir, answer_reporting.markdown_table(summary), rows, plots)


def _flag(value) -> str:
    return "–" if value is None else ("yes" if value else "no")
