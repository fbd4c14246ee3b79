from rag_assets.retrieve.fusion import children_to_parents, rrf
from rag_assets.retrieve.knowledge_base import ChildHit


def test_children_collapse_to_parents_keeping_best_child():
    hits = [ChildHit("a2", "A", "d", "v", 3.0), ChildHit("b1", "B", "d", "v", 2.0), ChildHit("a1", "A", "d", "v", 1.0)]
    parents = children_to_parents(hits)
    assert [p.parent_id for p in parents] == ["A", "B"]
    assert parents[0].child_id == "a2"


def test_rrf_one_vote_per_parent_per_engine():
    fused = rrf({"bm25": ["A", "B"], "dense": ["B", "C"]}, k=60)
    scores = {p: s for p, s, _ in fused}
    assert fused[0][0] == "B"
    assert abs(scores["B"] - (1 / 62 + 1 / 61)) < 1e-12
    assert abs(scores["A"] - 1 / 61) < 1e-12
    assert fused[0][2] == {"bm25": 2, "dense": 1}


def test_weighted_rrf_scales_each_engine_vote():
    fused = rrf({"bm25": ["A", "B"], "dense": ["B", "A"]}, k=10, weights={"bm25": 1.0, "dense": 0.5})
    scores = {p: s for p, s, _ in fused}
    assert abs(scores["A"] - (1 / 11 + 0.5 / 12)) < 1e-12
    assert fused[0][0] == "A"
