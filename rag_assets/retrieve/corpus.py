"""The published parents and children, read from each document's Parquet files when a
reader asks for them instead of held in memory for the whole store.

A client of a store of a few hundred policies touches the handful of documents its hits
fall in; reading every parent and child at open cost most of its start-up time and memory
(issue 10: 19 s and ~1 GB at 100 k children). A document's rows are read whole, once, and
kept for the last `CACHED_DOCUMENTS` documents used; ids seen (in hits or in a document
read) remember their document, so a look-up by id alone reads one file, and an id never
seen reads the documents in turn until it is found.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from pathlib import Path

import polars as pl

from rag_assets.index.rows import PARENT_JSON_COLUMNS
from rag_assets.store import ACRONYMS_FILE, KnowledgeStore, read_json
from rag_assets.text.acronyms import DocumentAcronyms, thesaurus_fingerprint

CACHED_DOCUMENTS = 64
# Children are read for their text (hits, feedback); "contextualized" repeats it with headings.
CHILD_COLUMNS = (
    "child_id",
    "parent_id",
    "document_id",
    "ordinal",
    "start",
    "end",
    "text",
    "kind",
    "pages",
    "heading_path",
    "version",
)


class _Document:
    """One published version's parents (by id, reading order) and children (by id)."""

    def __init__(self, folder: Path, title: str):
        parents = pl.read_parquet(folder / "parents.parquet").sort("ordinal").to_dicts()
        for row in parents:
            for column in PARENT_JSON_COLUMNS:
                if column in row:
                    row[column] = json.loads(row[column])
            row["document_title"] = title
        self.parents = {row["parent_id"]: row for row in parents}
        path = folder / "children.parquet"
        columns = [c for c in CHILD_COLUMNS if c in pl.read_parquet_schema(path)]
        self.children = {row["child_id"]: row for row in pl.read_parquet(path, columns=columns).to_dicts()}


class PublishedCorpus:
    def __init__(self, store: KnowledgeStore, cached_documents: int = CACHED_DOCUMENTS):
        self.store = store
        self.cached_documents = cached_documents
        self._publication: dict[str, dict] = {}
        self._titles: dict[str, str] = {}
        self._cache: OrderedDict[str, _Document] = OrderedDict()
        self._owner: dict[str, str] = {}  # parent or child id -> document id
        self._lock = threading.Lock()

    def update(self, publication: dict[str, dict], titles: dict[str, str]) -> None:
        """Serve these published versions; documents whose version changed are read again."""
        with self._lock:
            for document_id in list(self._cache):
                if (publication.get(document_id) or {}).get("version") != self._publication[document_id]["version"]:
                    del self._cache[document_id]
            self._publication, self._titles = dict(publication), dict(titles)

    def note(self, document_id: str, *ids: str) -> None:
        """Remember which document these ids belong to (from an index hit)."""
        for key in ids:
            self._owner[key] = document_id

    def _document(self, document_id: str, keep: bool = True) -> _Document | None:
        with self._lock:
            document = self._cache.get(document_id)
            if document is not None:
                self._cache.move_to_end(document_id)
                return document
            entry = self._publication.get(document_id)
            if entry is None:
                return None
            folder, title = self.store.root / entry["path"], self._titles.get(document_id, document_id)
        document = _Document(folder, title)
        with self._lock:
            if self._publication.get(document_id, {}).get("version") != entry["version"]:
                return document  # republished meanwhile: serve what was asked, do not keep it
            self._owner.update(dict.fromkeys([*document.parents, *document.children], document_id))
            if keep:
                self._cache[document_id] = document
                while len(self._cache) > self.cached_documents:
                    self._cache.popitem(last=False)
        return document

    def _find(self, key: str, rows: str, document_id: str | None) -> dict | None:
        owner = document_id or self._owner.get(key)
        if owner is not None:
            document = self._document(owner)
            found = getattr(document, rows).get(key) if document else None
            if found is not None or document_id is not None:
                return found
        for other in list(self._publication):  # an id no hit named: look in every document
            document = self._document(other, keep=False) if other != owner else None
            if document is not None and key in getattr(document, rows):
                return getattr(document, rows)[key]
        return None

    def parent(self, parent_id: str, document_id: str | None = None) -> dict | None:
        return self._find(parent_id, "parents", document_id)

    def child(self, child_id: str, document_id: str | None = None) -> dict | None:
        return self._find(child_id, "children", document_id)

    def parents_of(self, document_id: str) -> list[dict]:
        """A published document's parents, in reading order."""
        document = self._document(document_id)
        return list(document.parents.values()) if document else []

    def iter_parents(self):
        """Every published parent, document by document (not kept in the cache)."""
        for document_id in list(self._publication):
            document = self._document(document_id, keep=False)
            if document is not None:
                yield from document.parents.values()


def document_acronyms(
    store: KnowledgeStore, entry: dict, thesaurus, fingerprint: str | None = None
) -> DocumentAcronyms:
    """The acronym summary stored with a published version (made by the parents stage), or
    made from its parents' text when it is missing or was made otherwise (`fingerprint`: the
    thesaurus's, when the caller has it)."""
    folder = store.root / entry["path"]
    stored = folder / ACRONYMS_FILE
    fingerprint = fingerprint or thesaurus_fingerprint(thesaurus)
    summary = DocumentAcronyms.from_dict(read_json(stored), fingerprint) if stored.exists() else None
    if summary is None:
        summary = DocumentAcronyms.of(
            pl.read_parquet(folder / "parents.parquet", columns=["text"])["text"].to_list(), thesaurus
        )
    return summary
