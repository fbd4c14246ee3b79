"""`rag-assets ingest PATH…`: register files as partitions, materialize them through Dagster,
print what each stage did (a line per stage when stdout is a log, summaries always)."""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from tqdm import tqdm

from rag_assets.errors import printable

# Figures a stage line shows, from the stage's materialization metadata: key -> (singular, plural).
COUNTS = {
    "pages": ("page", "pages"),
    "tables": ("table", "tables"),
    "ocr_pages": ("OCR'd page", "OCR'd pages"),
    "repaired_pages": ("repaired page", "repaired pages"),
    "unreadable_pages": ("unreadable page", "unreadable pages"),
    "parents": ("parent", "parents"),
    "children": ("child", "children"),
    "rows": ("vector", "vectors"),
    "entries": ("entry", "entries"),
}
STAGE_FIGURES = {
    "source_document": ["size_bytes"],
    "docling_document": ["pages", "tables", "ocr_pages", "repaired_pages", "unreadable_pages"],
    "parents": ["parents"],
    "children": ["children"],
    "dense_embeddings": ["rows"],
    "lexical_index": ["entries"],
    "publication": ["version"],
}
SUMMARY_FIGURES = ["pages", "tables", "ocr_pages", "repaired_pages", "unreadable_pages"]


def metadata_warnings(metadata: dict) -> list[str]:
    """The `warnings` metadata of a stage (Dagster is imported only when there is some)."""
    if not metadata.get("warnings"):
        return []
    from rag_assets.orchestration.ingest_runs import metadata_warnings as parse

    return parse(metadata)


def _number(value) -> str:
    return f"{value:.1f}" if isinstance(value, float) and not value.is_integer() else f"{value:.0f}"


def _figure(key: str, value) -> str | None:
    if value is None:
        return None
    if key in COUNTS and isinstance(value, (int, float)):
        singular, plural = COUNTS[key]
        return f"{_number(value)} {singular if value == 1 else plural}"
    if key == "size_bytes" and isinstance(value, (int, float)):
        return f"{value / 1024:.0f} KB"
    if key == "tokens_per_page" and isinstance(value, (int, float)):
        return f"{value:.0f} tokens/page"
    if key == "version":
        return f"version {value}"
    return f"{key} {value}"


def _figures(metadata: dict, keys: list[str]) -> list[str]:
    return [f for f in (_figure(key, metadata.get(key)) for key in keys) if f]


def _warning_count(count: int) -> str:
    return f"{count} warning{'' if count == 1 else 's'}"


def stage_line(report, number: int, total: int) -> str:
    """`[3/12] file.pdf  docling_document  70 pages, 14 tables, 0 OCR'd pages  41.2 s`"""
    metadata = report.metadata or {}
    figures = _figures(metadata, STAGE_FIGURES.get(report.stage, []) + ["tokens_per_page"])
    if metadata_warnings(metadata):
        figures.append(_warning_count(len(metadata_warnings(metadata))))
    if report.status == "failed":
        figures.insert(0, "FAILED: " + (report.message.splitlines() or [""])[0])
    seconds = f"  {report.seconds:.1f} s" if report.seconds is not None else ""
    return printable(
        f"[{number}/{total}] {Path(report.path).name}  {report.stage}  {', '.join(figures) or 'done'}{seconds}"
    )  # names shown, never acted on


def summary_lines(outcome, done: int, total: int) -> list[str]:
    """The document's line (status, pages, tables, OCR'd/repaired pages, warnings, tokens per
    page), then its error and warnings one per line."""
    stages = [s for s in STAGE_FIGURES if s in outcome.metadata] + [
        s for s in outcome.metadata if s not in STAGE_FIGURES
    ]
    merged: dict = {}
    for stage in stages:  # a figure comes from the first stage, in pipeline order, that records it
        for key, value in outcome.metadata[stage].items():
            merged.setdefault(key, value)
    warnings = [w for stage in stages for w in metadata_warnings(outcome.metadata[stage])]
    warnings += [w for w in outcome.warnings if w not in warnings]
    figures = _figures(merged, SUMMARY_FIGURES)
    if outcome.metadata:
        figures.append(_warning_count(len(warnings)))
    figures += _figures(merged, ["tokens_per_page"])
    line = f"[{done}/{total}] {outcome.status:9s} {outcome.path}"
    if figures:
        line += "  " + ", ".join(figures)
    lines = [line + f"  [{outcome.document_id}]"]
    label = {"failed": "error", "refused": "refused"}.get(outcome.status, "note")  # refused, not crashed
    lines += [f"          {label}: {m}" for m in outcome.message.splitlines() if m.strip()]
    lines += [f"          warning: {w}" for w in warnings]
    return [printable(line) for line in lines]  # no raw control character reaches the terminal


def cmd_ingest(args, settings) -> int:
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance

    bar = None

    def report_stage(stage_report, number, total):
        # stdout is a log (CI, cron, `| tee`): one line per stage as it completes, flushed at once
        print(stage_line(stage_report, number, total), flush=True)

    def report(outcome, done, total):
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="doc", desc="ingest", file=sys.stderr, disable=not sys.stderr.isatty())
        bar.update(1)
        tqdm.write("\n".join(summary_lines(outcome, done, total)), file=sys.stdout)
        sys.stdout.flush()

    on_stage = None if sys.stdout.isatty() else report_stage
    with open_instance(settings) as instance:
        outcomes = ingest(
            [Path(p) for p in args.paths], settings, instance, force=args.force, on_outcome=report, on_stage=on_stage
        )
    if bar is not None:
        bar.close()
    print(totals_line(outcomes) + f"; store: {settings.store}")
    for line in token_cost_lines(outcomes):
        print(line)
    return 1 if any(o.status in ("failed", "refused") for o in outcomes) else 0


def totals_line(outcomes) -> str:
    """`3 document(s) ready, 1 failed, 2 refused (…)`: a copy of a failed or refused document
    counts as its original does."""
    failed = sum(o.status == "failed" for o in outcomes)
    refused = sum(o.status == "refused" for o in outcomes)
    return f"{len(outcomes) - failed - refused} document(s) ready, {failed} failed" + (
        f", {refused} refused (over a budget or a link)" if refused else ""
    )


def token_cost_lines(outcomes) -> list[str]:
    """Embedding cost per page against the median of the documents just ingested: a
    document far above it (a table read as thousands of fragments) is worth a look."""
    per_page = {o.path: (o.metadata.get("children") or {}).get("tokens_per_page") for o in outcomes}
    per_page = {path: value for path, value in per_page.items() if isinstance(value, (int, float))}
    if len(per_page) < 2:
        return []
    median = statistics.median(per_page.values())
    lines = [f"tokens per page: median {median:.0f} over {len(per_page)} documents"]
    lines += [
        f"  over 3× the median: {printable(Path(path).name)} ({value:.0f} tokens/page)"
        for path, value in per_page.items()
        if value > 3 * median
    ]
    return lines
