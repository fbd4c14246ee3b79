"""Ingestion figures per stage, read from the stage records of runs that already happened
(seconds from step start to success, and each stage's materialization metadata), so they
cost nothing to produce: `rag-assets bench --ingestion-store STORE`.

A stage run more than once for a document counts at its latest run; a dense stage that found
its vectors in the cache reports that (cached) speed.
"""

from __future__ import annotations

import statistics

# stage -> (metadata key counted, unit of the rate)
RATES = {
    "docling_document": ("pages", "pages"),
    "children": ("children", "children"),
    "dense_embeddings": (None, "tokens"),  # tokens come from the children stage
    "lexical_index": ("entries", "docs"),
}


def summarize(records: list[dict]) -> dict:
    """Per stage: documents, total and median seconds, rate; plus pages and end to end pages/s."""
    latest: dict = {}
    for record in records:  # runs come newest first: a document's latest run of a stage wins
        if record["document"] is not None:  # per-document stages only, not the evaluation assets
            latest.setdefault((record["document"], record["stage"]), record)
    stages: dict[str, list[dict]] = {}
    for (document, stage), record in latest.items():
        stages.setdefault(stage, []).append(record)
    tokens = {d: r["metadata"].get("tokens", 0) for (d, s), r in latest.items() if s == "children"}
    pages = {d: r["metadata"].get("pages") or 0 for (d, s), r in latest.items() if s == "docling_document"}
    summary = {}
    for stage, found in stages.items():
        seconds = sum(r["seconds"] for r in found)
        key, unit = RATES.get(stage, (None, None))
        if stage == "dense_embeddings":
            amount = sum(tokens.get(r["document"], 0) for r in found)
        else:
            amount = sum(r["metadata"].get(key) or 0 for r in found) if key else None
        summary[stage] = {
            "documents": len(found),
            "seconds": round(seconds, 1),
            "median_s": round(statistics.median(r["seconds"] for r in found), 2),
            "rate": f"{amount / seconds:,.1f} {unit}/s" if amount and seconds else None,
        }
    if "docling_document" in summary:
        summary["docling_document"]["s_per_page"] = round(
            summary["docling_document"]["seconds"] / max(1, sum(pages.values())), 2
        )
        peaks = [r["metadata"].get("peak_memory_mb") for r in stages["docling_document"]]
        summary["docling_document"]["peak_memory_mb"] = max((p for p in peaks if p is not None), default=None)
    done = [d for d in pages if all((d, s) in latest for s in stages)]
    total = sum(latest[(d, s)]["seconds"] for d in done for s in stages)
    return {
        "stages": summary,
        "documents": len(done),
        "pages": sum(pages[d] for d in done),
        "end_to_end_pages_per_s": round(sum(pages[d] for d in done) / total, 2) if total else None,
    }
