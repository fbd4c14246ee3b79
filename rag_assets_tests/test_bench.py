"""`rag-assets bench` parts on the sample store: a store scaled from it opens and answers like
a real one, past a (forced low) ANN threshold; ingestion figures come from the run records.
Figures themselves are printed by the command, never asserted."""

from __future__ import annotations

import polars as pl

from rag_assets.benchmarking.ingestion_figures import summarize
from rag_assets.benchmarking.query_latency import dense_recall
from rag_assets.benchmarking.scaled_store import build_scaled_store, read_source
from rag_assets.retrieve.knowledge_base import KnowledgeBase


def test_scaled_store_searches_like_the_source(sample_kb, tmp_path):
    settings, instance, _ = sample_kb
    source = read_source(settings.store)
    real = sum(d.children.height for d in source)
    target = 3 * real + 5
    built = build_scaled_store(source, tmp_path / "scaled", target, ann_min_rows=2 * real)
    assert built["children"] == target and built["replicas"] == 4 and built["ann"] == "index built"

    kb = KnowledgeBase.open(tmp_path / "scaled", embedder=settings.embedder)
    assert len(kb.children) == target and kb.dense.ann_index() is not None
    copy = next(c for c in kb.children.values() if c["child_id"].endswith("~r1"))
    original = kb.children[copy["child_id"].removesuffix("~r1")]
    assert copy["contextualized"] != original["contextualized"] and copy["parent_id"] in kb.parents
    hits = kb.search("franchise inondation zone A", k=5)
    assert hits and all(h.parent_id in kb.parents for h in hits)
    vectors = [kb.dense.rows(columns=["vector"])["vector"][i].as_py() for i in (0, 7)]
    assert 0.0 < dense_recall(kb, [pl.Series(v, dtype=pl.Float32).to_numpy() for v in vectors]) <= 1.0

    from rag_assets.defs.ingestion.runs import stage_records

    summary = summarize(stage_records(instance))
    assert summary["pages"] > 0 and summary["stages"]["docling_document"]["s_per_page"] > 0
    assert summary["stages"]["dense_embeddings"]["documents"] == len(source)
