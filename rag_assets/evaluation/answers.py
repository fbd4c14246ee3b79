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
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rag_assets.answering.figures import Figure, figures, same_figure
from rag_assets.answering.highlight import checked_paragraphs
from rag_assets.answering.verification import check_numbers
from rag_assets.evaluation import metrics as m
from rag_assets.evaluation import provenance, reporting, targets
from rag_assets.evaluation.evidence import TextUnit, document_matches, quote_matches
from rag_assets.evaluation.questions import Question, load_questions
from rag_assets.evaluation.splits import in_split, split_of
from rag_assets.hashing import sha256_file
from rag_assets.retrieve.query import analyze, content_terms
from rag_assets.settings import PROJECT_ROOT, Settings

ANSWERERS = ("configured", "extractive", "gguf")
# Fixed question subsets (ids), `--subset NAME`: data beside the question sets
SUBSETS: dict[str, dict[str, tuple[str, ...]]] = {
    name: {subset: tuple(ids) for subset, ids in subsets.items()}
    for name, subsets in json.loads((PROJECT_ROOT / "evaluations" / "subsets.json").read_text(encoding="utf-8")).items()
    if name != "about"
}
PREMISE_TRAPS = ("false-number", "near-miss-term")
EVIDENCE_SAMPLE = 5  # questions whose highlighted evidence pages a run keeps
HEADLINE = (
    ("refused_answerable", "answerable questions refused", "lower"),
    ("citation_correct", "citation correctness (answered)", "higher"),
    ("answer_correct", "answer correctness (answerable)", "higher"),
    ("unsupported_numbers", "shown numbers absent from cited sources (per answered q.)", "lower"),
    ("withheld_paragraphs", "paragraphs withheld (per answered q.)", "info"),
    ("out_of_corpus_refused", "out-of-corpus traps refused", "higher"),
    ("false_premise_flagged", "false premises flagged", "higher"),
    ("false_premise_corrected", "false numbers corrected", "higher"),
    ("premise_false_alarms", "premise flags on ordinary questions", "lower"),
    ("supported_share", "shown paragraphs supported", "higher"),
    ("evidence_highlighted", "cited PDF quotes highlighted on their page", "higher"),
    ("latency_s", "median latency (s)", "lower"),
    ("total_tokens", "tokens per question (mean)", "info"),
)


@dataclass
class AnswerEvalOptions:
    """The answer evaluation's options: the CLI's flags and the Dagster asset's run config
    (its schema is generated from these fields)."""

    answerer: str = "configured"  # configured (settings; extractive when none) | extractive | gguf
    gguf: str = ""  # answerer=gguf: the GGUF file (default $RAG_ASSETS_LLM_GGUF)
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


# ------------------------------------------------------------------ expected answers

_HEAD_END = re.compile(r"\s\(|\s;\s|;\s|\s—\s|\s–\s|, mais\b|\. ")
_POLARITY = re.compile(r"^\s*(non|oui|no|yes|aucun|aucune)\b\s*[:,.–—-]?\s*", re.IGNORECASE)
_UNSCORED_TERMS = {"non", "oui", "aucun", "aucune", "pas", "ne", "seul", "seulement"}


def answer_head(answer: str) -> str:
    """What the expected answer asserts first: before a parenthesis, a semicolon, a dash or
    ", mais" ("80 € par nuit et par personne (petit déjeuner inclus)…" → "80 € par nuit et
    par personne")."""
    text = (answer or "").strip()
    match = _HEAD_END.search(text)
    return (text[: match.start()] if match else text).strip(" .,:")


@dataclass
class Expected:
    figures: list[Figure]
    all_figures: list[Figure]
    terms: list[str]

    @property
    def scorable(self) -> bool:
        return bool(self.figures or self.terms)


