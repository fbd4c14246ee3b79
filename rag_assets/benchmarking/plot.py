"""The figure of `rag-assets bench --plot`: latency, cold start and memory against store size."""

from __future__ import annotations

from pathlib import Path


def plot_scaling(rows: list[dict], path: Path, title: str) -> None:
    """Rows as `rag-assets bench` measures them (one per store size), drawn to `path` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")  # no display: a file only
    import matplotlib.pyplot as plt

    sizes = [row["children"] for row in rows]
    figure, (latency, start, memory) = plt.subplots(1, 3, figsize=(15, 4.5))
    for stage, style in (
        ("search", "-o"),
        ("repeated", "-s"),
        ("query_embedding", "--^"),
        ("bm25", ":v"),
        ("dense", "-.d"),
    ):
        if all(stage in row["latency_ms"] for row in rows):
            latency.plot(sizes, [row["latency_ms"][stage]["p95"] for row in rows], style, label=f"{stage} p95")
    latency.plot(sizes, [row["latency_ms"]["search"]["p50"] for row in rows], "-o", alpha=0.4, label="search p50")
    latency.axhline(50, color="grey", linewidth=0.8, linestyle="--", label="target search p95")
    latency.set(title="query latency (ms)", ylabel="ms")
    start.plot(sizes, [row["open_s"] for row in rows], "-o", label="KnowledgeBase.open")
    start.plot(sizes, [row["cold_start_s"] for row in rows], "-s", label="open + first search")
    start.axhline(3, color="grey", linewidth=0.8, linestyle="--", label="target cold start")
    start.set(title="cold start (s)", ylabel="s")
    memory.plot(sizes, [row["open_rss_mb"] for row in rows], "-o", label="RSS after open")
    memory.plot(sizes, [row["rss_mb"] for row in rows], "-s", label="RSS after the queries")
    memory.axhline(1024, color="grey", linewidth=0.8, linestyle="--", label="target RSS")
    memory.set(title="client memory (MB)", ylabel="MB")
    for axis in (latency, start, memory):
        axis.set_xscale("log")
        axis.set_xlabel("children in the store")
        axis.grid(True, alpha=0.3)
        axis.set_ylim(bottom=0)
        axis.legend(fontsize=8)
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
