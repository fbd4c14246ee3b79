import shutil

import pytest

from rag_assets.errors import StoreMismatchError
from rag_assets.index.dense import DenseIndex
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.store import KnowledgeStore


def test_search_returns_parents_with_ranks_and_best_child(sample_kb):
    settings, _, _ = sample_kb
    hits = KnowledgeBase.open(settings.store).search("hypothèses du modèle de Mack", k=3)
    top = hits[0]
    assert "Modèle de Mack" in top.heading_path
    assert set(top.ranks) <= {"bm25", "dense"} and top.ranks
    assert top.best_child and all(c["text"] and c["text"] in top.text for c in top.best_child.values())
    assert [h.rrf_score for h in hits] == sorted((h.rrf_score for h in hits), reverse=True)


def test_metadata_filters(sample_kb):
    settings, _, _ = sample_kb
    kb = KnowledgeBase.open(settings.store)
    hits = kb.search("préavis résiliation", k=5, filters={"document_type": "amendment"})
    assert hits and {h.document_id.split("-")[0] for h in hits} == {"avenant"}
    assert kb.search("préavis résiliation", k=5, filters={"effective_from": "2030-01-01"}) == []
    with pytest.raises(ValueError, match="unknown filter"):
        kb.search("x", filters={"colour": "blue"})


def test_a_store_whose_parts_disagree_is_refused(sample_kb, tmp_path):
    settings, _, outcomes = sample_kb
    copy = tmp_path / "knowledge"
    shutil.copytree(settings.store, copy, ignore=shutil.ignore_patterns("dagster"))
    victim = outcomes[0].document_id
    DenseIndex(KnowledgeStore(copy).lancedb_dir).delete_document(victim)
    with pytest.raises(StoreMismatchError, match=victim):
        KnowledgeBase.open(copy)


def test_missing_store_has_a_clear_message(tmp_path):
    with pytest.raises(FileNotFoundError, match="rag-assets ingest"):
        KnowledgeBase.open(tmp_path / "nowhere")
