"""A run folder ``evaluations/runs/<run-id>/``: summary.json (with every version), a
per-question Parquet, PNG plots, the ranx.compare table and the Markdown table shown in
Dagster; plus the text table the CLI prints."""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
from pathlib import Path

import numpy as np

from rag_assets.evaluation import targets
from rag_assets.evaluation.metrics import CURVE_K, HEADLINE, json_safe
from rag_assets.store import write_json_atomic

SUMMARY = "summary.json"
PER_QUESTION = "per_question.parquet"
COMPARE = "compare.txt"
TABLE = "table.md"
PLOTS = {
    "recall": "recall_at_k.png",
    "engines": "metrics_by_engine.png",
    "question_type": "by_question_type.png",
    "content_type": "by_content_type.png",
}


def _fmt(cell: dict | None, digits: int = 3) -> str:
    if not cell or cell.get("mean") is None or (isinstance(cell["mean"], float) and math.isnan(cell["mean"])):
        return "–"
    return f"{cell['mean']:.{digits}f} [{cell['ci_low']:.{digits}f}, {cell['ci_high']:.{digits}f}]"


def metric_rows(summary: dict, metrics=HEADLINE) -> tuple[list[str], list[list[str]]]:
    header = ["engine", *metrics]
    rows = [
        [engine, *(_fmt(values.get(m)) for m in metrics)] for engine, values in summary["metrics"]["engines"].items()
    ]
    return header, rows


def failure_headline(summary: dict) -> str | None:
    """'2 documents failed to ingest (a.pdf, b.pdf): 7 questions whose evidence lies in them
    count as misses', or None when every document was ingested."""
    failed = summary["counts"].get("failed_documents") or []
    if not failed:
        return None
    names = ", ".join(Path(f.get("file") or f.get("document") or "?").name for f in failed)
    questions = len(summary["counts"].get("questions_on_failed_documents") or [])
    return (
        f"{len(failed)} document{'s' if len(failed) != 1 else ''} failed to ingest ({names}): "
        f"{questions} question{'s' if questions != 1 else ''} whose evidence lies in them count as misses"
    )


