"""One evaluation end to end: prepare the target's store (through the ingestion assets),
rank with every engine, score, and write the run folder.

    result = evaluate("scifact", settings, ingest_collection)            # full benchmark
    result = evaluate("scifact", settings, ingest_collection, EvalOptions(queries=30, distractors=150))
    result = evaluate("golden-sample", settings, None, EvalOptions(store=existing_store))
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.embedding import get_embedder
from rag_assets.hashing import sha256_file
from rag_assets.evaluation import context as context_mod
from rag_assets.evaluation import metrics as m
from rag_assets.evaluation import provenance, reporting, targets
from rag_assets.evaluation.engines import DEPTH, RERANK_DEPTH, QueryRequest, reference_bm25_run, run_engines
from rag_assets.evaluation.evidence import TextUnit, relevant_units
from rag_assets.evaluation.questions import load_questions
from rag_assets.settings import Settings
from rag_assets.store import KnowledgeStore


@dataclass
class EvalOptions:
    queries: int = 0  # benchmarks: evaluate a slice of this many queries (0 = all)
    distractors: int = 0  # slice: documents added besides the judged ones
    store: str = ""  # evaluate this existing knowledge store as it is (no ingestion)
    depth: int = DEPTH
    resamples: int = m.RESAMPLES
    seed: int = m.SEED
    context_k: int = context_mod.CONTEXT_K
    reference: bool = True  # benchmarks: also run the protocol reference BM25
    runs_dir: str = ""
    stores_dir: str = ""
    run_id: str = ""


@dataclass
class EvalResult:
    summary: dict
    run_dir: Path
    markdown: str
    plots: dict[str, Path] = field(default_factory=dict)


class EvaluationError(RuntimeError):
    pass


def _prepare_store(files: list[Path], settings: Settings, ingest_collection, log) -> list:
    """Ingest the collection (``ingest_collection(files, settings)``, the orchestrator's
    ingestion); the documents it could not ingest are left out and listed."""
    if ingest_collection is None:
        raise EvaluationError("building an evaluation store needs the ingestion (run it through Dagster)")
    started = time.perf_counter()
    outcomes = ingest_collection(files, settings)
    failed = [o for o in outcomes if o.status == "failed"]
    if len(failed) == len(outcomes):
        raise EvaluationError("no document of the collection could be ingested: "
                              + "; ".join(f"{o.path.name}: {o.message}" for o in failed))
    for outcome in failed:  # evaluated without it; listed in the summary
        log(f"WARNING: {outcome.path.name} failed to ingest and is left out: {outcome.message}")
    log(f"store ready in {time.perf_counter() - started:.0f} s: {len(outcomes) - len(failed)} of {len(outcomes)} documents")
    return outcomes


def _run_id(label: str) -> str:
    return f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%SZ}-{label}"


def evaluate(
    name: str,
    base_settings: Settings,
    ingest_collection=None,
    options: EvalOptions | None = None,
    log: Callable[[str], None] = print,
    reranker=None,
    latest_materialization=None,
) -> EvalResult:
    options = options or EvalOptions()
    if options.resamples < 1000:
        raise EvaluationError(f"bootstrap needs at least 1,000 resamples (got {options.resamples})")
    if name not in targets.target_names():
        raise EvaluationError(f"unknown evaluation {name!r}; known: {', '.join(targets.target_names())}")
    if not targets.available(name):
        raise EvaluationError(f"{name}: data not found ({targets.describe(name)}); benchmarks and the shared golden "
                              "set need ../shared beside the project")
    started = time.perf_counter()
    stores_root = Path(options.stores_dir).resolve() if options.stores_dir else None
    benchmark = None
    if targets.is_benchmark(name):
        benchmark = targets.load_target_benchmark(name, options.queries, options.distractors)
        label = benchmark.label
    else:
        label = name
    settings = targets.store_settings(base_settings, label, stores_root)
    failed_documents: list[dict] = []
    if options.store:
        settings = dataclass_replace(settings, store=Path(options.store).resolve())
    else:
        if benchmark is not None:
            files = targets.write_shards(benchmark, settings.store.parent / "corpus")
        else:
            files = targets.GOLDEN[name].corpus_files()
        log(f"{label}: preparing {len(files)} document(s) in {settings.store}")
        outcomes = _prepare_store(files, settings, ingest_collection, log)
        failed_documents = [{"file": str(o.path), "reason": o.message} for o in outcomes if o.status == "failed"]

    kb = KnowledgeBase(KnowledgeStore(settings.store), settings.embedder, settings.candidates_per_engine, settings.rrf_k)
    if reranker is None and getattr(settings, "reranker", None):
        from rag_assets.retrieve.reranking import reranker_from_spec

        reranker = reranker_from_spec(settings.reranker)
    embedder = get_embedder(settings.embedder)
    if benchmark is not None:
        prepared = _benchmark_inputs(benchmark, kb)
    else:
        prepared = _golden_inputs(targets.GOLDEN[name], kb)
    log(f"{label}: {len(prepared['requests'])} queries, {len(prepared['qrels'])} judged, "
        f"{prepared['units_indexed']} units indexed")

    runs = run_engines(kb, prepared["requests"], depth=options.depth, unit_of=prepared["unit_of"], reranker=reranker,
                       progress=lambda done, total: log(f"ranked {done}/{total} queries"))
    ranked = dict(runs.units)
    engine_info = {e: {"seconds": round(s, 3)} for e, s in runs.seconds.items()}
    if benchmark is not None and options.reference:
        ranked["bm25_reference"], engine_info["bm25_reference"] = reference_bm25_run(
            benchmark, {r.qid: r.text for r in prepared["requests"]}, options.depth)

    qrels = prepared["qrels"]
    scores = m.score_engines(qrels, ranked)
    summary_metrics = m.summarize(scores, options.resamples, options.seed)
    compare_dict, compare_table = m.compare_report(qrels, ranked, permutations=max(options.resamples, 1000),
                                                   seed=options.seed)
    counts = m.bootstrap_counts(len(scores.qids), options.resamples, options.seed)
    context_per_query = context_mod.context_measure(
        runs.hybrid_parents, prepared["evidence_units"], lambda pid: kb.parents[pid]["text"], embedder.count_tokens,
        options.context_k)
    context_summary = context_mod.summarize_context(
        {q: context_per_query[q] for q in scores.qids}, counts, options.context_k) if scores.qids else None
    breakdowns = {
        key: m.breakdown(scores, labels, options.resamples, options.seed)
        for key, labels in prepared["labels"].items()
    }

    run_id = options.run_id or _run_id(label)
    runs_root = Path(options.runs_dir).resolve() if options.runs_dir else targets.runs_root()
    run_dir = runs_root / run_id
    summary = {
        "run_id": run_id,
        "run_dir": str(run_dir),
        "target": name,
        "label": label,
        "kind": "benchmark" if benchmark is not None else "golden",
        "description": targets.describe(name),
        "created_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "seconds": None,
        "versions": {
            "code": provenance.code_version(),
            "model": provenance.model_version(embedder),
            "index": provenance.index_stamps(kb, latest_materialization),
            "dataset": prepared["dataset"],
            "store": str(settings.store),
        },
        "config": {
            "depth": options.depth,
            "candidates_per_engine": 2 * options.depth,
            "rrf_k": kb.rrf_k,
            "context_k": options.context_k,
            "context_candidates_per_engine": kb.candidates,
            "slice": benchmark.slice if benchmark is not None else None,
            "engines": {**engine_info},
            "reranker": (getattr(reranker, "name", None) or getattr(reranker, "__name__", None) or repr(reranker))
            if reranker else None,
            "rerank_depth": RERANK_DEPTH if reranker else None,
            "answer_metrics": "not computed (no LLM answering configured for evaluation)",
        },
        "counts": {
            "queries": len(prepared["requests"]),
            "judged": len(qrels),
            "unjudged": [r.qid for r in prepared["requests"] if r.qid not in qrels],
            "unmatched_evidence": prepared["unmatched"],
            "failed_documents": failed_documents,
            "units_indexed": prepared["units_indexed"],
            **prepared.get("extra_counts", {}),
        },
        "metrics": summary_metrics,
        "compare": compare_dict,
        "breakdowns": breakdowns,
        "context": context_summary,
        "recall_curve": m.recall_curve(qrels, ranked),
        "published_reference": benchmark.spec.published if benchmark is not None else {},
    }
    given = {qid: parents[: options.context_k] for qid, parents in runs.hybrid_parents.items()}
    per_question = _per_question_rows(prepared, scores, ranked, context_per_query, given)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    reporting.write_run(run_dir, summary, per_question, compare_table)
    plots = {key: run_dir / file for key, file in summary["files"]["plots"].items()}
    return EvalResult(summary, run_dir, reporting.markdown_table(summary), plots)


def dataclass_replace(settings: Settings, **changes) -> Settings:
    import dataclasses

    return dataclasses.replace(settings, **changes)


def _golden_inputs(target: targets.GoldenTarget, kb: KnowledgeBase) -> dict:
    questions = load_questions(target.questions_path)
    documents = {d: (rec.get("original_path", ""), rec.get("file_name", "")) for d, rec in kb.documents.items()}
    # A section reads with its own heading ("1. Délai d'attente" + "Néant."): match both.
    units = [TextUnit(pid, p["document_id"], "\n".join([*p["heading_path"][-1:], p["text"]]))
             for pid, p in kb.parents.items()]
    qrels, evidence_units, unmatched = {}, {}, []
    for question in questions:
        if not question.judged:
            continue
        found = relevant_units(list(question.evidence), units, documents)
        for item, holders in found.items():
            if not holders:
                unmatched.append({"question": question.id, "document": item.document, "quote": item.quote})
        relevant = {pid for holders in found.values() for pid in holders}
        if relevant:
            qrels[question.id] = {pid: 1 for pid in sorted(relevant)}
            evidence_units[question.id] = [set(found[item]) for item in question.evidence]
    requests = [QueryRequest(q.id, q.question, q.groups) for q in questions]
    judged = [q for q in questions if q.id in qrels]
    return {
        "requests": requests,
        "qrels": qrels,
        "evidence_units": evidence_units,
        "unit_of": None,
        "units_indexed": len(units),
        "unmatched": unmatched,
        "questions": {q.id: q for q in questions},
        "labels": {
            "question_type": {q.id: q.question_type for q in judged},
            "content_type": {q.id: q.content_type for q in judged},
            "trap": {q.id: q.trap or "none" for q in judged},
        },
        "dataset": {
            "questions_file": target.questions,
            "questions_sha256": sha256_file(target.questions_path),
            "corpus_sha256": provenance.combined(sorted(rec.get("sha256", "") for rec in kb.documents.values())),
            "documents": len(kb.documents),
        },
        "extra_counts": {"traps": sum(q.trap is not None for q in questions),
                         "out_of_corpus": sum(not q.judged for q in questions)},
    }


def _benchmark_inputs(benchmark, kb: KnowledgeBase) -> dict:
    record_of = {pid: p.get("record_id") for pid, p in kb.parents.items()}
    parents_of: dict[str, set[str]] = {}
    for pid, record in record_of.items():
        if record is not None:
            parents_of.setdefault(record, set()).add(pid)
    qrels = benchmark.positive_qrels()
    qrels = {q: docs for q, docs in qrels.items() if docs}
    requests = [QueryRequest(qid, benchmark.queries[qid]) for qid in sorted(qrels)]
    evidence_units = {q: [parents_of.get(doc, set()) for doc in docs] for q, docs in qrels.items()}
    missing = len({r["_id"] for r in benchmark.corpus} - set(parents_of))
    return {
        "requests": requests,
        "qrels": qrels,
        "evidence_units": evidence_units,
        "unit_of": record_of.get,
        "units_indexed": len(parents_of),
        "unmatched": [],
        "questions": {},
        "labels": {},
        "dataset": {"benchmark": benchmark.name, "folder": benchmark.spec.folder, "sha256": benchmark.checksums,
                    "records": len(benchmark.corpus), "slice": benchmark.slice},
        "extra_counts": {"records": len(benchmark.corpus), "records_without_parent": missing},
    }


def _per_question_rows(prepared: dict, scores: m.EngineScores, ranked: dict, context: dict,
                       given: dict[str, list[str]]) -> list[dict]:
    index = {q: i for i, q in enumerate(scores.qids)}
    questions = prepared["questions"]
    rows = []
    for request in prepared["requests"]:
        question = questions.get(request.qid)
        relevant = set(prepared["qrels"].get(request.qid, {}))
        for engine, per_query in ranked.items():
            units = per_query.get(request.qid, [])
            first = next((rank for rank, u in enumerate(units, start=1) if u in relevant), None)
            row = {
                "qid": request.qid,
                "engine": engine,
                "question": request.text,
                "judged": request.qid in index,
                "relevant": len(relevant),
                "first_relevant_rank": first,
                "top10": units[:10],
                "context_parent_ids": given.get(request.qid, []) if engine == "hybrid" else [],  # what the model is given
            }
            if question is not None:
                row.update({"question_type": question.question_type, "content_type": question.content_type,
                            "trap": question.trap, "expected_answer": question.answer})
            for metric, values in scores.scores.get(engine, {}).items():
                row[metric] = float(values[index[request.qid]]) if request.qid in index else np.nan
            if engine == "hybrid" and request.qid in context:
                row.update({k: float(v) for k, v in context[request.qid].items()})
            rows.append(row)
    return rows


def options_dict(options: EvalOptions) -> dict:
    return asdict(options)
