"""Reranking is pluggable: wiring only (no cross-encoder ships in a wheel here)."""

from rag_assets.client import KnowledgeBase
from rag_assets.retrieve.reranking import CrossEncoderReranker, reranker_from_spec

QUESTION = "Quelle est la franchise pour une inondation en zone A ?"


def test_reranker_is_configured_by_name(sample_kb, monkeypatch):
    settings, _, _ = sample_kb
    assert KnowledgeBase.open(settings.store).rerank is None
    monkeypatch.setenv("RAG_ASSETS_RERANKER", "BAAI/bge-reranker-v2-m3")
    reranker = KnowledgeBase.open(settings.store).rerank
    assert isinstance(reranker, CrossEncoderReranker) and reranker.name == "BAAI/bge-reranker-v2-m3"
    assert reranker._model is None, "the model loads on first use, not when the store opens"
    assert reranker_from_spec("") is None


def test_ask_takes_its_relevance_from_the_reranker(sample_kb):
    settings, _, _ = sample_kb
    kb = KnowledgeBase.open(settings.store)
    calls = []

    def scorer(value):
        def score(question, hits):
            calls.append((question, len(hits)))
            return [value for _ in hits]

        return score

    kb.rerank = scorer(0.0)
    assert kb.ask(QUESTION).refused
    kb.rerank = scorer(1.0)
    answer = kb.ask(QUESTION)
    assert not answer.refused and "5 000" in answer.render()
    assert calls and all(n > 0 for _, n in calls)
