"""The catalog of evaluation targets (question sets and benchmarks) and the stores they run on.

Every target is evaluated on its own knowledge store, built by its own copy of the
ingestion asset graph (``<target>/source_document … <target>/publication``, see
rag_assets/defs/evaluation/assets.py):

    <eval stores>/<label>/corpus/      benchmark corpora written as shards of ≤ 2,000 records
    <eval stores>/<label>/knowledge/   the knowledge store (LanceDB, Tantivy, parents…)

``<eval stores>`` is ``$RAG_ASSETS_EVAL_STORES`` (default ``data/evaluation``); the label is
the target name, plus the slice for a benchmark slice (``scifact@q30d150``). Re-running is
cheap: unchanged documents are skipped and vectors come from the embedding cache.
"""

from __future__ import annotations

import fnmatch
import json
import math
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import yaml

from rag_assets.evaluation.benchmarks import BENCHMARKS, Benchmark, load_benchmark, slice_benchmark
from rag_assets.settings import PROJECT_ROOT

SHARD_SIZE = 2000
GOLDEN_SHARED_CORPUS = "../shared/corpora"


@dataclass(frozen=True)
class GoldenTarget:
    name: str
    questions: str  # relative to the project root
    corpus_root: str  # evidence documents are named relative to this folder
    corpus: tuple[str, ...]  # files, folders or glob patterns relative to corpus_root
    description: str
    needs_shared: bool = False

    @property
    def questions_path(self) -> Path:
        return PROJECT_ROOT / self.questions

    @property
    def root(self) -> Path:
        return (PROJECT_ROOT / self.corpus_root).resolve()

    def available(self) -> bool:
        return self.questions_path.exists() and self.root.exists()

    def corpus_files(self) -> list[Path]:
        from rag_assets.ingest.planning import candidate_files

        files: list[Path] = []
        for pattern in self.corpus:
            matches = _resolve(self.root, pattern)
            if not matches:
                raise FileNotFoundError(f"{self.name}: corpus entry {pattern!r} not found under {self.root}")
            files.extend(candidate_files(matches))
        return sorted(dict.fromkeys(files))


def _nfkc(name: str) -> str:
    return unicodedata.normalize("NFKC", name)


def _resolve(root: Path, pattern: str) -> list[Path]:
    """Glob ``pattern`` under ``root`` part by part, comparing NFKC-normalized names (real
    corpora mix no-break and plain spaces in folder names)."""
    current = [root]
    for part in Path(pattern).parts:
        if part == ".":
            continue
        wanted = _nfkc(part)
        current = [
            child
            for folder in current
            if folder.is_dir()
            for child in sorted(folder.iterdir())
            if fnmatch.fnmatchcase(_nfkc(child.name), wanted)
        ]
    return current


_CODE = "code-des-assurances/01. Partie législative"
_ARRETES = "code-des-assurances/03. Partie réglementaire - Arrêtés"
_IDD = "eu-insurance-texts/idd/idd---directive-distribution-d-assurance/fr"
_PRIIPS = "eu-insurance-texts/priips/priips---reglement--ue--1286-2014-du-26-11-2014/fr"
GOLDEN = {
    t.name: t
    for t in (
        GoldenTarget(
            "golden-sample",
            "evaluations/golden-sample.jsonl",
            "data/samples",
            (".",),
            "Golden set over the embedded sample corpus (5 fictional French documents)",
        ),
        GoldenTarget(
            "golden-shared",
            "evaluations/golden-shared.jsonl",
            GOLDEN_SHARED_CORPUS,
            (
                f"{_CODE}/Article L112-*.md",
                f"{_CODE}/Article L113-*.md",
                f"{_CODE}/Article L114-*.md",
                f"{_CODE}/Article L121-*.md",
                f"{_CODE}/Article L125-*.md",
                f"{_CODE}/Article L132-5*.md",
                f"{_CODE}/Article L211-1 - *.md",
                f"{_ARRETES}/Article A125-1 - *.md",
                f"{_ARRETES}/Article Annexe I art. A125-1 - *.md",
                f"{_IDD}/CHAPITRE I",
                f"{_IDD}/CHAPITRE IV",
                f"{_IDD}/CHAPITRE V",
                f"{_PRIIPS}/CHAPITRE II",
                "actuarial-courses/isfa_mcs_goffard_cc0/Chap1_Intro.pdf",
                "eu-regulation-pdf/solvency2_directive_2009-138-EC_EN.pdf",
            ),
            "Golden set over real public documents in ../shared/corpora (Code des assurances, "
            "IDD, PRIIPs, ISFA course notes, Solvency II directive PDF)",
            needs_shared=True,
        ),
        GoldenTarget(
            "golden-insurance",
            "evaluations/golden-insurance.jsonl",
            "../shared/corpora/fr-insurance-docs",
            ("*.pdf",),
            "Golden set over 12 real French insurer PDFs in ../shared/corpora/fr-insurance-docs (MAIF, Allianz Vie, "
            "Mila, AREAS, APICIL, APRIL: general conditions, notices, IPIDs, guarantee tables; 487 pages)",
            needs_shared=True,
        ),
    )
}


