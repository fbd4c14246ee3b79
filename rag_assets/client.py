"""Python client: open a knowledge store built by the pipeline and search it.

Reads only materialized assets (no Dagster run needed).

    from rag_assets.client import KnowledgeBase
    kb = KnowledgeBase.open("data/knowledge")
    for hit in kb.search("franchise inondation zone A", k=3):
        print(hit.rrf_score, hit.heading_path, hit.pages)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from rag_assets.dense import DenseIndex
from rag_assets.embedding import get_embedder
from rag_assets.errors import StoreMismatchError
from rag_assets.filters import SearchFilters
from rag_assets.fusion import children_to_parents, rrf
from rag_assets.lexical import LexicalIndex
from rag_assets.pipeline import PARENT_JSON_COLUMNS
from rag_assets.settings import load_settings
from rag_assets.sources import load_source_record
from rag_assets.store import KnowledgeStore
from rag_assets.tables import read_rows


@dataclass
class ParentHit:
    parent_id: str
    document_id: str
    document_title: str
    heading_path: list[str]
    pages: list[int]
    text: str
    rrf_score: float
    ranks: dict[str, int]
    best_child: dict[str, dict] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class KnowledgeBase:
    def __init__(self, store: KnowledgeStore, embedder_spec: str, candidates: int = 20, rrf_k: int = 60):
        self.store = store
        self.embedder_spec = embedder_spec
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.dense = DenseIndex(store.lancedb_dir)
        self.lexical = LexicalIndex(store.tantivy_dir)
        self.parents: dict[str, dict] = {}
        self.children: dict[str, dict] = {}
        self.documents: dict[str, dict] = {}
        self._load_and_check()

    @classmethod
    def open(cls, path: str | Path | None = None, embedder: str | None = None) -> "KnowledgeBase":
        settings = load_settings()
        root = Path(path) if path is not None else settings.store
        if not root.exists():
            raise FileNotFoundError(f"no knowledge store at {root}: run `rag-assets ingest PATH…` first")
        return cls(KnowledgeStore(root), embedder or settings.embedder, settings.candidates_per_engine, settings.rrf_k)

    def _load_and_check(self) -> None:
        expected: dict[str, str] = {}
        documents_dir = self.store.root / "documents"
        for doc_dir in sorted(documents_dir.iterdir()) if documents_dir.exists() else []:
            document_id = doc_dir.name
            children_path = self.store.children_path(document_id)
            if not children_path.exists():
                continue
            record = load_source_record(self.store, document_id)
            children = read_rows(children_path)
            self.documents[document_id] = {"title": record.title, "file": record.file_name, **record.to_dict()}
            for row in read_rows(self.store.parents_path(document_id), PARENT_JSON_COLUMNS):
                self.parents[row["parent_id"]] = {**row, "document_title": record.title}
            for row in children:
                self.children[row["child_id"]] = row
            expected[document_id] = children[0]["version"] if children else None
        problems = []
        for engine, versions in (("dense", self.dense.versions()), ("lexical", self.lexical.versions())):
            for document_id, version in expected.items():
                found = versions.get(document_id, set())
                if version is not None and found != {version}:
                    problems.append(f"{document_id}: {engine} index has version(s) {sorted(found) or 'none'}, children have {version}")
            for document_id in set(versions) - set(expected):
                problems.append(f"{document_id}: present in the {engine} index but has no children (orphan rows)")
        if problems:
            raise StoreMismatchError(
                f"knowledge store {self.store.root} is inconsistent; re-materialize the listed documents:\n  "
                + "\n  ".join(problems)
            )

    def search(self, question: str, k: int = 5, filters: dict | None = None, groups=None,
               candidates: int | None = None, term_weights: dict[str, float] | None = None) -> list[ParentHit]:
        """Hybrid search: BM25 and dense over children, collapsed to parents, fused by RRF."""
        parsed = SearchFilters.from_dict(filters, groups)
        limit = candidates or self.candidates
        lexical_hits = self.lexical.search(question, parsed, limit=limit, weights=term_weights)
        embedder = get_embedder(self.embedder_spec)
        dense_hits = self.dense.search(embedder.embed_query(question), parsed, limit=limit)
        rankings = {"bm25": children_to_parents(lexical_hits), "dense": children_to_parents(dense_hits)}
        best = {engine: {h["parent_id"]: h for h in ranking} for engine, ranking in rankings.items()}
        results = []
        for parent_id, score, ranks in rrf(rankings, self.rrf_k)[:k]:
            parent = self.parents.get(parent_id)
            if parent is None:
                continue
            best_child = {}
            for engine, hits in best.items():
                if parent_id in hits:
                    child = self.children.get(hits[parent_id]["child_id"], {})
                    best_child[engine] = {"child_id": hits[parent_id]["child_id"], "score": hits[parent_id]["score"],
                                          "text": child.get("text", "")}
            results.append(
                ParentHit(
                    parent_id=parent_id,
                    document_id=parent["document_id"],
                    document_title=parent["document_title"],
                    heading_path=list(parent["heading_path"]),
                    pages=list(parent["pages"]),
                    text=parent["text"],
                    rrf_score=score,
                    ranks=ranks,
                    best_child=best_child,
                )
            )
        return results
