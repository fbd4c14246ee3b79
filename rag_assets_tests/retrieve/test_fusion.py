import pytest

from rag_assets.retrieve.fusion import Fusion, children_to_parents
from rag_assets.retrieve.knowledge_base import ChildHit


def _unscored(rankings):
    return {engine: [(p, 0.0) for p in ranking] for engine, ranking in rankings.items()}


def test_children_collapse_to_parents_keeping_best_child():
    hits = [ChildHit("a2", "A", "d", "v", 3.0), ChildHit("b1", "B", "d", "v", 2.0), ChildHit("a1", "A", "d", "v", 1.0)]
    parents = children_to_parents(hits)
    assert [p.parent_id for p in parents] == ["A", "B"]
    assert parents[0].child_id == "a2"


def test_rrf_one_vote_per_parent_per_engine():
    fused = Fusion("rrf", k=60).fuse(_unscored({"bm25": ["A", "B"], "dense": ["B", "C"]}))
    scores = {p: s for p, s, _ in fused}
    assert fused[0][0] == "B"
    assert abs(scores["B"] - (1 / 62 + 1 / 61)) < 1e-12
    assert abs(scores["A"] - 1 / 61) < 1e-12
    assert fused[0][2] == {"bm25": 2, "dense": 1}


def test_weighted_rrf_scales_each_engine_vote():
    fused = Fusion("rrf", k=10, weights={"bm25": 1.0, "dense": 0.5}).fuse(
        _unscored({"bm25": ["A", "B"], "dense": ["B", "A"]})
    )
    scores = {p: s for p, s, _ in fused}
    assert abs(scores["A"] - (1 / 11 + 0.5 / 12)) < 1e-12
    assert fused[0][0] == "A"


@pytest.mark.parametrize("norm,ranx_norm", [("min-max", "min-max"), ("zmuv", "zmuv")])
def test_convex_combination_matches_ranx(norm, ranx_norm):
    """The product's fusion gives the scores ranx's fuse gives, so weights tuned with ranx
    mean the same thing at query time."""
    from ranx import Run, fuse

    bm25 = [("A", 12.0), ("B", 7.5), ("C", 3.0), ("D", 1.0)]
    dense = [("C", 0.91), ("A", 0.88), ("E", 0.70)]
    fusion = Fusion("wsum", norm=norm, weights={"bm25": 0.7, "dense": 0.3})
    ours = {p: s for p, s, _ in fusion.fuse({"bm25": bm25, "dense": dense})}
    theirs = fuse(
        [Run({"q": dict(bm25)}), Run({"q": dict(dense)})], norm=ranx_norm, method="wsum", params={"weights": [0.7, 0.3]}
    )["q"]
    assert set(ours) == set(theirs)
    for parent, score in theirs.items():
        assert ours[parent] == pytest.approx(score, abs=1e-9)


def test_spec_round_trips_and_rejects_unknown_methods():
    for spec in ("rrf:k=60,bm25=1,dense=1", "rrf:k=10,bm25=1,dense=0.3", "wsum:norm=zmuv,bm25=0.6,dense=0.4"):
        assert Fusion.parse(spec).spec() == spec
    assert Fusion.parse("rrf") == Fusion()
    with pytest.raises(ValueError):
        Fusion.parse("borda")
    with pytest.raises(ValueError):
        Fusion.parse("wsum:norm=softmax")
