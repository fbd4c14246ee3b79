"""The answer evaluation's run folder: summary.json, per_question.parquet, the
Markdown table shown in Dagster, the text table the CLI prints, and two plots (the
headline rates with their CIs, and citation / answer correctness by question type)."""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

from rag_assets.evaluation.answer_scoring import STAGES
from rag_assets.evaluation.metrics import json_safe
from rag_assets.evaluation.reporting import PER_QUESTION, SUMMARY, TABLE, plot_bars, write_per_question
from rag_assets.store import write_json_atomic

PLOTS = {"headline": "answer_metrics.png", "question_type": "answers_by_question_type.png"}
EVIDENCE_DIR = "evidence"  # highlighted evidence pages of a few questions, beside the plots
# (key, label, digits, kind): the columns of the table every answer run prints
COLUMNS = (
    ("citation_correct", "citation correctness", 3, "rate"),
    ("answer_correct", "answer correctness", 3, "rate"),
    ("unsupported_numbers", "unsupported numbers / answer", 3, "rate"),
    ("out_of_corpus_refused", "out-of-corpus refused", 3, "rate"),
    ("false_premise_flagged", "false premises flagged", 3, "rate"),
    ("false_premise_corrected", "false numbers corrected", 3, "rate"),
    ("refused_answerable", "answerable refused", 3, "rate"),
    ("premise_false_alarms", "premise false alarms", 3, "rate"),
    ("supported_share", "paragraphs supported", 3, "rate"),
    ("evidence_highlighted", "PDF quotes highlighted", 3, "rate"),
    ("withheld_paragraphs", "withheld / answer", 3, "rate"),
    ("latency_s", "median latency (s)", 2, "seconds"),
    ("total_tokens", "tokens / question", 0, "count"),
)


def _fmt(cell: dict | None, digits: int = 3) -> str:
    if not cell or cell.get("mean") is None or (isinstance(cell["mean"], float) and math.isnan(cell["mean"])):
        return "–"
    return f"{cell['mean']:.{digits}f} [{cell['ci_low']:.{digits}f}, {cell['ci_high']:.{digits}f}]"


def rows_of(summary: dict) -> list[tuple[str, str, int]]:
    """(label, formatted value with CI, n) per metric."""
    metrics = summary["metrics"]
    out = []
    for key, label, digits, _ in COLUMNS:
        cell = metrics.get(key)
        out.append((label, _fmt(cell, digits), (cell or {}).get("n", 0)))
    if "judge_correct" in metrics:
        judge = (summary.get("answerer") or {}).get("judge") or {}
        out.append(
            (
                f"judge: correct ({judge.get('model') or 'model'})",
                _fmt(metrics["judge_correct"]),
                metrics["judge_correct"].get("n", 0),
            )
        )
    return out


def stages_line(summary: dict) -> str:
    """'per question, median: retrieval 2.1 s, prefill 9.8 s, …' over the stages the run timed."""
    metrics = summary["metrics"]
    cells = []
    for key, label in STAGES:
        cell = metrics.get(f"stage:{key}")
        if cell and cell.get("mean") is not None:
            name, unit = (label[:-4], " s") if label.endswith(" (s)") else (label, "")
            cells.append(f"{name} {cell['mean']:,.{1 if unit else 0}f}{unit}")
    return "per question, median: " + ", ".join(cells) if cells else ""


def counts_line(summary: dict) -> str:
    c = summary["counts"]
    return (
        f"{c['questions']} questions: {c['answerable']} answerable ({c['answerable_refused']} refused), "
        f"{c['out_of_corpus']} out-of-corpus ({c['out_of_corpus_refused']} refused), {c['false_premises']} false "
        f"premises ({c['false_premises_flagged']} flagged); {c['unsupported_numbers_shown']} shown numbers absent "
        f"from their cited sources; {c['paragraphs_withheld']} paragraphs withheld"
        + (
            f"; {c['pdf_quotes_highlighted']}/{c['pdf_quotes']} PDF quotes highlighted on their page"
            if c.get("pdf_quotes")
            else ""
        )
        + (f"; {c['answer_retries']} answers asked again" if c.get("answer_retries") else "")
        + (f"; {len(c['errors'])} errors" if c.get("errors") else "")
    )


