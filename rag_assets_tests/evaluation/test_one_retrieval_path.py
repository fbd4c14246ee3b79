"""Evaluation measures the product's own retrieval: `search()` and the evaluation engines
give the same parents, in the same order."""

from rag_assets.client import KnowledgeBase
from rag_assets.evaluation.engines import QueryRequest, run_engines

QUESTIONS = [
    "franchise inondation zone A",
    "préavis de résiliation du contrat MX-200",
    "« la franchise est portée au double »",
]


def test_search_and_evaluation_rank_the_same_parents(sample_kb):
    settings, _, _ = sample_kb
    kb = KnowledgeBase.open(settings.store)
    runs = run_engines(
        kb, [QueryRequest(str(i), q) for i, q in enumerate(QUESTIONS)], depth=10, candidates=kb.candidates
    )
    for i, question in enumerate(QUESTIONS):
        searched = [hit.parent_id for hit in kb.search(question, k=10)]
        assert runs.units["hybrid"][str(i)][: len(searched)] == searched, question
        assert runs.hybrid_parents[str(i)][:10] == searched


def test_trace_holds_each_engine_and_the_fusion(sample_kb):
    settings, _, _ = sample_kb
    trace = KnowledgeBase.open(settings.store).retrieve("franchise inondation zone A")
    assert trace.query.language == "fr" and "inond" in trace.query.terms
    assert trace.children["bm25"] and trace.children["dense"]
    assert trace.ranking("hybrid")[0] in set(trace.ranking("bm25")) | set(trace.ranking("dense"))
    assert set(trace.seconds) >= {"query_embedding", "bm25", "dense", "fusion"}
