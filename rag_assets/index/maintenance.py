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

Forcing a Tantivy merge
-----------------------
tantivy-py (0.27) exposes neither `IndexWriter::merge` nor a merge-policy setter: segments
are merged only by Tantivy's default `LogMergePolicy`, after a commit, once a level holds 8
segments (segments under 10,000 documents all share the smallest level). Each document
commit makes one segment, so a store normally keeps 1-7 small segments, and deleted rows
(older versions of re-ingested documents) stay as tombstones in merged segments until the
next merge.

`merge_lexical(force=True)` therefore makes the policy fire on the smallest level: it
commits as many *ballast* entries (one per commit) as that level lacks to reach 8, waits
for the merge, then deletes the ballast. Ballast entries have no text and no reader group
(`document_id="__maintenance__"`, `allowed_groups=[]`), so no search can return them;
only a count of all entries (`LexicalIndex.versions()`, `num_docs`) can see them, for the
time of the merge. Up to 7 ballast tombstones remain in the merged segment (a few bytes;
they go at the next merge). A ballast left by a killed run is deleted by the next run.
Larger levels (segments of more than ~16,000 entries) are merged by the policy alone.
`force=False` only commits nothing (letting the policy look again), waits for merges and
garbage-collects files no segment uses (e.g. left by a killed writer).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import tantivy

from rag_assets.index.dense import TABLE, DenseIndex
from rag_assets.index.lexical import LexicalIndex

DEFAULT_OLDER_THAN = dt.timedelta(days=7)

BALLAST_DOCUMENT = "__maintenance__"
# Tantivy's LogMergePolicy defaults (tantivy::indexer::LogMergePolicy).
_MIN_NUM_SEGMENTS = 8
_MIN_LAYER_SIZE = 10_000
_LEVEL_LOG_SIZE = 0.75
_MAX_DOCS_BEFORE_MERGE = 10_000_000


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
    ballast_docs: int
    files: int
    bytes_on_disk: int


def _segments(directory: Path) -> list[dict]:
    meta = Path(directory) / "meta.json"
    if not meta.exists():
        return []
    return json.loads(meta.read_text(encoding="utf-8")).get("segments", [])


def _alive(segment: dict) -> int:
    return int(segment["max_doc"]) - int((segment.get("deletes") or {}).get("num_deleted_docs", 0))


def _ballast_query(index: LexicalIndex) -> tantivy.Query:
    return tantivy.Query.term_query(index.schema, "document_id", BALLAST_DOCUMENT)


def lexical_figures(directory: Path) -> LexicalFigures:
    index = LexicalIndex(directory)
    segments = _segments(directory)
    searcher = index.index.searcher()
    files, size = _disk_usage(Path(directory))
    return LexicalFigures(
        segments=len(segments),
        docs=int(searcher.num_docs),
        deleted_docs=sum(int(s["max_doc"]) - _alive(s) for s in segments),
        ballast_docs=searcher.search(_ballast_query(index), limit=1, count=True).count,
        files=files,
        bytes_on_disk=size,
    )


def ballast_needed(segments: list[dict]) -> int:
    """How many one-entry segments make LogMergePolicy merge the smallest level, or 0 when
    that would gain nothing (no segment, or one segment with no more tombstones than the
    merge would leave behind).

    Mirrors LogMergePolicy: segments sorted by size, a new level whenever log2(size)
    drops by more than 0.75 below the level's first segment, sizes below 10,000 counted
    as 10,000, segments of 10 million entries or more never merged."""
    eligible = sorted((s for s in segments if _alive(s) <= _MAX_DOCS_BEFORE_MERGE), key=lambda s: -int(s["max_doc"]))
    levels: list[list[dict]] = []
    level_log = math.inf
    for segment in eligible:
        log_size = math.log2(max(_alive(segment), _MIN_LAYER_SIZE))
        if log_size < level_log - _LEVEL_LOG_SIZE:
            level_log = log_size
            levels.append([])
        levels[-1].append(segment)
    if not levels:
        return 0
    smallest = levels[-1]
    if math.log2(_MIN_LAYER_SIZE) < level_log - _LEVEL_LOG_SIZE:
        return 0  # a one-entry segment would open a level of its own
    needed = max(0, _MIN_NUM_SEGMENTS - len(smallest))
    tombstones = sum(int(s["max_doc"]) - _alive(s) for s in smallest)
    # The merge leaves `needed` ballast tombstones behind: a lone segment is worth
    # rewriting only when it holds more tombstones than that.
    if len(smallest) == 1 and tombstones <= needed:
        return 0
    return needed


def _ballast_doc(number: int) -> tantivy.Document:
    return tantivy.Document(
        child_id=f"{BALLAST_DOCUMENT}-{number}",
        parent_id=BALLAST_DOCUMENT,
        document_id=BALLAST_DOCUMENT,
        version="",
        language="fr",
        document_type="",
        allowed_groups=[],
        effective_date=-1,
    )


def merge_lexical(directory: Path, force: bool = True) -> dict:
    """Merge Tantivy segments and garbage-collect unused files, through the index's one
    writer (see the module docstring for what `force` does). Returns {"before", "after",
    "ballast", "seconds"}."""
    started = time.perf_counter()
    index = LexicalIndex(directory)
    before = lexical_figures(directory)
    ballast = 0
    # 1. Under the writer lock: drop a ballast left by a killed run, then add as many
    #    one-entry commits as the smallest level lacks. The writer's closing commit and
    #    wait_merging_threads() let the merge policy run and wait for it to finish.
    with index._writer() as writer:
        writer.delete_documents_by_query(_ballast_query(index))
        if force:
            ballast = ballast_needed(_segments(directory))
            for number in range(ballast):
                writer.add_document(_ballast_doc(number))
                writer.commit()
    # 2. Delete the ballast (ballast-only segments then hold no entry and are dropped at
    #    this commit) and remove the files that no segment uses any more.
    with index._writer() as writer:
        writer.delete_documents_by_query(_ballast_query(index))
        writer.garbage_collect_files()
    after = lexical_figures(directory)
    return {
        "before": asdict(before),
        "after": asdict(after),
        "ballast": ballast,
        "forced": force,
        "seconds": round(time.perf_counter() - started, 3),
    }
