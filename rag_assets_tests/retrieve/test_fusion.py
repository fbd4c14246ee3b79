from rag_assets.retrieve.fusion import children_to_parents, rrf


def test_children_collapse_to_parents_keeping_best_child():
    hits = [
        {"parent_id": "A", "child_id": "a2"},
        {"parent_id": "B", "child_id": "b1"},
        {"parent_id": "A", "child_id": "a1"},
    ]
    parents = children_to_parents(hits)
    assert [p["parent_id"] for p in parents] == ["A", "B"]
    assert parents[0]["child_id"] == "a2"


def test_rrf_one_vote_per_parent_per_engine():
    fused = rrf({"bm25": [{"parent_id": "A"}, {"parent_id": "B"}], "dense": [{"parent_id": "B"}, {"parent_id": "C"}]}, k=60)
    scores = {p: s for p, s, _ in fused}
    assert fused[0][0] == "B"
    assert abs(scores["B"] - (1 / 62 + 1 / 61)) < 1e-12
    assert abs(scores["A"] - 1 / 61) < 1e-12
    assert fused[0][2] == {"bm25": 2, "dense": 1}
