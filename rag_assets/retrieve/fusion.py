"""Reciprocal Rank Fusion over parent rankings."""

from __future__ import annotations


def children_to_parents(hits: list[dict]) -> list[dict]:
    """Collapse a child ranking to a parent ranking, keeping each parent's best child."""
    best: dict[str, dict] = {}
    for hit in hits:  # hits are in rank order
        best.setdefault(hit["parent_id"], hit)
    return [{**hit, "parent_rank": rank} for rank, hit in enumerate(best.values(), start=1)]


def rrf(rankings: dict[str, list[dict]], k: int = 60) -> list[tuple[str, float, dict[str, int]]]:
    """Fuse parent rankings: score(p) = Σ_engine 1 / (k + rank_engine(p)); one vote per
    parent per engine. Returns (parent_id, score, {engine: rank}) best first; ties are
    broken by the best single rank, then by id for determinism."""
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for engine, ranking in rankings.items():
        for rank, hit in enumerate(ranking, start=1):
            parent = hit["parent_id"]
            scores[parent] = scores.get(parent, 0.0) + 1.0 / (k + rank)
            ranks.setdefault(parent, {})[engine] = rank
    order = sorted(scores, key=lambda p: (-scores[p], min(ranks[p].values()), p))
    return [(p, scores[p], ranks[p]) for p in order]
