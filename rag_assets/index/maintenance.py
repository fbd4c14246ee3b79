"""Housekeeping of the two indexes: LanceDB compaction and Tantivy segment merging.

Both are safe while readers search:

- LanceDB: `optimize()` compacts small fragments into a new table version and deletes
  the files of versions older than `older_than` (7 days by default). A reader keeps
  the version it opened; `DenseIndex` opens the table afresh for every query, so a
  reader holds a version only for the length of one query. Only `older_than=0` can
  pull files from under a reader, which is why it is not the default.
- Tantivy: all writes go through `LexicalIndex._writer()` (file lock, one writer at a
  time). A searcher keeps the segments it was opened on: merged-away segment files are
  unlinked by garbage collection, but an open searcher keeps them mapped (POSIX unlink
  semantics), and a searcher opened afterwards reads the new `meta.json`.

Compacting the Tantivy index
----------------------------
tantivy-py (0.27) exposes neither `IndexWriter::merge` nor a merge-policy setter: its
writer merges segments only by Tantivy's default `LogMergePolicy` (after a commit, once a
level holds 8 segments), `wait_merging_threads()` waits for those merges and
`garbage_collect_files()` removes the files no segment uses. Each document commit makes
one segment, so a store keeps a few small segments, and the entries of older versions
of re-ingested documents stay as tombstones until their segment is merged.

`merge_lexical(force=True)` therefore compacts by rewriting: in one commit, every entry
is deleted and added again with the same stored fields (read from the index) and the
same text (`indexed_fields` of its child's `contextualized` text in the document's children
Parquet, which is what `lexical_index` indexed). The rewritten entries form new segments and the
old segments, left with tombstones only, are dropped; readers see the index before or
after that commit. A document whose entries do not all have their text there (a
version staged beside the published one, whose children file already holds the new
version) is left in place and listed in `left_in_place`. Nothing is rewritten when the
index is already one segment without tombstones. `force=False` only commits nothing
(letting the policy look again), waits for merges and garbage-collects files no segment
uses (e.g. left by a killed writer).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import tantivy

from rag_assets.index.dense import TABLE, DenseIndex
from rag_assets.index.lexical import LexicalIndex, children_texts, indexed_fields, stored_entries

DEFAULT_OLDER_THAN = dt.timedelta(days=7)


def _disk_usage(path: Path) -> tuple[int, int]:
    """(files, bytes) under `path`."""
    files = size = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            try:
                size += os.stat(os.path.join(root, name)).st_size
                files += 1
            except FileNotFoundError:  # removed meanwhile by a concurrent cleanup
                pass
    return files, size


# LanceDB ---------------------------------------------------------------------------
@dataclass
class DenseFigures:
    versions: int
    fragments: int
    rows: int
    files: int
    bytes_on_disk: int


def dense_figures(directory: Path) -> DenseFigures | None:
    """Figures of the `children` table; None when there is no table yet."""
    table = DenseIndex(directory)._table()
    if table is None:
        return None
    stats = table.stats()
    files, size = _disk_usage(Path(directory) / f"{TABLE}.lance")
    return DenseFigures(
        versions=len(table.list_versions()),
        fragments=int(stats["fragment_stats"]["num_fragments"]),
        rows=int(table.count_rows()),
        files=files,
        bytes_on_disk=size,
    )


def compact_dense(directory: Path, older_than: dt.timedelta = DEFAULT_OLDER_THAN) -> dict:
    """LanceDB `optimize()` on the `children` table: compaction of small fragments, index
    optimization, and removal of the files of versions older than `older_than` (the
    latest version is always kept). Returns {"before", "after", "seconds", ...}."""
    started = time.perf_counter()
    table = DenseIndex(directory)._table()
    if table is None:
        return {"skipped": f"no '{TABLE}' table in {directory}", "before": None, "after": None, "seconds": 0.0}
    if older_than < dt.timedelta(0):
        raise ValueError(f"older_than must not be negative: {older_than}")
    before = dense_figures(directory)
    table.optimize(cleanup_older_than=older_than)
    after = dense_figures(directory)
    return {
        "before": asdict(before),
        "after": asdict(after),
        "older_than_seconds": older_than.total_seconds(),
        "seconds": round(time.perf_counter() - started, 3),
    }


# Tantivy ---------------------------------------------------------------------------
@dataclass
class LexicalFigures:
    segments: int
    docs: int  # alive entries
    deleted_docs: int  # tombstones still stored in segments
    files: int
    bytes_on_disk: int


def _segments(directory: Path) -> list[dict]:
    meta = Path(directory) / "meta.json"
    if not meta.exists():
        return []
    return json.loads(meta.read_text(encoding="utf-8")).get("segments", [])


def _deleted(segment: dict) -> int:
    return int((segment.get("deletes") or {}).get("num_deleted_docs", 0))


def lexical_figures(directory: Path) -> LexicalFigures:
    segments = _segments(directory)
    searcher = LexicalIndex(directory).index.searcher()
    files, size = _disk_usage(Path(directory))
    return LexicalFigures(
        segments=len(segments),
        docs=int(searcher.num_docs),
        deleted_docs=sum(_deleted(s) for s in segments),
        files=files,
        bytes_on_disk=size,
    )


def _rewrite(
    index: LexicalIndex, writer: tantivy.IndexWriter, texts_of: Callable[[str], dict[tuple[str, str], str]]
) -> tuple[int, list[str]]:
    """Delete and re-add, in the writer's one commit, the entries of every document whose
    text is at hand: (entries rewritten, documents left in place)."""
    # the writer's lock is held: what another process committed before it must be seen here,
    # or its entries would be deleted below and not added again
    index.index.reload()
    stored: dict[str, list[dict]] = {}
    for fields in stored_entries(index.index.searcher()):
        stored.setdefault(fields["document_id"][0], []).append(fields)
    rewritten, left = 0, []
    for document_id, entries in sorted(stored.items()):
        texts = texts_of(document_id)
        keys = [(fields["child_id"][0], fields["version"][0]) for fields in entries]
        if not all(key in texts for key in keys):
            left.append(document_id)
            continue
        writer.delete_documents_by_term("document_id", document_id)  # the entries added below stay
        for fields, key in zip(entries, keys):
            writer.add_document(tantivy.Document(**fields, **indexed_fields(texts[key], fields["language"][0])))
        rewritten += len(entries)
    return rewritten, left


# BM25's statistics (document frequencies, average length) count the entries of replaced
# versions until their segment is merged: a store whose documents were re-ingested ranks
# otherwise than the same documents ingested once. A publication compacts a small index
# whenever it holds such entries (a rewrite costs about 1.2 ms an entry, its everyday words
# found again, idle: 6 s at the bound), a larger one once they pass a share of the live
# entries, as Lucene's merge policy reclaims deletes.
COMPACT_ALWAYS_BELOW = 5_000
TOMBSTONE_SHARE = 0.2


def merge_lexical_when_worn(directory: Path, store_root: Path | None = None) -> dict | None:
    """`merge_lexical` when the index holds entries of replaced versions (see above); None
    when it does not need it."""
    figures = lexical_figures(directory)
    worn = figures.deleted_docs > (0 if figures.docs < COMPACT_ALWAYS_BELOW else TOMBSTONE_SHARE * figures.docs)
    return merge_lexical(directory, force=True, store_root=store_root) if worn else None


def merge_lexical(directory: Path, force: bool = True, store_root: Path | None = None) -> dict:
    """Compact the Tantivy index (see the module docstring) and garbage-collect unused
    files, through the index's one writer. The children files are read from `store_root`
    (default: the folder holding `directory`, as in `KnowledgeStore`). Returns
    {"before", "after", "rewritten", "left_in_place", "forced", "seconds"}."""
    started = time.perf_counter()
    directory = Path(directory)
    index = LexicalIndex(directory)
    before = lexical_figures(directory)
    rewritten, left = 0, list[str]()
    with index._writer() as writer:  # its commit makes the policy look; it waits for the merges
        if force and (before.segments > 1 or before.deleted_docs):
            rewritten, left = _rewrite(index, writer, children_texts(store_root or directory.parent))
    with index._writer() as writer:
        writer.garbage_collect_files()
    after = lexical_figures(directory)
    return {
        "before": asdict(before),
        "after": asdict(after),
        "rewritten": rewritten,
        "left_in_place": left,
        "forced": force,
        "seconds": round(time.perf_counter() - started, 3),
    }
