"""Query-side figures of one store, measured in a fresh process so that cold start and
memory are what a new client pays (`rag-assets bench` runs it once per store size):

    python -m rag_assets.benchmarking.query_latency STORE QUESTIONS.json [--repeats 3]

Prints one JSON object: cold start (KnowledgeBase.open, then the first search, embedder
loading included), p50/p95 in milliseconds of each retrieval stage the trace times (query
embedding, BM25, dense, fusion) and of end-to-end `search` for new questions (query vector
and retrieval caches emptied before each) and for repeated ones (retrieval from the cache),
dense recall@10 of the index as configured against an exact scan, and resident memory
(after open, after the searches, peak).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np


def percentiles(seconds: list[float]) -> dict[str, float]:
    """p50 and p95 in milliseconds."""
    return {
        "p50": round(1000 * float(np.percentile(seconds, 50)), 2),
        "p95": round(1000 * float(np.percentile(seconds, 95)), 2),
    }


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def dense_recall(kb, vectors: list[np.ndarray], k: int = 10) -> float:
    """Mean share of the exact top k found in the top k of the dense search as `retrieve`
    runs it (2 x candidates fetched)."""
    from rag_assets.index.filters import SearchFilters

    filters = SearchFilters.from_dict(None, None)
    shares = []
    for vector in vectors:
        exact = {h["child_id"] for h in kb.dense.search(vector, filters, limit=k, exact=True)}
        found = {h["child_id"] for h in kb.dense.search(vector, filters, limit=2 * kb.candidates)[:k]}
        shares.append(len(exact & found) / max(1, len(exact)))
    return float(np.mean(shares))


def measure(store: Path, questions: list[str], repeats: int = 3) -> dict:
    from rag_assets.embedding import get_embedder
    from rag_assets.index.filters import SearchFilters
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    started = time.perf_counter()
    kb = KnowledgeBase.open(store)
    opened = time.perf_counter() - started
    open_rss = rss_mb()
    kb.search(questions[0])
    cold = time.perf_counter() - started
    stages: dict[str, list[float]] = {}
    for _ in range(repeats):
        for question in questions:
            kb.query_vectors.clear()  # every question embedded and retrieved: the figures of a new question
            kb.retrievals.clear()
            begun = time.perf_counter()
            trace = kb.retrieve(question)
            kb.hits(trace)
            stages.setdefault("search", []).append(time.perf_counter() - begun)
            for stage, seconds in trace.seconds.items():
                stages.setdefault(stage, []).append(seconds)
    for question in questions:  # asked again: its retrieval comes from the cache
        kb.search(question)
    for question in questions:
        begun = time.perf_counter()
        kb.search(question)
        stages.setdefault("repeated", []).append(time.perf_counter() - begun)
    searched_rss = rss_mb()  # the client's memory; the exact scans below load every vector
    embedder = get_embedder(kb.embedder_spec)
    vectors = [embedder.embed_query(q) for q in questions]
    filters = SearchFilters.from_dict(None, None)
    exact = []
    for vector in vectors:
        begun = time.perf_counter()
        kb.dense.search(vector, filters, limit=2 * kb.candidates, exact=True)
        exact.append(time.perf_counter() - begun)
    stats = kb.dense.ann_index()
    return {
        "children": kb.child_count(),
        "documents": len(kb.documents),
        "open_s": round(opened, 3),
        "cold_start_s": round(cold, 3),
        "latency_ms": {stage: percentiles(seconds) for stage, seconds in stages.items()},
        "dense_exact_ms": percentiles(exact),
        "dense_index": "IVF-PQ" if stats else "exact",
        "recall_at_10": round(dense_recall(kb, vectors), 4),
        "queries": len(questions) * repeats,
        "open_rss_mb": round(open_rss),
        "rss_mb": round(searched_rss),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("store", type=Path)
    parser.add_argument("questions", type=Path, help="JSON list of question strings")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    print(json.dumps(measure(args.store, json.loads(args.questions.read_text()), args.repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
