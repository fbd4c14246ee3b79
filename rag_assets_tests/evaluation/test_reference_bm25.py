"""The protocol reference BM25 (Lucene formula, Anserini analyzer) and the SciFact check:
BM25 flat with k1=0.9, b=0.4 must give the published Anserini nDCG@10 (0.679) ± 0.01,
which proves our qrels reading and metric match the field's."""

import pytest

from rag_assets.evaluation import metrics as m
from rag_assets.evaluation.benchmarks import load_benchmark
from rag_assets.evaluation.reference_bm25 import (
    AnseriniEnglishAnalyzer,
    ReferenceBM25,
    ReferenceBM25Config,
    build_reference,
    lucene_length,
)


def test_lucene_length_norm_is_exact_below_24_and_keeps_4_significant_bits_above():
    assert [lucene_length(n) for n in range(24)] == list(range(24))
    assert lucene_length(100) == 96 and lucene_length(1000) == 984
    assert all(lucene_length(n) <= n for n in range(1, 5000))


def test_anserini_analyzer():
    analyzer = AnseriniEnglishAnalyzer()
    tokens = analyzer("The cat's running in 3.5 mg and 1,000 cells; RNA-seq wasn't")
    assert "the" not in tokens and "in" not in tokens and "and" not in tokens  # Lucene stop words
    assert tokens == ["cat", "run", "3.5", "mg", "1,000", "cell", "rna", "seq", "wasn't"]  # possessive, Porter, UAX#29


def test_reference_bm25_ranks_by_lucene_formula():
    index = ReferenceBM25(AnseriniEnglishAnalyzer(), ReferenceBM25Config(k1=0.9, b=0.4)).index(
        [("a", "insulin resistance in obese mice"), ("b", "insulin"), ("c", "mice mice mice")]
    )
    ranked = [doc for doc, _ in index.search("insulin resistance")]
    assert ranked == ["a", "b"]
    assert index.search("zebrafish") == []


@pytest.mark.slow  # a benchmark
def test_scifact_bm25_flat_matches_anserini(shared_dir):
    benchmark = load_benchmark("scifact", shared_dir / "benchmarks")
    assert len(benchmark.queries) == 300 and len(benchmark.corpus) == 5183
    assert sum(len(d) for d in benchmark.qrels.values()) == 339
    reference = build_reference(benchmark.corpus, "en", ReferenceBM25Config(k1=0.9, b=0.4))
    ranked = {qid: [doc for doc, _ in reference.search(text, 1000)] for qid, text in benchmark.queries.items()}
    ndcg = float(m.per_query(benchmark.positive_qrels(), ranked, ("ndcg@10",))["ndcg@10"].mean())
    published = benchmark.spec.published["bm25_reference"]["ndcg@10"]
    assert abs(ndcg - published) <= 0.01, f"nDCG@10 {ndcg:.4f} vs published {published}"


@pytest.mark.slow  # a benchmark
def test_cacm_bm25_matches_anserini_regression(shared_dir):
    benchmark = load_benchmark("cacm", shared_dir / "benchmarks")
    reference = build_reference(benchmark.corpus, "en", ReferenceBM25Config(k1=0.9, b=0.4))
    ranked = {qid: [doc for doc, _ in reference.search(text, 1000)] for qid, text in benchmark.queries.items()}
    scores = m.per_query(benchmark.positive_qrels(), ranked, ("map", "precision@30"))
    assert abs(scores["map"].mean() - 0.3123) <= 0.01
    assert abs(scores["precision@30"].mean() - 0.1942) <= 0.01