def expected_of(question: Question) -> Expected:
    answer = question.answer or ""
    head = answer_head(answer)
    body = _POLARITY.sub("", head)
    in_question = figures(question.question)

    def own(fs):
        return [f for f in fs if not (question.trap == "false-number" and any(same_figure(f, g) for g in in_question))]

    head_figures = own(figures(body))
    all_figures = own(figures(re.sub(r"\([^)]*\)", " ", answer)))
    if question.trap == "false-number" and not head_figures:  # "Non : 380 € …, mais 1520 €": the right one
        head_figures = all_figures[:1]
    terms = (
        []
        if head_figures
        else [t for t in content_terms(body, question.language or "fr") if t not in _UNSCORED_TERMS and not t.isdigit()]
    )
    return Expected(head_figures, all_figures, terms)


def figures_found(expected: list[Figure], text: str) -> list[bool]:
    found = figures(text)
    return [any(same_figure(e, f) for f in found) for e in expected]


def term_share(terms: list[str], text: str, language: str = "fr") -> float:
    if not terms:
        return float("nan")
    present = set(analyze(text, language))
    return sum(t in present for t in terms) / len(terms)


# ----------------------------------------------------------------------------- judge

JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["correct", "partial", "incorrect"]},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
JUDGE_PROMPT = (
    "Tu évalues la réponse d'un assistant documentaire d'assurance. Compare-la à la réponse attendue : "
    '"correct" si elle donne l\'essentiel de la réponse attendue (mêmes valeurs, même sens), "partial" '
    "si elle n'en donne qu'une partie, \"incorrect\" si elle la contredit, l'omet ou refuse de répondre "
    "alors qu'une réponse était attendue. Une réponse attendue qui est un refus est correcte quand "
    "l'assistant dit ne rien avoir trouvé. Réponds en JSON."
)


def judge(llm, question: str, expected: str, answer_text: str) -> dict:
    user = (
        f"Question : {question}\n\nRéponse attendue : {expected}\n\n"
        f"Réponse de l'assistant :\n{answer_text or '(aucune réponse : aucune source trouvée)'}"
    )
    result = llm.complete(
        [{"role": "system", "content": JUDGE_PROMPT}, {"role": "user", "content": user}],
        "judge",
        JUDGE_SCHEMA,
        max_tokens=200,
    )
    data = result.data if isinstance(result.data, dict) else {}
    verdict = data.get("verdict") if data.get("verdict") in ("correct", "partial", "incorrect") else None
    return {"verdict": verdict, "reason": str(data.get("reason") or "")[:500], "model": result.model}


# --------------------------------------------------------------------------- scoring


def _documents(kb) -> dict[str, tuple[str, str]]:
    return {
        d: (kb.document(d).get("original_path", ""), kb.document(d).get("file_name", "")) for d in kb.document_ids()
    }


def _holds(entry, evidence, documents) -> bool:
    path, name = documents.get(entry.document_id, ("", ""))
    if not document_matches(evidence.document, path, name):
        return False
    unit = TextUnit(
        entry.source_id, entry.document_id, "\n".join([*entry.heading_path[-1:], entry.caption or "", entry.text])
    )
    return quote_matches(evidence.quote, unit)


