"""Reciprocal Rank Fusion over parent rankings."""

from __future__ import annotations

from typing import TypeVar

H = TypeVar("H")

# Engine weights in the fusion (plain RRF: all 1).
DEFAULT_WEIGHTS = {"bm25": 1.0, "dense": 1.0}


def children_to_parents(hits: list[H]) -> list[H]:
    """Collapse a child ranking to a parent ranking, keeping each parent's best child."""
    best: dict[str, H] = {}
    for hit in hits:  # hits are in rank order
        best.setdefault(hit.parent_id, hit)
    return list(best.values())


def rrf(rankings: dict[str, list[str]], k: int = 60,
        weights: dict[str, float] | None = None) -> list[tuple[str, float, dict[str, int]]]:
    """Fuse parent rankings: score(p) = Σ_engine w_engine / (k + rank_engine(p)); one vote
    per parent per engine. Returns (parent_id, score, {engine: rank}) best first; ties are
    broken by the best single rank, then by id for determinism."""
    scores: dict[str, float] = {}
    ranks: dict[str, dict[str, int]] = {}
    for engine, ranking in rankings.items():
        weight = 1.0 if weights is None else weights.get(engine, 1.0)
        for rank, parent in enumerate(ranking, start=1):
            scores[parent] = scores.get(parent, 0.0) + weight / (k + rank)
            ranks.setdefault(parent, {})[engine] = rank
    order = sorted(scores, key=lambda p: (-scores[p], min(ranks[p].values()), p))
    return [(p, scores[p], ranks[p]) for p in order]