def markdown_table(summary: dict, metrics=HEADLINE) -> str:
    header, rows = metric_rows(summary, metrics)
    lines = []
    if failure_headline(summary):
        lines += [f"**{failure_headline(summary)}**", ""]
        lines += [
            f"- {Path(f.get('file') or f.get('document')).name}: {f.get('reason') or 'no reason recorded'}"
            for f in summary["counts"]["failed_documents"]
        ] + [""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    context = summary.get("context")
    if context:
        lines += [
            "",
            f"Context (hybrid top {context['k']} parents `search` serves): evidence share, i.e. recall@{context['k']} "
            f"by evidence item, {_fmt(context['evidence_share'])}, tokens {_fmt(context['context_tokens'], 0)}",
        ]
    lines += [
        "",
        f"{summary['counts']['judged']} judged questions; mean [95 % bootstrap CI, "
        f"{summary['metrics']['bootstrap']['resamples']} resamples, seed {summary['metrics']['bootstrap']['seed']}]",
    ]
    return "\n".join(lines)


def text_table(summary: dict, metrics=HEADLINE) -> str:
    header, rows = metric_rows(summary, metrics)
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    out = [
        f"{summary['target']}  run {summary['run_id']}  ({summary['counts']['judged']} judged queries, "
        f"{summary['counts'].get('units_indexed', '?')} units indexed)"
    ]
    if failure_headline(summary):
        out.append(f"WARNING: {failure_headline(summary)}")
        for f in summary["counts"]["failed_documents"]:
            reason = (f.get("reason") or "no reason recorded").splitlines()[0]
            out.append(f"  {Path(f.get('file') or f.get('document')).name}: {reason}")
    retrieval = summary["config"].get("retrieval")
    if retrieval:
        out.append(
            "retrieval: "
            + ", ".join(f"{k} {'on' if v is True else 'off' if v is False else v}" for k, v in retrieval.items())
        )
    out += [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]
    context = summary.get("context")
    if context:
        out.append(
            f"context: the hybrid top {context['k']} parents `search` serves hold {_fmt(context['evidence_share'])} "
            f"of the evidence items (recall@{context['k']} by evidence item; the table's recall@{context['k']} counts "
            f"every matching parent) for {_fmt(context['context_tokens'], 0)} tokens"
        )
    published = {} if summary["config"].get("slice") else summary.get("published_reference", {})
    for name, values in published.items():
        measured = summary["metrics"]["engines"].get(name, {})
        parts = [
            f"{m} published {v} measured {measured.get(m, {}).get('mean', float('nan')):.4f}"
            for m, v in values.items()
            if m in measured
        ]
        if parts:
            out.append(f"protocol: {name}: " + "; ".join(parts))
    diffs = summary["metrics"].get("paired_differences", {})
    if diffs:
        out.append("paired differences, nDCG@10 (95 % CI):")
        for pair, values in diffs.items():
            cell = values.get("ndcg@10")
            if cell:
                marker = "" if cell["ci_low"] <= 0 <= cell["ci_high"] else "  *"
                out.append(f"  {pair}: {cell['mean']:+.3f} [{cell['ci_low']:+.3f}, {cell['ci_high']:+.3f}]{marker}")
    out.append(f"stored in {summary['run_dir']}")
    return "\n".join(out)


def write_per_question(path: Path, rows: list[dict]) -> None:
    """One row per (question, engine); a column missing from a row, or a NaN score (an
    unjudged question), is null."""
    import polars as pl

    frame = pl.DataFrame(rows, infer_schema_length=None)
    frame = frame.with_columns(pl.col(pl.Float64).fill_nan(None))
    tmp = path.with_name(f".{path.name}.tmp")
    frame.write_parquet(tmp)
    tmp.replace(path)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_recall(path: Path, curve: dict, title: str) -> None:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
    for engine, values in curve.items():
        ks = [k for k in CURVE_K if k in values or str(k) in values]
        ys = [values.get(k, values.get(str(k))) for k in ks]
        ax.plot(ks, ys, marker="o", label=engine)
    ax.set_xscale("log")
    ax.set_xticks(list(CURVE_K))
    ax.set_xticklabels([str(k) for k in CURVE_K])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("k (ranked units)")
    ax.set_ylabel("recall@k")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def plot_bars(path: Path, groups: dict[str, dict[str, dict]], metric: str, title: str) -> None:
    """groups: group label → engine → metric → interval; bars with CI error bars."""
    plt = _plt()
    labels = list(groups)
    engines = list(next(iter(groups.values())).keys()) if groups else []
    width = 0.8 / max(len(engines), 1)
    fig, ax = plt.subplots(figsize=(max(6.4, 1.1 * len(labels) + 2), 4.2), dpi=110)
    x = np.arange(len(labels))
    for i, engine in enumerate(engines):
        cells = [groups[label][engine].get(metric, {}) for label in labels]
        means = np.array([c.get("mean", np.nan) for c in cells], dtype=float)
        low = np.array([c.get("ci_low", np.nan) for c in cells], dtype=float)
        high = np.array([c.get("ci_high", np.nan) for c in cells], dtype=float)
        errors = np.vstack([np.nan_to_num(means - low), np.nan_to_num(high - means)])
        ax.bar(
            x + (i - (len(engines) - 1) / 2) * width, np.nan_to_num(means), width, yerr=errors, capsize=2, label=engine
        )
    counts = [next(iter(groups[label].values())).get(metric, {}).get("n", 0) for label in labels]
    ax.set_xticks(x)
    ax.set_xticklabels([f"{label}\n(n={n})" for label, n in zip(labels, counts)], fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(metric)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write_plots(run_dir: Path, summary: dict) -> dict[str, str]:
    plots = {}
    label = summary["target"]
    plot_recall(run_dir / PLOTS["recall"], summary["recall_curve"], f"{label}: recall@k per engine")
    plots["recall"] = PLOTS["recall"]
    _plot_engines(run_dir, summary)
    plots["engines"] = PLOTS["engines"]
    for key in ("question_type", "content_type"):
        groups = summary.get("breakdowns", {}).get(key)
        if groups:
            plot_bars(run_dir / PLOTS[key], groups, "ndcg@10", f"{label}: nDCG@10 by {key.replace('_', ' ')} (95 % CI)")
            plots[key] = PLOTS[key]
    return plots


def _plot_engines(run_dir: Path, summary: dict) -> None:
    engines = summary["metrics"]["engines"]
    groups = {m: {e: {"value": v[m]} for e, v in engines.items() if m in v} for m in HEADLINE}
    plot_bars(run_dir / PLOTS["engines"], groups, "value", f"{summary['target']}: metrics per engine (95 % CI)")


def image_markdown(path: Path, alt: str) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f"![{alt}](data:image/png;base64,{data})"


def write_run(run_dir: Path, summary: dict, per_question: list[dict], compare_table: str) -> dict:
    run_dir.mkdir(parents=True, exist_ok=True)
    write_per_question(run_dir / PER_QUESTION, per_question)
    (run_dir / COMPARE).write_text(compare_table + "\n", encoding="utf-8")
    summary["files"] = {
        "per_question": PER_QUESTION,
        "compare": COMPARE,
        "table": TABLE,
        "plots": write_plots(run_dir, summary),
    }
    (run_dir / TABLE).write_text(markdown_table(summary) + "\n", encoding="utf-8")
    write_json_atomic(run_dir / SUMMARY, json_safe(summary))
    return summary


def load_summary(run_dir: Path) -> dict:
    return json.loads((run_dir / SUMMARY).read_text(encoding="utf-8"))


def latest_run(runs_dir: Path, target: str, kind: str = "retrieval") -> Path | None:
    """The most recent run folder of a target and kind (retrieval, or answers), run ids
    starting with a UTC timestamp."""
    candidates = sorted(p for p in runs_dir.glob("*") if (p / SUMMARY).exists() and _kind_of(p) == (target, kind))
    return candidates[-1] if candidates else None


def _kind_of(run_dir: Path) -> tuple[str | None, str] | None:
    try:
        summary = load_summary(run_dir)
    except (OSError, ValueError):
        return None
    # retrieval summaries say "golden" or "benchmark"; answer summaries say "answers"
    return summary.get("target"), "answers" if summary.get("kind") == "answers" else "retrieval"


def run_header(name: str, label: str, kind: str, run_id: str | None, suffix: str, runs_dir: str = "") -> dict:
    """The fields every run summary (retrieval or answers) starts with; a new run id is the
    UTC time followed by ``suffix``."""
    now = dt.datetime.now(dt.timezone.utc)
    run_id = run_id or f"{now:%Y%m%dT%H%M%SZ}-{suffix}"
    run_dir = (Path(runs_dir).resolve() if runs_dir else targets.runs_root()) / run_id
    return {
        "run_id": run_id,
        "run_dir": str(run_dir),
        "target": name,
        "label": label,
        "kind": kind,
        "description": targets.describe(name),
        "created_at": now.isoformat(timespec="seconds"),
    }