def score_answer(question: Question, answer, kb, documents: dict, judged: dict | None = None) -> dict:
    """One row of per_question.parquet."""
    expected = expected_of(question)
    shown = [p for p in answer.paragraphs]
    cited = answer.cited
    refused = answer.refused
    row: dict = {
        "qid": question.id,
        "split": split_of(question.id),
        "question": question.question,
        "question_type": question.question_type,
        "content_type": question.content_type,
        "trap": question.trap,
        "expected_answer": question.answer,
        "answerable": question.trap != "out-of-corpus",
        "mode": answer.mode,
        "model": answer.model,
        "route_kind": answer.route.kind,
        "intent": answer.route.intent,
        "standalone_question": answer.route.standalone_question,
        "sub_questions": [s.text for s in answer.sub_questions],
        "sub_status": [s.status for s in answer.sub_questions],
        "reformulated": any(s.reformulated for s in answer.sub_questions),
        "gate": json.dumps([getattr(s, "gate", None) or {} for s in answer.sub_questions], ensure_ascii=False),
        "refused": refused,
        "answer_text": answer.text,
        "paragraphs": len(shown),
        "cited_sources": [s.name for s in cited],
        "cited_documents": sorted({s.document_id for s in cited}),
        "cited_pages": sorted({p for s in cited for p in s.pages}),
        "alerts": list(answer.alerts),
    }
    # citations: a cited source holds an evidence quote
    if question.evidence and not refused:
        holding = [s.source_id for s in cited if any(_holds(s, e, documents) for e in question.evidence)]
        covered = [e for e in question.evidence if any(_holds(s, e, documents) for s in cited)]
        sections = {s.parent_id for s in cited}
        parents_hold = any(
            _holds(s, e, documents)
            for s in answer.sources
            if s.kind == "section" and s.parent_id in sections
            for e in question.evidence
        )
        row.update(
            citation_correct=bool(holding),
            citations_holding=holding,
            citation_precision=len(holding) / len(cited) if cited else 0.0,
            evidence_covered=len(covered) / len(question.evidence),
            cited_parent_holds_evidence=parents_hold,
        )
    else:
        row.update(
            citation_correct=None,
            citations_holding=[],
            citation_precision=None,
            evidence_covered=None,
            cited_parent_holds_evidence=None,
        )
    # answer correctness, on what the reader sees: the premises said first, then the paragraphs
    text = "\n\n".join([p.get("message", "") for p in getattr(answer, "premises", []) or []] + [answer.text])
    found = figures_found(expected.figures, text)
    found_all = figures_found(expected.all_figures, text)
    share = term_share(expected.terms, text, question.language or "fr")
    if question.trap == "out-of-corpus":
        correct = None
    elif not expected.scorable:
        correct = None
    elif refused:
        correct = False
    elif expected.figures:
        correct = all(found)
    else:
        correct = bool(share >= 0.5)
    row.update(
        expected_figures=[f.describe() for f in expected.figures],
        expected_found=[f.describe() for f, ok in zip(expected.figures, found) if ok],
        figure_recall=(sum(found_all) / len(found_all)) if found_all else None,
        expected_terms=expected.terms,
        term_share=None if np.isnan(share) else share,
        answer_correct=correct,
        answer_scored_by="figures" if expected.figures else ("terms" if expected.terms else None),
    )
    row.update(
        {
            "judge_verdict": (judged or {}).get("verdict"),
            "judge_reason": (judged or {}).get("reason"),
            "judge_model": (judged or {}).get("model"),
        }
    )
    # support and numbers of what is shown
    verdicts = [p.verdict for p in shown]
    unsupported: list[str] = []
    for paragraph in shown:
        sources = [answer.source(i) for i in paragraph.source_ids]
        missing, _ = check_numbers(paragraph.text, [s.evidence for s in sources if s is not None])
        unsupported += missing
    withheld = list(getattr(answer, "withheld", []) or [])
    row.update(
        verdicts=verdicts,
        supported_share=(verdicts.count("supported") / len(verdicts)) if verdicts else None,
        unsupported_numbers=unsupported,
        n_unsupported_numbers=len(unsupported),
        withheld=[w.get("text", "") for w in withheld],
        n_withheld=len(withheld),
        withheld_reasons=[w.get("reason", "") for w in withheld],
    )
    # premises
    premises = list(getattr(answer, "premises", []) or [])
    flagged = bool(premises)
    row.update(premise_flagged=flagged, premises=[p.get("message", "") for p in premises])
    if question.trap in PREMISE_TRAPS:
        right = all(found) if expected.figures else None
        row["false_premise_corrected"] = (
            (flagged and bool(right)) if question.trap == "false-number" and expected.figures else None
        )
    else:
        row["false_premise_corrected"] = None
    highlighted = checked_paragraphs(answer)
    row.update(evidence_checks=highlighted, evidence_ok=[bool(h["ok"]) for h in highlighted])
    usage = answer.usage or {}
    row.update(
        latency_s=float(answer.latency_s),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        total_tokens=usage.get("total_tokens"),
        llm_calls=usage.get("calls", 0),
        endpoint=answer.endpoint,
        error=None,
    )
    return row


