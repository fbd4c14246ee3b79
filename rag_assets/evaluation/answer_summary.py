"""A run's rows summed up: rates and means with percentile-bootstrap CIs (the median latency
with its own), plain counts, and the rates per question type, trap and split."""

from __future__ import annotations

from typing import Callable

import numpy as np

from rag_assets.evaluation import metrics as m
from rag_assets.evaluation.answer_scoring import PREMISE_TRAPS, STAGES


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
    for key, _ in STAGES:  # medians, like the latency they split
        if any(r.get(key) is not None for r in rows):
            out[f"stage:{key}"] = median_interval(_values(rows, key), resamples, seed)
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
        # answers asked again because the first reply was rejected (format, unknown or no source)
        "answer_retries": sum(int(r.get("answer_retries") or 0) for r in rows),
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
