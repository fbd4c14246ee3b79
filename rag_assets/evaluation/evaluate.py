"""One evaluation end to end over a store that is already built: rank with every engine,
score, and write the run folder. Building the store is the orchestrator's job (the corpus's
own ingestion assets); this module only reads it.

    result = evaluate("scifact", settings)                    # settings.store: the corpus's store
    result = evaluate("scifact", settings, EvalOptions(queries=30, distractors=150))
    result = evaluate("golden-sample", settings, EvalOptions(store=existing_store))

A document of the collection that failed to ingest (``failed_documents``) is not served;
a question whose evidence lies in it stays judged and counts as a miss.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from pydantic import BaseModel, ConfigDict

from rag_assets.embedding import get_embedder
from rag_assets.evaluation import context as context_mod
from rag_assets.evaluation import metrics as m
from rag_assets.evaluation import provenance, reporting, targets
from rag_assets.evaluation.engines import DEPTH, RERANK_DEPTH, QueryRequest, reference_bm25_run, run_engines
from rag_assets.evaluation.evidence import TextUnit, document_matches, relevant_units
from rag_assets.evaluation.questions import load_questions
from rag_assets.evaluation.splits import check_split, in_split, queries_in_split
from rag_assets.hashing import sha256_file
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.settings import Settings
from rag_assets.store import KnowledgeStore


class EvalOptions(BaseModel):
    """The options of an evaluation run: the CLI's flags, the Dagster asset's run config
    (rag_assets/defs/evaluation/assets.py: EvalConfig) and evaluate()'s argument."""

    model_config = ConfigDict(extra="forbid")

    queries: int = 0  # benchmarks: evaluate a slice of this many queries (0 = all)
    distractors: int = 0  # slice: documents added besides the judged ones
    store: str = ""  # evaluate this existing knowledge store as it is (no ingestion)
    depth: int = DEPTH  # units ranked per engine
    resamples: int = m.RESAMPLES  # bootstrap resamples (≥ 1,000)
    seed: int = m.SEED  # bootstrap seed
    context_k: int = context_mod.CONTEXT_K  # parents given to the model (context measure)
    reference: bool = True  # benchmarks: also run the protocol reference BM25
    runs_dir: str = ""  # default: $RAG_ASSETS_EVAL_RUNS or evaluations/runs
    split: str = ""  # golden sets: "" = every question, "dev" or "test" (rag_assets/evaluation/splits.py)
    fusion: str = ""  # a fusion spec (rag_assets/retrieve/fusion.py) instead of settings.fusion
    run_id: str = ""  # default: <UTC time>-<label>


@dataclass
class EvalResult:
    summary: dict
    run_dir: Path
    markdown: str
    plots: dict[str, Path] = field(default_factory=dict)


class EvaluationError(RuntimeError):
    pass


