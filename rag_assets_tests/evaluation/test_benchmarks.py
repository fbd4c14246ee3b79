"""BEIR reading, slices, shards, and a record collection as one document with one parent per record."""

import json

import pytest

from rag_assets.errors import DocumentError
from rag_assets.evaluation.benchmarks import Benchmark, BenchmarkSpec, load_benchmark, read_qrels, slice_benchmark
from rag_assets.evaluation.targets import write_shards
from rag_assets.ingest.sections import build_parents
from rag_assets.ingest.sources import MEDIA_TYPES
from rag_assets.parsing.records import convert_records


def test_qrels_in_beir_and_trec_layouts(tmp_path):
    (tmp_path / "a.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\t0\n")
    (tmp_path / "b.txt").write_text("1 Q0 d1 1\n2 0 d3 2\n")
    assert read_qrels(tmp_path / "a.tsv") == {"1": {"d1": 1, "d2": 0}}
    assert read_qrels(tmp_path / "b.txt") == {"1": {"d1": 1}, "2": {"d3": 2}}


def _toy(n_docs=10):
    spec = BenchmarkSpec("toy", "toy", "q.jsonl", "qrels.tsv", "en")
    corpus = [
        {"_id": f"d{i}", "title": f"Title {i}" if i % 3 else "", "text": f"text number {i}"} for i in range(n_docs)
    ]
    queries = {f"q{i}": f"query {i}" for i in range(5)}
    qrels = {f"q{i}": {f"d{2 * i}": 1} for i in range(5)}
    return Benchmark(spec, corpus, queries, qrels)


def test_slice_keeps_judged_documents_and_is_reproducible():
    toy = _toy()
    one = slice_benchmark(toy, 2, 3)
    two = slice_benchmark(toy, 2, 3)
    assert [r["_id"] for r in one.corpus] == [r["_id"] for r in two.corpus]
    assert set(one.queries) == {"q0", "q1"} and {"d0", "d2"} <= {r["_id"] for r in one.corpus}
    assert len(one.corpus) == 5 and one.label == "toy@q2d3"


def test_shards_are_balanced_stable_and_carry_a_sidecar(tmp_path):
    toy = _toy(10)
    paths = write_shards(toy, tmp_path, shard_size=4)
    assert [p.name for p in paths] == ["toy-01-of-03.jsonl", "toy-02-of-03.jsonl", "toy-03-of-03.jsonl"]
    assert sum(len(p.read_text().splitlines()) for p in paths) == 10
    before = [p.stat().st_mtime_ns for p in paths]
    assert write_shards(toy, tmp_path, shard_size=4) == paths
    assert [p.stat().st_mtime_ns for p in paths] == before  # unchanged bytes are not rewritten
    assert "document_type: benchmark" in (tmp_path / "toy-01-of-03.jsonl.meta.yaml").read_text()
    write_shards(toy, tmp_path, shard_size=20)
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == ["toy-01-of-01.jsonl"]


def test_a_record_collection_becomes_one_parent_per_record(tmp_path):
    assert MEDIA_TYPES[".jsonl"]
    path = tmp_path / "corpus.jsonl"
    records = [
        {"_id": "r1", "title": "Table of Contents", "text": "first"},  # caption-like title
        {"_id": "r2", "title": "", "text": "second record"},  # no title
        {"_id": "r3", "title": "Same title", "text": "third"},
        {"_id": "r4", "title": "Same title", "text": "fourth"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    document = convert_records(path, "corpus.jsonl")
    parents = build_parents(document, "doc", lambda text: len(text.split()))
    assert [(p.record_id, p.text) for p in parents] == [
        ("r1", "first"),
        ("r2", "second record"),
        ("r3", "third"),
        ("r4", "fourth"),
    ]
    assert parents[0].heading_path == ["Table of Contents"] and parents[1].heading_path == ["r2"]


def test_a_bad_record_file_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n{"text": "no id"}\n')
    with pytest.raises(DocumentError, match="line 2"):
        convert_records(path, "bad.jsonl")


@pytest.mark.slow  # reads two whole benchmarks
def test_scifact_and_piaf_read_as_published(shared_dir):
    scifact = load_benchmark("scifact", shared_dir / "benchmarks")
    piaf = load_benchmark("piaf-dev", shared_dir / "benchmarks")
    assert (len(scifact.corpus), len(scifact.queries)) == (5183, 300)
    assert (len(piaf.corpus), len(piaf.queries)) == (761, 1862)
    assert all(len(docs) == 1 for docs in piaf.qrels.values())
    assert set(scifact.checksums) == {"corpus.jsonl", "queries.test.jsonl", "qrels.test.tsv"}