def error_row(question: Question, exc: Exception, seconds: float) -> dict:
    return {
        "qid": question.id,
        "split": split_of(question.id),
        "question": question.question,
        "question_type": question.question_type,
        "content_type": question.content_type,
        "trap": question.trap,
        "expected_answer": question.answer,
        "answerable": question.trap != "out-of-corpus",
        "refused": True,
        "answer_text": "",
        "latency_s": seconds,
        "error": f"{type(exc).__name__}: {exc}",
        "citation_correct": None,
        "answer_correct": False if question.trap != "out-of-corpus" else None,
        "premise_flagged": False,
        "n_unsupported_numbers": 0,
        "n_withheld": 0,
    }


# --------------------------------------------------------------------------- summary


def _values(rows: list[dict], key: str, where: Callable[[dict], bool] = lambda r: True) -> np.ndarray:
    picked = [r.get(key) for r in rows if where(r) and r.get(key) is not None]
    return np.asarray([float(v) for v in picked], dtype=np.float64)


def _mean(values: np.ndarray, resamples: int, seed: int) -> dict:
    return m.interval(values, m.bootstrap_counts(len(values), resamples, seed)).to_dict()


def median_interval(values: np.ndarray, resamples: int = m.RESAMPLES, seed: int = m.SEED) -> dict:
    """Median with a percentile-bootstrap CI over the same resampling as the means."""
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if n == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "n": 0, "statistic": "median"}
    counts = m.bootstrap_counts(n, resamples, seed).astype(int)
    medians = np.array([np.median(np.repeat(values, row)) for row in counts])
    alpha = (1 - m.CONFIDENCE) / 2
    low, high = np.quantile(medians, [alpha, 1 - alpha])
    return {
        "mean": float(np.median(values)),
        "ci_low": float(low),
        "ci_high": float(high),
        "n": n,
        "statistic": "median",
    }


def summarize_rows(rows: list[dict], resamples: int = m.RESAMPLES, seed: int = m.SEED) -> dict:
    answered = lambda r: not r.get("refused")  # noqa: E731
    out: dict = {}
    out["refused_answerable"] = _mean(_values(rows, "refused", lambda r: bool(r.get("answerable"))), resamples, seed)
    out["citation_correct"] = _mean(_values(rows, "citation_correct", answered), resamples, seed)
    out["citation_correct_all"] = _mean(
        np.asarray([float(bool(r.get("citation_correct"))) for r in rows if r.get("answerable")], dtype=np.float64),
        resamples,
        seed,
    )
    out["answer_correct"] = _mean(_values(rows, "answer_correct", lambda r: bool(r.get("answerable"))), resamples, seed)
    out["answer_correct_answered"] = _mean(_values(rows, "answer_correct", answered), resamples, seed)
    out["figure_recall"] = _mean(_values(rows, "figure_recall", answered), resamples, seed)
    out["unsupported_numbers"] = _mean(_values(rows, "n_unsupported_numbers", answered), resamples, seed)
    out["questions_with_unsupported_numbers"] = _mean(
        np.asarray([float((r.get("n_unsupported_numbers") or 0) > 0) for r in rows if answered(r)]), resamples, seed
    )
    out["withheld_paragraphs"] = _mean(_values(rows, "n_withheld", answered), resamples, seed)
    out["out_of_corpus_refused"] = _mean(
        _values(rows, "refused", lambda r: r.get("trap") == "out-of-corpus"), resamples, seed
    )
    out["false_premise_flagged"] = _mean(
        _values(rows, "premise_flagged", lambda r: r.get("trap") in PREMISE_TRAPS), resamples, seed
    )
    for trap in PREMISE_TRAPS:
        out[f"false_premise_flagged:{trap}"] = _mean(
            _values(rows, "premise_flagged", lambda r, t=trap: r.get("trap") == t),  # type: ignore[misc]  # a lambda's default
            resamples,
            seed,
        )
    out["false_premise_corrected"] = _mean(_values(rows, "false_premise_corrected"), resamples, seed)
    out["premise_false_alarms"] = _mean(_values(rows, "premise_flagged", lambda r: not r.get("trap")), resamples, seed)
    out["supported_share"] = _mean(_values(rows, "supported_share", answered), resamples, seed)
    # per cited PDF passage, pooled over the questions
    out["evidence_highlighted"] = _mean(
        np.asarray([float(ok) for r in rows for ok in r.get("evidence_ok") or []], dtype=np.float64), resamples, seed
    )
    out["latency_s"] = median_interval(_values(rows, "latency_s"), resamples, seed)
    out["latency_mean_s"] = _mean(_values(rows, "latency_s"), resamples, seed)
    out["total_tokens"] = _mean(_values(rows, "total_tokens"), resamples, seed)
    if any(r.get("judge_verdict") for r in rows):
        out["judge_correct"] = _mean(
            np.asarray([float(r["judge_verdict"] == "correct") for r in rows if r.get("judge_verdict")]),
            resamples,
            seed,
        )
    return out