def target_names() -> list[str]:
    return [*GOLDEN, *BENCHMARKS]


def benchmark_names() -> list[str]:
    return list(BENCHMARKS)


def is_benchmark(name: str) -> bool:
    return name in BENCHMARKS


def describe(name: str) -> str:
    return GOLDEN[name].description if name in GOLDEN else BENCHMARKS[name].description


def available(name: str) -> bool:
    return GOLDEN[name].available() if name in GOLDEN else BENCHMARKS[name].available()


def eval_stores_root() -> Path:
    return Path(os.environ.get("RAG_ASSETS_EVAL_STORES", PROJECT_ROOT / "data" / "evaluation")).resolve()


def runs_root() -> Path:
    return Path(os.environ.get("RAG_ASSETS_EVAL_RUNS", PROJECT_ROOT / "evaluations" / "runs")).resolve()


def label_of(name: str, queries: int = 0, distractors: int = 0) -> str:
    """The target name, plus the slice for a benchmark slice (``scifact@q30d150``)."""
    return load_target_benchmark(name, queries, distractors).label if is_benchmark(name) and queries else name


def collection_files(name: str, store: Path, queries: int = 0, distractors: int = 0) -> list[Path]:
    """The documents of a target's collection: the golden set's corpus files, or the
    benchmark (slice) written as shards beside its store (``<store>/../corpus``)."""
    if is_benchmark(name):
        return write_shards(load_target_benchmark(name, queries, distractors), store.parent / "corpus")
    return GOLDEN[name].corpus_files()


def load_target_benchmark(name: str, queries: int = 0, distractors: int = 0) -> Benchmark:
    benchmark = load_benchmark(name)
    return slice_benchmark(benchmark, queries, distractors) if queries else benchmark


def write_shards(benchmark: Benchmark, folder: Path, shard_size: int = SHARD_SIZE) -> list[Path]:
    """The corpus as ``<name>-NN-of-MM.jsonl`` record files (balanced, ≤ shard_size records),
    each with a sidecar. Files are rewritten only when their bytes change, so re-runs skip them."""
    folder.mkdir(parents=True, exist_ok=True)
    records = benchmark.corpus
    count = max(1, math.ceil(len(records) / shard_size))
    per_shard = math.ceil(len(records) / count)
    paths = []
    for index in range(count):
        chunk = records[index * per_shard : (index + 1) * per_shard]
        path = folder / f"{benchmark.name}-{index + 1:02d}-of-{count:02d}.jsonl"
        payload = "".join(
            json.dumps(
                {"_id": r["_id"], "title": r.get("title") or "", "text": r.get("text") or ""}, ensure_ascii=False
            )
            + "\n"
            for r in chunk
        )
        if not path.exists() or path.read_text(encoding="utf-8") != payload:
            path.write_text(payload, encoding="utf-8")
        sidecar = {
            "title": benchmark.spec.name,
            "language": benchmark.spec.language,
            "document_type": "benchmark",
        }
        meta = path.with_name(path.name + ".meta.yaml")
        text = yaml.safe_dump(sidecar, sort_keys=True, allow_unicode=True)
        if not meta.exists() or meta.read_text(encoding="utf-8") != text:
            meta.write_text(text, encoding="utf-8")
        paths.append(path)
    for stale in folder.glob(f"{benchmark.name}-*.jsonl"):
        if stale not in paths:
            stale.unlink()
            stale.with_name(stale.name + ".meta.yaml").unlink(missing_ok=True)
    return paths
