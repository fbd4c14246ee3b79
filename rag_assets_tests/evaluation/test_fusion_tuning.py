"""Fusion tuning on fixed rankings: ranx's search, our tie rule, and the product's fusion
scoring what ranx tuned."""

import pytest

from rag_assets.evaluation.fusion_tuning import best, family, product_score, search
from rag_assets.retrieve.fusion import Fusion

pytestmark = pytest.mark.slow  # a few hundred ranx fusions and evaluations (~10 s CPU)

QRELS = {f"q{i}": {f"rel{i}": 1} for i in range(6)}


def _lists(dense_first: bool) -> dict:
    """bm25 puts the relevant parent 4th, dense 1st (or both 1st when not dense_first)."""
    lists = {"bm25": {}, "dense": {}}
    for i in range(6):
        noise = [(f"n{i}-{j}", 10.0 - j) for j in range(3)]
        relevant = (f"rel{i}", 9.5 if dense_first else 11.0)
        lists["bm25"][f"q{i}"] = [*noise, relevant] if dense_first else [relevant, *noise]
        lists["dense"][f"q{i}"] = [(f"rel{i}", 0.9), *((p, 0.5 - j / 10) for j, (p, _) in enumerate(noise))]
    return lists


def test_tuning_moves_weight_to_the_engine_that_finds_the_evidence():
    lists = _lists(dense_first=True)
    tried = search(QRELS, lists)
    assert {family(t["fusion"]) for t in tried} == {"rrf", "wsum min-max", "wsum zmuv"}
    chosen = best(tried)
    fusion = Fusion.parse(chosen["fusion"])
    assert fusion.weights["dense"] > fusion.weights["bm25"] and chosen["score"] == 1.0
    assert product_score(fusion, QRELS, lists) == chosen["score"]


def test_equal_scores_keep_plain_rrf():
    tried = search(QRELS, _lists(dense_first=False))  # both engines rank the evidence first: every config ties
    assert best(tried)["fusion"] == "rrf:k=60,bm25=0.5,dense=0.5"
