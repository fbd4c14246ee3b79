"""Python client: open a knowledge store built by the pipeline and search it.

Reads only materialized assets (no Dagster run needed).

    from rag_assets.retrieve.knowledge_base import KnowledgeBase
    kb = KnowledgeBase.open("data/knowledge")
    for hit in kb.search("franchise inondation zone A", k=3):
        print(hit.rrf_score, hit.heading_path, hit.pages)
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rag_assets.index.dense import DenseIndex
from rag_assets.embedding import get_embedder
from rag_assets.errors import StoreMismatchError
from rag_assets.retrieve.filters import SearchFilters
from rag_assets.retrieve.fusion import children_to_parents, rrf
from rag_assets.index.lexical import LexicalIndex
from rag_assets.settings import load_settings
from rag_assets.index.records import document_title, load_source_record
from rag_assets.index.publication import published_path, read_publication
from rag_assets.retrieve.reranking import reranker_from_spec
from rag_assets.store import KnowledgeStore
from rag_assets.index.rows import PARENT_JSON_COLUMNS, read_rows


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
    version: str
    best_child: dict[str, dict] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


class KnowledgeBase:
    def __init__(self, store: KnowledgeStore, embedder_spec: str, candidates: int = 20, rrf_k: int = 60,
                 reranker: str | None = None):
        self.store = store
        # callable(question, hits) -> scores in [0, 1], used by `ask`; None when not configured
        self.rerank = reranker_from_spec(reranker)
        self.embedder_spec = embedder_spec
        self.candidates = candidates
        self.rrf_k = rrf_k
        self.dense = DenseIndex(store.lancedb_dir)
        self.lexical = LexicalIndex(store.tantivy_dir)
        self.published: dict[str, dict] = {}
        self.parents: dict[str, dict] = {}
        self.children: dict[str, dict] = {}
        self.documents: dict[str, dict] = {}
        # Hits skipped by the last search because their version is not the published one.
        self.last_excluded: list[dict] = []
        self._stamp = None
        self._lock = threading.Lock()
        self._refresh(check=True)

    @classmethod
    def open(cls, path: str | Path | None = None, embedder: str | None = None) -> "KnowledgeBase":
        settings = load_settings()
        root = Path(path) if path is not None else settings.store
        if not root.exists():
            raise FileNotFoundError(f"no knowledge store at {root}: run `rag-assets ingest PATH…` first")
        return cls(KnowledgeStore(root), embedder or settings.embedder, settings.candidates_per_engine, settings.rrf_k,
                   settings.reranker)

    def _publication_stamp(self):
        try:
            stat = published_path(self.store).stat()
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def _refresh(self, check: bool = False) -> None:
        """(Re)load the published version of each document when publication changed."""
        stamp = self._publication_stamp()
        if stamp == self._stamp:
            return
        publication = read_publication(self.store)
        parents, children, documents = {}, {}, {}
        for document_id, entry in publication.items():
            if (self.published.get(document_id) or {}).get("version") == entry["version"]:
                parents.update({k: v for k, v in self.parents.items() if v["document_id"] == document_id})
                children.update({k: v for k, v in self.children.items() if v["document_id"] == document_id})
                documents[document_id] = self.documents[document_id]
                continue
            folder = self.store.root / entry["path"]
            record = load_source_record(self.store, document_id)
            title = document_title(self.store, record)
            documents[document_id] = {**record.to_dict(), "title": title}
            for row in read_rows(folder / "parents.parquet", PARENT_JSON_COLUMNS):
                parents[row["parent_id"]] = {**row, "document_title": title}
            for row in read_rows(folder / "children.parquet"):
                children[row["child_id"]] = row
        if check:
            self._check(publication)
        self.published, self.parents, self.children, self.documents = publication, parents, children, documents
        self._stamp = stamp

    def _check(self, publication: dict[str, dict]) -> None:
        problems = []
        for document_id, entry in publication.items():
            version = entry["version"]
            counts = {"dense": self.dense.count(document_id, version), "lexical": self.lexical.count(document_id, version)}
            if set(counts.values()) != {entry["children"]}:
                problems.append(f"{document_id}: published version {version} has {entry['children']} children "
                                f"but the indexes hold {counts}")
        if problems:
            raise StoreMismatchError(
                f"knowledge store {self.store.root} is inconsistent; re-materialize the listed documents:\n  "
                + "\n  ".join(problems)
            )

    def _published_only(self, hits: list[dict], engine: str, limit: int) -> list[dict]:
        kept = []
        for hit in hits:
            entry = self.published.get(hit["document_id"])
            if entry is None or entry["version"] != hit["version"] or hit["parent_id"] not in self.parents:
                self.last_excluded.append({**hit, "engine": engine,
                                           "published_version": entry["version"] if entry else None})
            else:
                kept.append(hit)
        return kept[:limit]

    def ask(self, question: str, thread_id: str | None = None, user_groups=None, **options):
        """Sourced, verified answer (`rag_assets.answering.ask`; options: endpoints, offline, llm, options)."""
        from rag_assets.answering import ask

        return ask(self, question, thread_id=thread_id, user_groups=user_groups, **options)

    def search(self, question: str, k: int = 5, filters: dict | None = None, groups=None,
               candidates: int | None = None, term_weights: dict[str, float] | None = None) -> list[ParentHit]:
        """Hybrid search: BM25 and dense over children, collapsed to parents, fused by RRF.

        Only hits of each document's published version count; others (a re-index in
        flight) are skipped and listed in `last_excluded`."""
        parsed = SearchFilters.from_dict(filters, groups)
        limit = candidates or self.candidates
        vector = get_embedder(self.embedder_spec).embed_query(question)
        with self._lock:
            self._refresh()
            self.last_excluded = []
            # over-fetch: hits of an unpublished version are dropped after retrieval
            lexical_hits = self._published_only(
                self.lexical.search(question, parsed, limit=2 * limit, weights=term_weights), "bm25", limit)
            dense_hits = self._published_only(self.dense.search(vector, parsed, limit=2 * limit), "dense", limit)
            phrase_hits = self._published_only(self.lexical.search(question, parsed, limit=limit, phrase=True),
                                               "phrase", limit)
            rankings = {"bm25": children_to_parents(lexical_hits), "dense": children_to_parents(dense_hits)}
            best = {engine: {h["parent_id"]: h for h in ranking} for engine, ranking in rankings.items()}
            fused = rrf(rankings, self.rrf_k)
            # A quoted clause (≥4 terms in order) is what the reader is looking for: the
            # parents holding it verbatim come first, whatever the fusion says.
            quoting = [p["parent_id"] for p in children_to_parents(phrase_hits)]
            if quoting:
                by_id = {parent_id: (parent_id, score, ranks) for parent_id, score, ranks in fused}
                fused = [(*by_id.get(p, (p, 0.0, {}))[:2], {**by_id.get(p, (p, 0.0, {}))[2], "phrase": rank})
                         for rank, p in enumerate(quoting, start=1)] + [f for f in fused if f[0] not in quoting]
            results = []
            for parent_id, score, ranks in fused[:k]:
                parent = self.parents[parent_id]
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
                        version=self.published[parent["document_id"]]["version"],
                        best_child=best_child,
                    )
                )
            return results