def title(summary: dict) -> str:
    return f"{summary['label']}  answers  run {summary['run_id']}  answerer: {summary['answerer']['description']}"


def markdown_table(summary: dict) -> str:
    lines = [f"**{title(summary)}**", "", "| metric | value [95 % CI] | n |", "|---|---|---|"]
    lines += [f"| {label} | {value} | {n} |" for label, value, n in rows_of(summary)]
    stages = stages_line(summary)
    lines += [
        "",
        counts_line(summary),
        *(["", stages] if stages else []),
        "",
        f"mean [95 % bootstrap CI, {summary['bootstrap']['resamples']} resamples, seed "
        f"{summary['bootstrap']['seed']}]; latency: median [bootstrap CI]",
    ]
    return "\n".join(lines)


def text_table(summary: dict) -> str:
    rows = rows_of(summary)
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    out = [
        title(summary),
        f"{'metric'.ljust(width)}  {'value [95 % CI]'.ljust(value_width)}  n",
        f"{'-' * width}  {'-' * value_width}  ---",
    ]
    out += [f"{label.ljust(width)}  {value.ljust(value_width)}  {n}" for label, value, n in rows]
    out.append(counts_line(summary))
    if stages_line(summary):
        out.append(stages_line(summary))
    failed = summary["counts"].get("failed_documents") or []
    if failed:
        out.append(
            f"WARNING: {len(failed)} document(s) failed to ingest: "
            + ", ".join(Path(f.get("file") or f["document"]).name for f in failed)
        )
    out.append(f"stored in {summary['run_dir']}")
    return "\n".join(out)


def write_plots(run_dir: Path, summary: dict) -> dict[str, str]:
    metrics = summary["metrics"]
    rates = {
        textwrap.fill(label, 14): {"answers": {"value": metrics[key]}}
        for key, label, _, kind in COLUMNS
        if kind == "rate" and metrics.get(key, {}).get("n")
    }
    plots = {}
    if rates:
        plot_bars(
            run_dir / PLOTS["headline"],
            rates,
            "value",
            f"{summary['label']}: answers ({summary['answerer']['kind']}), 95 % CI",
        )
        plots["headline"] = PLOTS["headline"]
    groups = summary.get("breakdowns", {}).get("question_type") or {}
    if groups:
        data = {
            label: {
                "citation correctness": {"value": cells["citation_correct"]},
                "answer correctness": {"value": cells["answer_correct"]},
            }
            for label, cells in groups.items()
        }
        plot_bars(run_dir / PLOTS["question_type"], data, "value", f"{summary['label']}: by question type (95 % CI)")
        plots["question_type"] = PLOTS["question_type"]
    return plots


def write_run(run_dir: Path, summary: dict, rows: list[dict], evidence_pages: Sequence[str] = ()) -> dict:
    run_dir.mkdir(parents=True, exist_ok=True)
    write_per_question(run_dir / PER_QUESTION, _flat(rows))
    summary["files"] = {
        "per_question": PER_QUESTION,
        "table": TABLE,
        "plots": write_plots(run_dir, summary),
        "evidence_pages": list(evidence_pages),
    }
    (run_dir / TABLE).write_text(markdown_table(summary) + "\n", encoding="utf-8")
    write_json_atomic(run_dir / SUMMARY, json_safe(summary))
    return summary


def _flat(rows: list[dict]) -> list[dict]:
    """Parquet-friendly, decided per column (an empty list and a list of numbers must not
    meet in one column): lists of strings stay lists, any other nested value is JSON."""
    nested = {
        key
        for row in rows
        for key, value in row.items()
        if isinstance(value, dict) or (isinstance(value, (list, tuple)) and not all(isinstance(v, str) for v in value))
    }
    return [
        {
            key: json.dumps(value if not isinstance(value, tuple) else list(value), ensure_ascii=False, default=str)
            if key in nested and value is not None
            else value
            for key, value in row.items()
        }
        for row in rows
    ]
