"""Public retrieval benchmarks in BEIR layout, read from ``../shared/benchmarks``.

A benchmark folder holds ``corpus.jsonl`` (``_id``, ``title``, ``text``), a queries file
(``_id``, ``text``) and a qrels file, either BEIR TSV (``query-id corpus-id score`` with a
header line) or TREC (``qid 0 docid rel``). Everything is read as it is, never copied
into the repository.

``slice_benchmark`` cuts a small, reproducible sub-benchmark for CI: the first N judged
queries (sorted by id), every document they judge, plus distractors drawn with a fixed
seed from the rest of the corpus.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from rag_assets.hashing import sha256_file
from rag_assets.settings import PROJECT_ROOT

SHARED_BENCHMARKS = PROJECT_ROOT.parent / "shared" / "benchmarks"


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    folder: str  # relative to the project root, e.g. ../shared/benchmarks/scifact
    queries: str
    qrels: str
    language: str
    published: dict = field(default_factory=dict)  # reference figures (protocol checks)
    description: str = ""

    @property
    def path(self) -> Path:
        return (PROJECT_ROOT / self.folder).resolve()

    def available(self) -> bool:
        return all((self.path / name).exists() for name in ("corpus.jsonl", self.queries, self.qrels))


BENCHMARKS: dict[str, BenchmarkSpec] = {
    spec.name: spec
    for spec in (
        BenchmarkSpec(
            "scifact",
            "../shared/benchmarks/scifact",
            "queries.test.jsonl",
            "qrels.test.tsv",
            "en",
            {"bm25_reference": {"ndcg@10": 0.679}},
            "BEIR SciFact test: 5,183 abstracts, 300 claims, 339 judgments",
        ),
        BenchmarkSpec(
            "piaf-dev",
            "../shared/benchmarks/piaf-dev",
            "queries.jsonl",
            "qrels.tsv",
            "fr",
            {},
            "PIAF dev (French Wikipedia): 761 paragraphs, 1,862 questions, one relevant paragraph each",
        ),
        BenchmarkSpec(
            "cacm",
            "../shared/benchmarks/cacm",
            "queries.jsonl",
            "qrels.cacm.txt",
            "en",
            {"bm25_reference": {"map": 0.3123, "precision@30": 0.1942}},
            "CACM: 3,204 abstracts, 64 topics (52 judged)",
        ),
    )
}


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """BEIR TSV (with a ``query-id`` header) or TREC qrels; zero-score judgments are kept
    (they are judged non-relevant, which matters to no metric used here but is faithful)."""
    qrels: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.split()
            if not parts or parts[0] == "query-id":
                continue
            if len(parts) == 4:  # TREC: qid iter docid rel
                qid, _, doc, rel = parts
            elif len(parts) == 3:
                qid, doc, rel = parts
            else:
                raise ValueError(f"{path}: cannot read qrels line {line!r}")
            qrels.setdefault(qid, {})[doc] = int(rel)
    return qrels


@dataclass
class Benchmark:
    """A loaded benchmark (or a slice of one)."""

    spec: BenchmarkSpec
    corpus: list[dict]
    queries: dict[str, str]  # judged queries only (those with at least one relevant document)
    qrels: dict[str, dict[str, int]]
    slice: dict | None = None  # {"queries": N, "distractors": M, "seed": s} when sliced

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def label(self) -> str:
        if not self.slice:
            return self.spec.name
        return f"{self.spec.name}@q{self.slice['queries']}d{self.slice['distractors']}"

    @cached_property
    def checksums(self) -> dict[str, str]:
        path = self.spec.path
        sums = {name: sha256_file(path / name) for name in ("corpus.jsonl", self.spec.queries, self.spec.qrels)}
        if self.slice:
            sums["slice"] = hashlib.sha256(
                json.dumps({"queries": sorted(self.queries), "corpus": [r["_id"] for r in self.corpus]}).encode()
            ).hexdigest()
        return sums

    def positive_qrels(self) -> dict[str, dict[str, int]]:
        return {q: {d: r for d, r in docs.items() if r > 0} for q, docs in self.qrels.items() if q in self.queries}


def load_benchmark(name: str, root: Path | None = None) -> Benchmark:
    spec = BENCHMARKS[name]
    path = Path(root) / name if root else spec.path
    if root:
        spec = BenchmarkSpec(**{**spec.__dict__, "folder": str(path)})
    if not spec.available():
        raise FileNotFoundError(
            f"benchmark {name} not found at {spec.path} (expected corpus.jsonl, "
            f"{spec.queries}, {spec.qrels}); ../shared is needed for benchmarks"
        )
    corpus = read_jsonl(spec.path / "corpus.jsonl")
    qrels = read_qrels(spec.path / spec.qrels)
    judged = {q for q, docs in qrels.items() if any(r > 0 for r in docs.values())}
    queries = {str(q["_id"]): q["text"] for q in read_jsonl(spec.path / spec.queries) if str(q["_id"]) in judged}
    return Benchmark(spec, corpus, queries, {q: d for q, d in qrels.items() if q in queries})


def slice_benchmark(benchmark: Benchmark, queries: int, distractors: int, seed: int = 13) -> Benchmark:
    """The first ``queries`` judged queries (by id), all documents they judge, and
    ``distractors`` other documents drawn with a fixed seed."""
    if queries <= 0:
        return benchmark
    chosen = sorted(benchmark.queries, key=lambda q: (len(q), q))[:queries]
    judged = {d for q in chosen for d in benchmark.qrels.get(q, {})}
    others = [r["_id"] for r in benchmark.corpus if r["_id"] not in judged]
    extra = set(random.Random(seed).sample(others, min(distractors, len(others))))
    keep = judged | extra
    corpus = [r for r in benchmark.corpus if r["_id"] in keep]
    return Benchmark(
        benchmark.spec,
        corpus,
        {q: benchmark.queries[q] for q in chosen},
        {q: benchmark.qrels[q] for q in chosen},
        {"queries": queries, "distractors": distractors, "seed": seed},
    )
