"""Fusion tuned on the dev split of a golden set, with ranx's `optimize_fusion`, never on test.

Searched, over the product's own per-engine parent rankings (`KnowledgeBase.retrieve`,
with the configured scope/thesaurus/acronyms), by nDCG@10 on dev:

* weighted RRF: each engine's list turned into 1 / (k + rank), then ranx's ``wsum`` weight
  grid (weights sum to 1; ranx has no weighted RRF of its own) for every k of ``RRF_KS``;
* convex combination of normalized scores: ranx's ``wsum`` over min-max and z-score
  (``zmuv``) normalized engine scores.

ranx keeps the last of equal scores; we break ties towards plain RRF (equal weights,
k = 60), the configuration that needs no tuning, so a tie never moves the default. The
winner is then re-scored with the product's `Fusion.fuse` (phrase lead aside) to check that
the product computes what ranx tuned.

    report = tune_fusion("golden-insurance", settings, store="/path/to/store")
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

from rag_assets.evaluation import metrics as m
from rag_assets.evaluation import provenance, targets
from rag_assets.evaluation.engines import DEPTH
from rag_assets.evaluation.evaluate import golden_inputs
from rag_assets.retrieve.fusion import PLAIN_RRF, Fusion
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.settings import PROJECT_ROOT, Settings

RRF_KS = (1, 5, 10, 20, 30, 40, 60, 80, 100)
NORMS = ("min-max", "zmuv")
STEP = 0.05
METRIC = "ndcg@10"
ENGINES = ("bm25", "dense")


def tuning_path(name: str) -> Path:
    return PROJECT_ROOT / "evaluations" / f"fusion-tuning-{name}.json"


def engine_lists(kb: KnowledgeBase, requests, depth: int = DEPTH) -> dict[str, dict[str, list[tuple[str, float]]]]:
    """engine -> qid -> [(parent id, engine score)] best first, as the product retrieves them."""
    lists: dict[str, dict[str, list[tuple[str, float]]]] = {e: {} for e in ENGINES}
    for request in requests:
        trace = kb.retrieve(request.text, groups=list(request.groups), candidates=2 * depth)
        for engine in ENGINES:
            lists[engine][request.qid] = [(h.parent_id, h.score) for h in trace.parents[engine]][:depth]
    return lists


def _run(per_query: dict[str, list[tuple[str, float]]], qids: list[str], rrf_k: int | None = None):
    from ranx import Run

    # a query an engine found nothing for still needs an entry; ranx wants one score at least
    run = {}
    for q in qids:
        ranking = per_query.get(q) or [("∅", 0.0)]
        run[q] = {
            p: (1.0 / (rrf_k + rank) if rrf_k is not None else score)
            for rank, (p, score) in enumerate(ranking, start=1)
        }
    return Run(run)


def _preference(fusion: Fusion) -> tuple:
    """Among equal dev scores: closest to plain RRF first."""
    balance = abs(fusion.weights["bm25"] - fusion.weights["dense"])
    return (fusion.method != "rrf", balance, abs(fusion.k - PLAIN_RRF.k) if fusion.method == "rrf" else 0)


def search(qrels: dict[str, dict[str, int]], lists: dict, metric: str = METRIC, step: float = STEP) -> list[dict]:
    """Every configuration ranx tried, as {"fusion": spec, "score": dev metric}."""
    from ranx import optimize_fusion

    qids = sorted(qrels)
    ranx_qrels = m.as_ranx_qrels({q: qrels[q] for q in qids})
    tried: list[dict] = []

    def record(report, make):
        for config, score in zip(report.configs, report.results):
            # "(0.3, 0.7)", or "(np.float64(0.3), np.float64(0.7))" under NumPy 2
            weights = [float(w) for w in re.findall(r"\d+(?:\.\d+)?(?![\d(])", config.replace("float64", ""))]
            tried.append({"fusion": make(dict(zip(ENGINES, weights))).spec(), "score": float(score)})

    for k in RRF_KS:
        runs = [_run(lists[e], qids, rrf_k=k) for e in ENGINES]
        _, report = optimize_fusion(
            ranx_qrels,
            runs,
            norm=None,
            method="wsum",
            metric=metric,
            step=step,
            show_progress=False,
            return_optimization_report=True,
        )
        record(report, lambda w, k=k: Fusion("rrf", k=k, weights=w))
    for norm in NORMS:
        runs = [_run(lists[e], qids) for e in ENGINES]
        _, report = optimize_fusion(
            ranx_qrels,
            runs,
            norm=norm,
            method="wsum",
            metric=metric,
            step=step,
            show_progress=False,
            return_optimization_report=True,
        )
        record(report, lambda w, norm=norm: Fusion("wsum", norm=norm, weights=w))
    return tried


def family(spec: str) -> str:
    """ "rrf", "wsum min-max" or "wsum zmuv"."""
    fusion = Fusion.parse(spec)
    return fusion.method if fusion.method == "rrf" else f"wsum {fusion.norm}"


def best(tried: list[dict], method: str | None = None) -> dict:
    """The best dev score (of one family, or overall); ties go to the closest to plain RRF."""
    pool = [t for t in tried if method is None or family(t["fusion"]) == method]
    return min(pool, key=lambda t: (-round(t["score"], 9), _preference(Fusion.parse(t["fusion"]))))


def product_score(fusion: Fusion, qrels: dict, lists: dict, metric: str = METRIC) -> float:
    """The metric of the product's own fusion of the same lists (checks ranx and us agree)."""
    ranked = {q: [p for p, _, _ in fusion.fuse({e: lists[e].get(q, []) for e in ENGINES})] for q in qrels}
    return float(m.per_query(qrels, ranked, (metric,))[metric].mean())


