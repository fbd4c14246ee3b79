"""The published parents and children, read from each document's Parquet files when a
reader asks for them instead of held in memory for the whole store.

A client of a store of a few hundred policies touches the handful of documents its hits
fall in; reading every parent and child at open cost most of its start-up time and memory
(tens of seconds and about a gigabyte at 100 k children). A search reads only the rows it shows:
`parents` and `children` read the ids asked of each document in one filtered read of its
file, and keep the last `CACHED_ROWS` rows (a store of a thousand documents made reading
and decoding whole documents per hit the part of a search that grew with the store). A
document asked whole (`parents_of`, a look-up by id) is read whole, once, and kept for
the last `CACHED_DOCUMENTS` documents used; ids seen (in hits or in a document read)
remember their document, so a look-up by id alone reads one file, and an id never seen
reads the documents in turn until it is found.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

import polars as pl
import polars.selectors as cs

from rag_assets.index.rows import PARENT_JSON_COLUMNS
from rag_assets.recent import Recent
from rag_assets.store import ACRONYMS_FILE, KnowledgeStore, read_json
from rag_assets.text.acronyms import DocumentAcronyms, thesaurus_fingerprint

CACHED_DOCUMENTS = 64
CACHED_ROWS = 1024  # parents and children read by id for a search: a few per question
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


# rows kind -> (file, id column, columns read)
_FILES = {
    "parents": ("parents.parquet", "parent_id", cs.all()),
    "children": ("children.parquet", "child_id", cs.by_name(*CHILD_COLUMNS, require_all=False)),
}


def _read(folder: Path, rows: str, title: str, ids: list[str] | None = None) -> list[dict]:
    """A published version's parents or children as dicts (parents' JSON columns decoded,
    their document title added): all of them, or those of ``ids``."""
    file, id_column, columns = _FILES[rows]
    frame = pl.scan_parquet(folder / file)
    if ids is not None:
        frame = frame.filter(pl.col(id_column).is_in(ids))
    found = frame.select(columns).collect().to_dicts()
    if rows == "parents":
        for row in found:
            for column in PARENT_JSON_COLUMNS:
                if column in row:
                    row[column] = json.loads(row[column])
            row["document_title"] = title
    return found


class _Document:
    """One published version's parents (by id, reading order) and children (by id)."""

    def __init__(self, folder: Path, title: str):
        parents = sorted(_read(folder, "parents", title), key=lambda row: row["ordinal"])
        self.parents = {row["parent_id"]: row for row in parents}
        self.children = {row["child_id"]: row for row in _read(folder, "children", title)}


class PublishedCorpus:
    def __init__(self, store: KnowledgeStore, cached_documents: int = CACHED_DOCUMENTS, cached_rows: int = CACHED_ROWS):
        self.store = store
        self.cached_documents = cached_documents
        self._publication: dict[str, dict] = {}
        self._titles: dict[str, str] = {}
        self._cache: OrderedDict[str, _Document] = OrderedDict()
        # (rows, document id, version, id) -> row: a re-published version is another key
        self._rows: Recent[dict] = Recent(cached_rows)
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

    def _many(self, keys: Iterable[tuple[str, str | None]], rows: str) -> dict[str, dict]:
        """Rows by id from (id, document id) pairs: from a document or rows in memory, else
        one filtered read of each document's file for the ids it lacks. An id without its
        document, or of a document not published, is looked up as `parent` and `child` do;
        ids not found are left out."""
        found: dict[str, dict] = {}
        wanted: dict[str, dict[str, None]] = {}  # document id -> ids to read (ordered set)
        unplaced: list[tuple[str, str | None]] = []
        with self._lock:
            for key, document_id in keys:
                entry = self._publication.get(document_id) if document_id else None
                if entry is None:
                    unplaced.append((key, document_id))
                    continue
                document = self._cache.get(document_id)
                cached = (rows, document_id, entry["version"], key)
                if document is not None:
                    self._cache.move_to_end(document_id)
                    row = getattr(document, rows).get(key)
                elif (row := self._rows.get(cached)) is None:
                    wanted.setdefault(document_id, {})[key] = None
                    continue
                if row is not None:
                    found[key] = row
            reads = {
                document_id: (dict(self._publication[document_id]), self._titles.get(document_id, document_id))
                for document_id in wanted
            }
        for document_id, (entry, title) in reads.items():
            read = _read(self.store.root / entry["path"], rows, title, list(wanted[document_id]))
            id_column = _FILES[rows][1]
            found.update((row[id_column], row) for row in read)
            with self._lock:
                if self._publication.get(document_id, {}).get("version") != entry["version"]:
                    continue  # republished meanwhile: serve what was asked, do not keep it
                for row in read:
                    self._rows.put((rows, document_id, entry["version"], row[id_column]), row)
        for key, document_id in unplaced:
            if (row := self._find(key, rows, document_id)) is not None:
                found[key] = row
        return found

    def parents(self, keys: Iterable[tuple[str, str | None]]) -> dict[str, dict]:
        """Published parents by id, from (parent id, document id) pairs: at most one read of
        each document's parents file."""
        return self._many(keys, "parents")

    def children(self, keys: Iterable[tuple[str, str | None]]) -> dict[str, dict]:
        """Published children by id, from (child id, document id) pairs (as `parents`)."""
        return self._many(keys, "children")

    def _find(self, key: str, rows: str, document_id: str | None) -> dict | None:
        owner = document_id or self._owner.get(key)
        if owner is not None and (entry := self._publication.get(owner)) is not None:
            kept = self._rows.get((rows, owner, entry["version"], key))
            if kept is not None:  # read for a search: the reader now looks it up
                return kept
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

    def heading_paths(self, document_id: str) -> list[list[str]]:
        """A published document's parents' heading paths, read alone: what its lines of insurance
        need, without decoding every parent's blocks (a first question naming an insurer of a
        hundred documents took seconds) or taking a place in the cache."""
        with self._lock:
            entry = self._publication.get(document_id)
        if entry is None:
            return []
        frame = pl.scan_parquet(self.store.root / entry["path"] / "parents.parquet").select("heading_path")
        return [list(path or []) for path in frame.collect().get_column("heading_path").to_list()]

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
