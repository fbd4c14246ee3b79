"""One answer scored against its question's expected answer, evidence and trap: the expected
figures or key terms, the citations holding an evidence quote, the support of what is shown,
the premise flags and the highlighted evidence (a row of per_question.parquet)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from rag_assets.answering.figures import Figure, figures, same_figure
from rag_assets.answering.highlight import checked_paragraphs
from rag_assets.answering.verification import check_numbers
from rag_assets.evaluation.evidence import TextUnit, document_matches, quote_matches
from rag_assets.evaluation.questions import Question
from rag_assets.evaluation.splits import split_of
from rag_assets.retrieve.query import analyze, content_terms

PREMISE_TRAPS = ("false-number", "near-miss-term")
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


def document_files(kb) -> dict[str, tuple[str, str]]:
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


def _question_fields(question: Question) -> dict:
    """What a row says of its question, answered or not (`score_answer`, `error_row`)."""
    return {
        "qid": question.id,
        "split": split_of(question.id),
        "question": question.question,
        "question_type": question.question_type,
        "content_type": question.content_type,
        "trap": question.trap,
        "expected_answer": question.answer,
        "answerable": question.trap != "out-of-corpus",
    }


def score_answer(question: Question, answer, kb, documents: dict, judged: dict | None = None) -> dict:
    """One row of per_question.parquet."""
    expected = expected_of(question)
    shown = [p for p in answer.paragraphs]
    cited = answer.cited
    refused = answer.refused
    row: dict = {
        **_question_fields(question),
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
    stages = getattr(answer, "stages", None) or {}
    row.update({key: stages.get(key) for key, _ in STAGES})
    answer_calls = sum(c.get("call") == "answer" for c in usage.get("by_call") or [])
    row["answer_retries"] = max(0, answer_calls - 1) if usage else None
    return row


# each question's stages (`Answer.stages`): (key, label); a stage a run did not have is None
STAGES = (
    ("routing_s", "routing (s)"),
    ("retrieval_s", "retrieval (s)"),
    ("context_tokens", "context tokens"),
    ("prefill_tokens", "prefill tokens"),
    ("cached_tokens", "prompt-cache tokens"),
    ("prefill_s", "prefill (s)"),
    ("generation_tokens", "generated tokens"),
    ("generation_s", "generation (s)"),
    ("answer_s", "answer call (s)"),
    ("verification_s", "verification (s)"),
)


def error_row(question: Question, exc: Exception, seconds: float) -> dict:
    return {
        **_question_fields(question),
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
