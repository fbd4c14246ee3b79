"""Metrics against hand-computed values, bootstrap and paired differences."""

import math

import numpy as np
import pytest

from rag_assets.evaluation import metrics as m


def test_ranx_metrics_match_a_hand_computed_example():
    # q1: relevant d1, d3; ranked d2, d1, d3 → hits at ranks 2 and 3
    # q2: relevant d9; ranked d9 first.   q3: relevant d5; nothing retrieved.
    qrels = {"q1": {"d1": 1, "d3": 1}, "q2": {"d9": 1}, "q3": {"d5": 1}}
    runs = {"q1": ["d2", "d1", "d3"], "q2": ["d9", "d4"]}
    scores = m.per_query(qrels, runs, ("ndcg@10", "recall@1", "recall@5", "mrr@10", "hit_rate@1", "hit_rate@5"))
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    idcg = 1 + 1 / math.log2(3)
    assert scores["ndcg@10"] == pytest.approx([dcg / idcg, 1.0, 0.0])  # 0.6934
    assert scores["recall@1"] == pytest.approx([0.0, 1.0, 0.0])
    assert scores["recall@5"] == pytest.approx([1.0, 1.0, 0.0])
    assert scores["mrr@10"] == pytest.approx([0.5, 1.0, 0.0])
    assert scores["hit_rate@1"] == pytest.approx([0.0, 1.0, 0.0])
    assert scores["hit_rate@5"] == pytest.approx([1.0, 1.0, 0.0])


def test_rank_order_is_kept_as_given():
    # Equal scores would let an evaluator reorder; ranks become strictly decreasing scores.
    run = m.as_ranx_run({"q": ["b", "a", "c"]}, ["q"], "x")
    assert sorted(run.to_dict()["q"], key=lambda d: -run.to_dict()["q"][d]) == ["b", "a", "c"]


def test_bootstrap_is_deterministic_and_brackets_the_mean():
    values = np.linspace(0, 1, 50)
    counts = m.bootstrap_counts(50, 1000, seed=7)
    assert counts.shape == (1000, 50) and np.all(counts.sum(axis=1) == 50)
    first = m.interval(values, counts)
    again = m.interval(values, m.bootstrap_counts(50, 1000, seed=7))
    assert first == again
    assert first.low < first.mean < first.high
    assert first.mean == pytest.approx(0.5)


def test_paired_difference_of_identical_runs_is_exactly_zero_and_compare_reports():
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(12)}
    good = {f"q{i}": [f"d{i}", "x"] for i in range(12)}
    worse = {f"q{i}": ["x", f"d{i}"] if i % 2 else [f"d{i}"] for i in range(12)}
    scores = m.score_engines(qrels, {"a": good, "b": good, "c": worse})
    summary = m.summarize(scores, resamples=1000, seed=1)
    same = summary["paired_differences"]["a - b"]["ndcg@10"]
    assert same["mean"] == same["ci_low"] == same["ci_high"] == 0.0
    better = summary["paired_differences"]["a - c"]["mrr@10"]
    assert better["mean"] == pytest.approx(0.25) and better["ci_low"] > 0
    assert summary["bootstrap"]["resamples"] == 1000
    report, table = m.compare_report(qrels, {"a": good, "c": worse}, metrics=("mrr@10",), permutations=1000)
    assert report["stat_test"] == "fisher" and "c" in report["a"]["comparisons"]
    assert "MRR@10" in table


def test_breakdown_groups_queries_by_label():
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
    scores = m.score_engines(qrels, {"e": {"q1": ["d1"], "q2": ["x"], "q3": ["d3"]}})
    groups = m.breakdown(scores, {"q1": "table", "q2": "table", "q3": "text"}, resamples=1000)
    assert groups["table"]["e"]["hit_rate@5"]["mean"] == pytest.approx(0.5)
    assert groups["table"]["e"]["hit_rate@5"]["n"] == 2
    assert groups["text"]["e"]["ndcg@10"]["mean"] == pytest.approx(1.0)