def evaluate(
    name: str,
    settings: Settings,
    options: EvalOptions | None = None,
    log: Callable[[str], None] = print,
    reranker=None,
    latest_materialization=None,
    failed_documents: dict[str, dict] | None = None,
) -> EvalResult:
    """Evaluate target `name` on the store `options.store`, else `settings.store`.
    `failed_documents`: document id -> {"file", "reason"} of the collection's documents
    that failed to ingest (none are assumed otherwise)."""
    options = options or EvalOptions()
    if options.resamples < 1000:
        raise EvaluationError(f"bootstrap needs at least 1,000 resamples (got {options.resamples})")
    if name not in targets.target_names():
        raise EvaluationError(f"unknown evaluation {name!r}; known: {', '.join(targets.target_names())}")
    if not targets.available(name):
        raise EvaluationError(
            f"{name}: data not found ({targets.describe(name)}); benchmarks and the shared golden "
            "set need ../shared beside the project"
        )
    try:
        check_split(options.split)
    except ValueError as error:
        raise EvaluationError(str(error)) from error
    started = time.perf_counter()
    benchmark = None
    if targets.is_benchmark(name):
        benchmark = targets.load_target_benchmark(name, options.queries, options.distractors)
        label = f"{benchmark.label}@{options.split}" if options.split else benchmark.label
    else:
        label = f"{name}@{options.split}" if options.split else name
    if options.store:
        settings = settings.model_copy(update={"store": Path(options.store).resolve()})
    failed = dict(sorted((failed_documents or {}).items()))
    if not KnowledgeStore(settings.store).registry():
        raise EvaluationError(f"{label}: no document in {settings.store}; build it first (rag-assets eval {name})")
    for document_id, failure in failed.items():
        log(
            f"WARNING: {Path(failure.get('file') or document_id).name} failed to ingest: its questions count as "
            f"misses ({failure.get('reason') or 'no reason recorded'})"
        )

    kb = KnowledgeBase.from_settings(settings, **({"fusion": options.fusion} if options.fusion else {}))
    reranker = reranker or kb.rerank  # settings.reranker, loaded by the knowledge base
    embedder = get_embedder(settings.embedder)
    if not kb.document_ids():
        raise EvaluationError(
            f"{label}: no document of {settings.store} is published: "
            + "; ".join(f"{Path(f.get('file') or d).name}: {f.get('reason')}" for d, f in failed.items())
        )
    if benchmark is not None:
        prepared = benchmark_inputs(benchmark, kb, bool(failed), options.split)
    else:
        prepared = golden_inputs(targets.GOLDEN[name], kb, failed, options.split)
    log(
        f"{label}: {len(prepared['requests'])} queries, {len(prepared['qrels'])} judged, "
        f"{prepared['units_indexed']} units indexed"
    )

    runs = run_engines(
        kb,
        prepared["requests"],
        depth=options.depth,
        unit_of=prepared["unit_of"],
        reranker=reranker,
        progress=lambda done, total: log(f"ranked {done}/{total} queries"),
    )
    ranked = dict(runs.units)
    engine_info = {e: {"seconds": round(s, 3)} for e, s in runs.seconds.items()}
    if benchmark is not None and options.reference:
        ranked["bm25_reference"], engine_info["bm25_reference"] = reference_bm25_run(
            benchmark, {r.qid: r.text for r in prepared["requests"]}, options.depth
        )

    qrels = prepared["qrels"]
    scores = m.score_engines(qrels, ranked)
    summary_metrics = m.summarize(scores, options.resamples, options.seed)
    compare_dict, compare_table = m.compare_report(
        qrels, ranked, permutations=max(options.resamples, 1000), seed=options.seed
    )
    counts = m.bootstrap_counts(len(scores.qids), options.resamples, options.seed)
    context_per_query = context_mod.context_measure(
        runs.hybrid_parents,
        prepared["evidence_units"],
        lambda pid: kb.parent(pid)["text"],
        embedder.count_tokens,
        options.context_k,
    )
    context_summary = (
        context_mod.summarize_context({q: context_per_query[q] for q in scores.qids}, counts, options.context_k)
        if scores.qids
        else None
    )
    breakdowns = {
        key: m.breakdown(scores, labels, options.resamples, options.seed) for key, labels in prepared["labels"].items()
    }

    summary = {
        **reporting.run_header(
            name, label, "benchmark" if benchmark is not None else "golden", options.run_id, label, options.runs_dir
        ),
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
            "retrieval": kb.retrieval_config(),
            "context_k": options.context_k,
            "context_candidates_per_engine": kb.candidates,
            "slice": benchmark.slice if benchmark is not None else None,
            "engines": {**engine_info},
            "reranker": (getattr(reranker, "name", None) or getattr(reranker, "__name__", None) or repr(reranker))
            if reranker
            else None,
            "rerank_depth": RERANK_DEPTH if reranker else None,
            "answer_metrics": "not computed (no LLM answering configured for evaluation)",
        },
        "counts": {
            "queries": len(prepared["requests"]),
            "judged": len(qrels),
            "unjudged": [r.qid for r in prepared["requests"] if r.qid not in qrels],
            "unmatched_evidence": prepared["unmatched"],
            "failed_documents": [{"document": d, **f} for d, f in failed.items()],
            "questions_on_failed_documents": prepared["on_failed"],
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
    run_dir = Path(summary["run_dir"])
    reporting.write_run(run_dir, summary, per_question, compare_table)
    plots = {key: run_dir / file for key, file in summary["files"]["plots"].items()}
    return EvalResult(summary, run_dir, reporting.markdown_table(summary), plots)


def golden_inputs(
    target: targets.GoldenTarget, kb: KnowledgeBase, failed: dict[str, dict] | None = None, split: str = ""
) -> dict:
    questions = in_split(load_questions(target.questions_path), split)
    failed_files = {d: (f.get("file") or "", Path(f.get("file") or d).name) for d, f in (failed or {}).items()}
    documents = {
        d: (kb.document(d).get("original_path", ""), kb.document(d).get("file_name", "")) for d in kb.document_ids()
    }
    # A section reads with its own heading ("1. Délai d'attente" + "Néant."): match both.
    units = [
        TextUnit(p["parent_id"], p["document_id"], "\n".join([*p["heading_path"][-1:], p["text"]]))
        for p in kb.iter_parents()
    ]
    qrels, evidence_units, unmatched, on_failed = {}, {}, [], []
    for question in questions:
        if not question.judged:
            continue
        found = relevant_units(list(question.evidence), units, documents)
        # Evidence in a document that failed to ingest: a unit no engine can return, so the
        # question stays judged and scores zero for that evidence instead of leaving the set.
        unavailable = {
            item: [
                f"unavailable:{d}"
                for d, (path, name) in failed_files.items()
                if document_matches(item.document, path, name)
            ]
            for item in question.evidence
        }
        for item, holders in found.items():
            if not holders and not unavailable[item]:
                unmatched.append({"question": question.id, "document": item.document, "quote": item.quote})
        relevant = {pid for holders in found.values() for pid in holders}
        missing = {unit for units_ in unavailable.values() for unit in units_}
        if missing:
            on_failed.append(question.id)
        if relevant or missing:
            qrels[question.id] = {pid: 1 for pid in sorted(relevant | missing)}
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
            "split": split or "all",
            "questions_sha256": sha256_file(target.questions_path),
            "corpus_sha256": provenance.combined(sorted(kb.document(d).get("sha256", "") for d in kb.document_ids())),
            "documents": len(kb.document_ids()),
        },
        "extra_counts": {
            "traps": sum(q.trap is not None for q in questions),
            "out_of_corpus": sum(not q.judged for q in questions),
        },
        "on_failed": on_failed,
    }


