"""Metrics (ranx), bootstrap confidence intervals, paired differences and ranx.compare.

* Per-query scores come from ``ranx.evaluate`` (the same code as the published BEIR /
  Anserini figures use through trec_eval-compatible definitions: binary gains, nDCG with
  linear gain, recall over all judged-relevant units, MRR cut at k, hit rate at k).
* Rankings are converted to rank-derived scores (depth + 1 − rank) before ranx sees
  them, so the order we produced is the order evaluated (no tie re-ordering).
* Confidence intervals: percentile bootstrap over queries, ``resamples`` ≥ 1,000, fixed
  seed, the *same* resampled query sets for every engine, so paired differences between
  engines get their own interval (a difference whose interval excludes 0 is real).
* ``ranx.compare`` with Fisher's randomization test gives the paired test p-values.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

METRICS = (
    "ndcg@10",
    "recall@5",
    "recall@10",
    "recall@20",
    "recall@100",
    "mrr@10",
    "hit_rate@1",
    "hit_rate@5",
    "hit_rate@10",
)
HEADLINE = ("ndcg@10", "recall@5", "recall@10", "recall@100", "mrr@10", "hit_rate@5")
CURVE_K = (1, 2, 3, 5, 10, 20, 30, 50, 100)
SEED = 20240611
RESAMPLES = 2000
CONFIDENCE = 0.95


def as_ranx_run(ranked: dict[str, list[str]], qids: list[str], name: str):
    from ranx import Run

    depth = max((len(v) for v in ranked.values()), default=0)
    run = {q: {doc: float(depth + 1 - rank) for rank, doc in enumerate(ranked.get(q, []), start=1)} for q in qids}
    return Run(run, name=name)


def as_ranx_qrels(qrels: dict[str, dict[str, int]]):
    from ranx import Qrels

    return Qrels({q: {d: int(r) for d, r in docs.items()} for q, docs in qrels.items()})


def per_query(
    qrels: dict[str, dict[str, int]], ranked: dict[str, list[str]], metrics=METRICS, name: str = "run"
) -> dict[str, np.ndarray]:
    """metric → scores aligned with ``sorted(qrels)`` (queries without relevant units must
    not be in ``qrels``)."""
    from ranx import evaluate

    qids = sorted(qrels)
    run = as_ranx_run(ranked, qids, name)
    scores = evaluate(
        as_ranx_qrels({q: qrels[q] for q in qids}), run, list(metrics), return_mean=False, make_comparable=True
    )
    if len(metrics) == 1:
        scores = {metrics[0]: scores}
    order = run.get_query_ids()
    position = {q: i for i, q in enumerate(order)}
    return {m: np.asarray(v, dtype=np.float64)[[position[q] for q in qids]] for m, v in scores.items()}


def bootstrap_counts(n: int, resamples: int = RESAMPLES, seed: int = SEED) -> np.ndarray:
    """(resamples × n) multiplicities of each query in each bootstrap sample."""
    if n == 0:
        return np.zeros((resamples, 0))
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=resamples).astype(np.float64)


@dataclass
class Interval:
    mean: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict:
        return {"mean": self.mean, "ci_low": self.low, "ci_high": self.high, "n": self.n}

    def format(self, digits: int = 3) -> str:
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def interval(values: np.ndarray, counts: np.ndarray, confidence: float = CONFIDENCE) -> Interval:
    values = np.asarray(values, dtype=np.float64)
    n = len(values)
    if n == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    means = counts @ values / n
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(float(values.mean()), float(low), float(high), n)


@dataclass
class EngineScores:
    qids: list[str]
    scores: dict[str, dict[str, np.ndarray]]  # engine → metric → per-query

    @property
    def engines(self) -> list[str]:
        return list(self.scores)


def score_engines(
    qrels: dict[str, dict[str, int]], runs: dict[str, dict[str, list[str]]], metrics=METRICS
) -> EngineScores:
    qids = sorted(qrels)
    return EngineScores(qids, {engine: per_query(qrels, ranked, metrics, engine) for engine, ranked in runs.items()})


def summarize(scores: EngineScores, resamples: int = RESAMPLES, seed: int = SEED) -> dict:
    """Means with bootstrap CIs per engine and metric, and paired differences for every pair."""
    counts = bootstrap_counts(len(scores.qids), resamples, seed)
    engines = {
        engine: {metric: interval(values, counts).to_dict() for metric, values in per_metric.items()}
        for engine, per_metric in scores.scores.items()
    }
    differences = {}
    for a, b in itertools.combinations(scores.engines, 2):
        differences[f"{a} - {b}"] = {
            metric: interval(scores.scores[a][metric] - scores.scores[b][metric], counts).to_dict()
            for metric in scores.scores[a]
        }
    return {
        "engines": engines,
        "paired_differences": differences,
        "bootstrap": {"resamples": resamples, "seed": seed, "confidence": CONFIDENCE, "queries": len(scores.qids)},
    }


def compare_report(
    qrels: dict[str, dict[str, int]],
    runs: dict[str, dict[str, list[str]]],
    metrics=HEADLINE,
    permutations: int = RESAMPLES,
    seed: int = SEED,
    max_p: float = 0.05,
) -> tuple[dict, str]:
    """ranx.compare with Fisher's randomization test: (report dict, text table)."""
    from ranx import compare

    qids = sorted(qrels)
    if len(runs) < 2 or not qids:
        return {}, ""
    report = compare(
        as_ranx_qrels({q: qrels[q] for q in qids}),
        [as_ranx_run(ranked, qids, engine) for engine, ranked in runs.items()],
        list(metrics),
        stat_test="fisher",
        n_permutations=permutations,
        max_p=max_p,
        random_seed=seed % (2**31),
        make_comparable=True,
    )
    return json_safe(report.to_dict()), report.to_table()


def json_safe(value):
    """Plain JSON values: str keys, lists for tuples, Python numbers for numpy's, None for NaN."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def breakdown(
    scores: EngineScores, labels: dict[str, str], resamples: int = RESAMPLES, seed: int = SEED, metrics=HEADLINE
) -> dict:
    """label value → engine → metric → interval, over the queries carrying that label."""
    groups: dict[str, list[int]] = {}
    for index, qid in enumerate(scores.qids):
        groups.setdefault(labels.get(qid) or "none", []).append(index)
    result = {}
    for label, indices in sorted(groups.items()):
        counts = bootstrap_counts(len(indices), resamples, seed)
        result[label] = {
            engine: {m: interval(per_metric[m][indices], counts).to_dict() for m in metrics if m in per_metric}
            for engine, per_metric in scores.scores.items()
        }
    return result


def recall_curve(qrels: dict[str, dict[str, int]], runs: dict[str, dict[str, list[str]]], ks=CURVE_K) -> dict:
    """engine → {k: mean recall@k} for the recall@k plot."""
    metrics = tuple(f"recall@{k}" for k in ks)
    curve = {}
    for engine, ranked in runs.items():
        values = per_query(qrels, ranked, metrics, engine)
        curve[engine] = {
            k: float(values[f"recall@{k}"].mean()) if len(values[f"recall@{k}"]) else float("nan") for k in ks
        }
    return curve
