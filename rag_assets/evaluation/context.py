"""The context measure: how much of the relevant evidence is inside the parents actually
given to the model, and what those parents cost in tokens.

For each judged question, the model receives the top ``k`` parents of the product's hybrid
ranking, exactly as ``KnowledgeBase.search(question, k)`` serves them (``candidates``
children per engine, fused). Then:

* ``evidence_share`` = evidence items covered by those parents / evidence items
  (question sets: an item is a document + quote; benchmarks: a relevant record);
* ``context_tokens`` = tokens of those parents' text (the embedding model's tokenizer);
* ``tokens_per_covered_item`` = context_tokens / covered items (NaN when none covered).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

CONTEXT_K = 5


def context_measure(
    given: dict[str, list[str]],
    evidence_units: dict[str, list[set[str]]],
    parent_text: Callable[[str], str],
    count_tokens: Callable[[str], int],
    k: int = CONTEXT_K,
) -> dict[str, dict[str, float]]:
    """``given``: qid → hybrid-ranked parent ids; ``evidence_units``: qid → one set per
    evidence item of the parent ids that hold it. Returns qid → measures."""
    cache: dict[str, int] = {}

    def tokens(parent_id: str) -> int:
        if parent_id not in cache:
            cache[parent_id] = count_tokens(parent_text(parent_id))
        return cache[parent_id]

    result = {}
    for qid, items in evidence_units.items():
        parents = given.get(qid, [])[:k]
        chosen = set(parents)
        covered = sum(1 for holders in items if holders & chosen)
        cost = sum(tokens(p) for p in parents)
        result[qid] = {
            "evidence_share": covered / len(items) if items else float("nan"),
            "evidence_items": len(items),
            "evidence_covered": covered,
            "context_parents": len(parents),
            "context_tokens": cost,
            "tokens_per_covered_item": cost / covered if covered else float("nan"),
        }
    return result


def summarize_context(per_query: dict[str, dict[str, float]], counts: np.ndarray, k: int = CONTEXT_K) -> dict:
    from rag_assets.evaluation.metrics import interval

    qids = sorted(per_query)
    share = np.array([per_query[q]["evidence_share"] for q in qids], dtype=np.float64)
    cost = np.array([per_query[q]["context_tokens"] for q in qids], dtype=np.float64)
    return {
        "k": k,
        "engine": "hybrid",
        "evidence_share": interval(share, counts).to_dict(),
        "context_tokens": interval(cost, counts).to_dict(),
        "context_tokens_median": float(np.median(cost)) if len(cost) else float("nan"),
        "questions_with_all_evidence": int(np.sum(share >= 1.0)),
    }