def benchmark_inputs(benchmark, kb: KnowledgeBase, any_failed: bool = False, split: str = "") -> dict:
    record_of = {p["parent_id"]: p.get("record_id") for p in kb.iter_parents()}
    parents_of: dict[str, set[str]] = {}
    for pid, record in record_of.items():
        if record is not None:
            parents_of.setdefault(record, set()).add(pid)
    qrels = benchmark.positive_qrels()
    kept = set(queries_in_split(list(benchmark.queries), split))
    qrels = {q: docs for q, docs in qrels.items() if docs and q in kept}
    requests = [QueryRequest(qid, benchmark.queries[qid]) for qid in sorted(qrels)]
    evidence_units = {q: [parents_of.get(doc, set()) for doc in docs] for q, docs in qrels.items()}
    absent = {r["_id"] for r in benchmark.corpus} - set(parents_of)
    missing = len(absent)
    # qrels keep every judged record: one held by a failed shard is simply never retrieved (a miss)
    on_failed = sorted(q for q, docs in qrels.items() if set(docs) & absent) if any_failed else []
    return {
        "on_failed": on_failed,
        "requests": requests,
        "qrels": qrels,
        "evidence_units": evidence_units,
        "unit_of": record_of.get,
        "units_indexed": len(parents_of),
        "unmatched": [],
        "questions": {},
        "labels": {},
        "dataset": {
            "benchmark": benchmark.name,
            "folder": benchmark.spec.folder,
            "sha256": benchmark.checksums,
            "records": len(benchmark.corpus),
            "slice": benchmark.slice,
            "split": split or "all",
        },
        "extra_counts": {"records": len(benchmark.corpus), "records_without_parent": missing},
    }


def _per_question_rows(
    prepared: dict, scores: m.EngineScores, ranked: dict, context: dict, given: dict[str, list[str]]
) -> list[dict]:
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
                "context_parent_ids": given.get(request.qid, [])
                if engine == "hybrid"
                else [],  # what the model is given
            }
            if question is not None:
                row.update(
                    {
                        "question_type": question.question_type,
                        "content_type": question.content_type,
                        "trap": question.trap,
                        "expected_answer": question.answer,
                    }
                )
            for metric, values in scores.scores.get(engine, {}).items():
                row[metric] = float(values[index[request.qid]]) if request.qid in index else np.nan
            if engine == "hybrid" and request.qid in context:
                row.update({k: float(v) for k, v in context[request.qid].items()})
            rows.append(row)
    return rows