def totals(rows: list[dict]) -> dict:
    answerable = [r for r in rows if r.get("answerable")]
    traps = [r for r in rows if r.get("trap") == "out-of-corpus"]
    premises = [r for r in rows if r.get("trap") in PREMISE_TRAPS]
    return {
        "questions": len(rows),
        "answerable": len(answerable),
        "answerable_refused": sum(bool(r.get("refused")) for r in answerable),
        "answered": sum(not r.get("refused") for r in rows),
        "out_of_corpus": len(traps),
        "out_of_corpus_refused": sum(bool(r.get("refused")) for r in traps),
        "false_premises": len(premises),
        "false_premises_flagged": sum(bool(r.get("premise_flagged")) for r in premises),
        "unsupported_numbers_shown": sum(int(r.get("n_unsupported_numbers") or 0) for r in rows),
        "paragraphs_withheld": sum(int(r.get("n_withheld") or 0) for r in rows),
        "pdf_quotes": sum(len(r.get("evidence_ok") or []) for r in rows),
        "pdf_quotes_highlighted": sum(sum(r.get("evidence_ok") or []) for r in rows),
        "errors": [{"qid": r["qid"], "error": r["error"]} for r in rows if r.get("error")],
    }


def breakdowns(rows: list[dict], resamples: int, seed: int) -> dict:
    result = {}
    for key in ("question_type", "trap", "split"):
        groups: dict[str, list[dict]] = {}
        for row in rows:
            groups.setdefault(str(row.get(key) or "none"), []).append(row)
        result[key] = {
            label: {
                "n": len(group),
                "refused": _mean(_values(group, "refused"), resamples, seed),
                "citation_correct": _mean(
                    _values(group, "citation_correct", lambda r: not r.get("refused")), resamples, seed
                ),
                "answer_correct": _mean(_values(group, "answer_correct"), resamples, seed),
                "premise_flagged": _mean(_values(group, "premise_flagged"), resamples, seed),
            }
            for label, group in sorted(groups.items())
        }
    return result


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
    if not KnowledgeStore(settings.store).registry():
        raise AnswerEvaluationError(f"{name}: no document in {settings.store}; build it first (rag-assets eval {name})")
    started = time.perf_counter()
    target = targets.GOLDEN[name]
    questions = select(load_questions(target.questions_path), name, options.subset, options.split)
    kb = KnowledgeBase.from_settings(settings)
    documents = _documents(kb)
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
            "local": local,
            "judge": {"base_url": options.judge_base_url, "model": options.judge_model}
            if options.judge_base_url
            else None,
        },
        "options": dataclasses.asdict(options),
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
