"""Per-engine rankings for evaluation, read from a materialized knowledge store.

Engines (the product's own retrieval, `KnowledgeBase.retrieve`, asked deeper):

* ``bm25``   — Tantivy over children, collapsed to parents (best child);
* ``dense``  — LanceDB over children, collapsed to parents;
* ``hybrid`` — the two parent rankings fused as settings.fusion says (weighted RRF or
  normalized scores, rag_assets/retrieve/fusion.py);
* ``reranked`` — when a reranker is configured (``RAG_ASSETS_RERANKER``, or ``reranker=``
  a callable ``(question, hits with .text) -> scores`` as rag_assets/retrieve/reranking.py makes):
  the top ``rerank_depth`` parents of the hybrid ranking re-ordered by its scores, the
  rest of the hybrid ranking after them;
* ``bm25_reference`` — benchmarks only: the protocol reference BM25 over the raw records
  (reference_bm25.py), which says how far chunking + Tantivy move us from the field's BM25.

Every engine ranks ``depth`` units; a unit is a parent for question sets and a corpus
record (``Parent.record_id``) for benchmarks. Each engine asks its index for
``candidates`` children (default 2 × depth) so that ``depth`` distinct parents remain
after collapsing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Callable

from rag_assets.retrieve.knowledge_base import KnowledgeBase

PRODUCT_ENGINES = ("bm25", "dense", "hybrid")
DEPTH = 100
RERANK_DEPTH = 20


@dataclass
class QueryRequest:
    qid: str
    text: str
    groups: tuple[str, ...] = ()


@dataclass
class EngineRuns:
    """engine → qid → ranked unit ids (best first); plus, per query, the parents the product
    would give the model (its own hybrid: ``kb.candidates`` children per engine), for the
    context measure; and timings."""

    units: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    hybrid_parents: dict[str, list[str]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)


def _collapse(ids: list[str]) -> list[str]:
    return list(dict.fromkeys(i for i in ids if i is not None))


def run_engines(
    kb: KnowledgeBase,
    queries: list[QueryRequest],
    depth: int = DEPTH,
    candidates: int | None = None,
    unit_of: Callable[[str], str | None] | None = None,
    reranker: Callable | None = None,
    progress: Callable[[int, int], None] | None = None,
    rerank_depth: int = RERANK_DEPTH,
) -> EngineRuns:
    """Rank parents per engine for every query through the product's own retrieval
    (`KnowledgeBase.retrieve`, deeper); ``unit_of`` maps a parent id to the unit judged by
    the qrels (identity for question sets, record id for benchmarks)."""
    unit_of = unit_of or (lambda parent_id: parent_id)
    candidates = candidates or 2 * depth
    engines = [*PRODUCT_ENGINES, *(["reranked"] if reranker else [])]
    runs = EngineRuns(units={e: {} for e in engines}, seconds={e: 0.0 for e in engines})
    for done, query in enumerate(queries, start=1):
        trace = kb.retrieve(query.text, groups=list(query.groups), candidates=candidates)
        runs.seconds["bm25"] += trace.seconds["bm25"]
        runs.seconds["dense"] += trace.seconds["dense"] + trace.seconds["query_embedding"]
        runs.seconds["hybrid"] += trace.seconds["fusion"]
        rankings = {engine: trace.ranking(engine) for engine in PRODUCT_ENGINES}
        if reranker:
            started = time.perf_counter()
            rankings["reranked"] = rerank(reranker, query.text, rankings["hybrid"], kb, rerank_depth)
            runs.seconds["reranked"] += time.perf_counter() - started
        # what the product gives the model: `search` with its own candidate depth
        served = kb.retrieve(query.text, groups=list(query.groups)) if candidates != kb.candidates else trace
        runs.hybrid_parents[query.qid] = served.ranking("hybrid")
        for engine, parent_ids in rankings.items():
            runs.units[engine][query.qid] = _collapse([unit_of(p) for p in parent_ids])[:depth]
        if progress and (done % 50 == 0 or done == len(queries)):
            progress(done, len(queries))
    return runs


def rerank(reranker: Callable, question: str, fused: list[str], kb: KnowledgeBase, depth: int) -> list[str]:
    head = fused[:depth]
    hits = [
        SimpleNamespace(parent_id=p, text=kb.parent(p)["text"], heading_path=kb.parent(p)["heading_path"]) for p in head
    ]
    scores = [float(s) for s in reranker(question, hits)] if hits else []
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))  # ties keep the hybrid order
    return [head[i] for i in order] + fused[depth:]


def reference_bm25_run(benchmark, queries: dict[str, str], depth: int = DEPTH) -> tuple[dict[str, list[str]], dict]:
    """The protocol reference BM25 over the benchmark's records (full or sliced)."""
    from rag_assets.evaluation.reference_bm25 import build_reference

    started = time.perf_counter()
    reference = build_reference(benchmark.corpus, benchmark.spec.language)
    ranked = {qid: [doc for doc, _ in reference.search(text, depth)] for qid, text in queries.items()}
    info = {
        "analyzer": getattr(reference.analyzer, "name", type(reference.analyzer).__name__),
        "k1": reference.config.k1,
        "b": reference.config.b,
        "seconds": round(time.perf_counter() - started, 3),
    }
    return ranked, info