def tune_fusion(name: str, settings: Settings, store: str = "", log=print, write: bool = True) -> dict:
    """Tune on the dev split of golden set ``name``; write evaluations/fusion-tuning-<name>.json."""
    if name not in targets.GOLDEN:
        raise ValueError(f"fusion is tuned on a golden set's dev split ({', '.join(targets.GOLDEN)}), not {name!r}")
    if store:
        settings = settings.model_copy(update={"store": Path(store).resolve()})
    kb = KnowledgeBase.from_settings(settings, reranker=None)
    prepared = golden_inputs(targets.GOLDEN[name], kb, split="dev")
    qrels = prepared["qrels"]
    log(f"{name} dev: {len(qrels)} judged questions; retrieving ({kb.retrieval_config()})")
    lists = engine_lists(kb, [r for r in prepared["requests"] if r.qid in qrels])
    tried = search(qrels, lists)
    plain = next(
        t for t in tried if t["fusion"] == Fusion("rrf", k=PLAIN_RRF.k, weights={"bm25": 0.5, "dense": 0.5}).spec()
    )
    winners = {method: best(tried, method) for method in ("rrf", *(f"wsum {norm}" for norm in NORMS))}
    chosen = best(tried)
    report = {
        "target": name,
        "split": "dev",
        "questions": len(qrels),
        "metric": METRIC,
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "store": str(settings.store),
        "code": provenance.code_version().get("git_commit"),
        "retrieval": {k: v for k, v in kb.retrieval_config().items() if k != "fusion"},
        "grid": {"rrf_k": list(RRF_KS), "norms": list(NORMS), "weight_step": STEP},
        "plain_rrf": plain,
        "best_per_method": winners,
        "chosen": {**chosen, "product_score": product_score(Fusion.parse(chosen["fusion"]), qrels, lists)},
        "tried": sorted(tried, key=lambda t: -t["score"]),
    }
    for label, winner in winners.items():
        log(f"  best {label:13s} {winner['fusion']:40s} dev {METRIC} {winner['score']:.4f}")
    log(f"  plain RRF     {plain['fusion']:40s} dev {METRIC} {plain['score']:.4f}")
    log(f"chosen: {chosen['fusion']} (product's own fusion: {report['chosen']['product_score']:.4f})")
    if write:
        path = tuning_path(name)
        path.write_text(json.dumps(m.json_safe(report), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        log(f"written to {path.relative_to(PROJECT_ROOT)}")
    return report
