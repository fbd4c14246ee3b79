"""Fusion of parent rankings: weighted Reciprocal Rank Fusion, or a convex combination of
normalized scores. The method and its parameters are one `Fusion`, written as a spec string
(``rrf:k=60,bm25=1,dense=1``, ``wsum:norm=min-max,bm25=0.7,dense=0.3``) so that settings,
evaluation runs and the tuning report name it the same way."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np


class _ChildHit(Protocol):
    @property
    def parent_id(self) -> str: ...


H = TypeVar("H", bound=_ChildHit)

METHODS = ("rrf", "wsum")
# ranx's names: "zmuv" is z-score (zero mean, unit variance)
NORMS = ("min-max", "zmuv")
# Below this spread a list is flat; the floor ranx uses, so tuned weights mean the same here.
_FLAT = 1e-9


def children_to_parents(hits: list[H]) -> list[H]:
    """Collapse a child ranking to a parent ranking, keeping each parent's best child."""
    best: dict[str, H] = {}
    for hit in hits:  # hits are in rank order
        best.setdefault(hit.parent_id, hit)
    return list(best.values())


@dataclass(frozen=True)
class Fusion:
    method: str = "rrf"
    k: int = 60  # rrf only
    norm: str = "min-max"  # wsum only
    weights: dict[str, float] = field(default_factory=lambda: {"bm25": 1.0, "dense": 1.0})

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"fusion method {self.method!r} is not one of {', '.join(METHODS)}")
        if self.norm not in NORMS:
            raise ValueError(f"fusion norm {self.norm!r} is not one of {', '.join(NORMS)}")
        if self.k < 0 or any(w < 0 for w in self.weights.values()):
            raise ValueError("fusion k and weights must be ≥ 0")

    @classmethod
    def parse(cls, spec: str) -> "Fusion":
        """``method[:name=value,…]``: k and norm are parameters, any other name an engine weight."""
        method, _, rest = spec.strip().partition(":")
        params: dict = {}
        weights: dict[str, float] = {}
        for item in filter(None, (p.strip() for p in rest.split(","))):
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"fusion spec {spec!r}: {item!r} is not name=value")
            if name == "k":
                params["k"] = int(value)
            elif name == "norm":
                params["norm"] = value
            else:
                weights[name] = float(value)
        return cls(method or "rrf", weights=weights or {"bm25": 1.0, "dense": 1.0}, **params)

    def spec(self) -> str:
        params = [f"k={self.k}"] if self.method == "rrf" else [f"norm={self.norm}"]
        params += [f"{engine}={weight:g}" for engine, weight in sorted(self.weights.items())]
        return f"{self.method}:{','.join(params)}"

    def fuse(self, rankings: dict[str, list[tuple[str, float]]]) -> list[tuple[str, float, dict[str, int]]]:
        """Fuse per-engine parent rankings ``[(parent_id, engine score), …]`` best first.
        Returns (parent_id, fused score, {engine: rank}) best first; ties go to the best
        single rank, then the id (deterministic)."""
        scores: dict[str, float] = {}
        ranks: dict[str, dict[str, int]] = {}
        for engine, ranking in rankings.items():
            weight = self.weights.get(engine, 1.0)
            contributions = (
                self._rrf(len(ranking)) if self.method == "rrf" else self._normalized([score for _, score in ranking])
            )
            for rank, ((parent, _), value) in enumerate(zip(ranking, contributions), start=1):
                scores[parent] = scores.get(parent, 0.0) + weight * float(value)
                ranks.setdefault(parent, {})[engine] = rank
        order = sorted(scores, key=lambda p: (-scores[p], min(ranks[p].values()), p))
        return [(p, scores[p], ranks[p]) for p in order]

    def _rrf(self, n: int) -> np.ndarray:
        return 1.0 / (self.k + np.arange(1, n + 1, dtype=np.float64))

    def _normalized(self, values: list[float]) -> np.ndarray:
        """Per-query normalization over the engine's list, as ranx's min_max_norm / zmuv_norm
        do (a parent absent from a list adds 0)."""
        array = np.asarray(values, dtype=np.float64)
        if not len(array):
            return array
        if self.norm == "min-max":
            return (array - array.min()) / max(float(array.max() - array.min()), _FLAT)
        return (array - array.mean()) / max(float(array.std()), _FLAT)


PLAIN_RRF = Fusion()
