"""Publication: the one switch that makes a document version visible to readers.

The index stages write a new version *beside* the published one; publishing copies the
version's parents/children to `documents/<id>/published/<version>/`, flips the entry in
`published.json` (one atomic replace, of a file under the store or of an object on the
object store), then drops the other versions from both indexes.
A reader therefore serves, per document, the version named in `published.json` and skips
index hits of any other version; a run killed before the flip leaves the previous
version intact and searchable.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path
from typing import Callable, Hashable

from rag_assets.object_store import ObjectStore
from rag_assets.store import ACRONYMS_FILE, IDENTITY_FILE, KnowledgeStore, file_lock, read_json, write_json_atomic

PUBLISHED_FILE = "published.json"
# A writer refused this many times in a row (others kept flipping first) gives up.
ATTEMPTS = 50

# Change the publication in place; False: nothing to write.
Edit = Callable[[dict[str, dict]], bool]


class FilePointer:
    """`published.json` under the store: replaced whole (temp file + rename) under a file lock."""

    def __init__(self, store: KnowledgeStore):
        self.path, self.lock = store.root / PUBLISHED_FILE, store.lock_path("publication")

    def read(self) -> dict[str, dict]:
        return read_json(self.path) if self.path.exists() else {}

    def stamp(self) -> Hashable | None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            return None
        return (stat.st_ino, stat.st_mtime_ns, stat.st_size)

    def edit(self, change: Edit) -> None:
        with file_lock(self.lock):
            publication = self.read()
            if change(publication):
                write_json_atomic(self.path, publication)


class ObjectPointer:
    """`published.json` on the object store: one conditional PUT per flip (see
    rag_assets/object_store.py), retried on a fresh read when another writer flipped first."""

    def __init__(self, objects: ObjectStore):
        self.objects = objects

    def read(self) -> dict[str, dict]:
        return self.objects.read_json(PUBLISHED_FILE)[0] or {}

    def stamp(self) -> Hashable | None:
        return self.objects.etag(PUBLISHED_FILE)

    def edit(self, change: Edit) -> None:
        for _ in range(ATTEMPTS):
            publication, etag = self.objects.read_json(PUBLISHED_FILE)
            publication = publication or {}
            if not change(publication) or self.objects.replace_json(PUBLISHED_FILE, publication, etag):
                return
        raise RuntimeError(f"{self.objects.uri_of(PUBLISHED_FILE)}: refused {ATTEMPTS} times, not published")


def pointer(store: KnowledgeStore) -> FilePointer | ObjectPointer:
    return FilePointer(store) if store.objects is None else ObjectPointer(store.objects)


def read_publication(store: KnowledgeStore) -> dict[str, dict]:
    return pointer(store).read()


def published_version(store: KnowledgeStore, document_id: str) -> str | None:
    entry = read_publication(store).get(document_id)
    return entry["version"] if entry else None


def version_dir(store: KnowledgeStore, document_id: str, version: str) -> Path:
    return store.document_dir(document_id) / "published" / version


def publish(store: KnowledgeStore, document_id: str, version: str, counts: dict) -> dict:
    target = version_dir(store, document_id, version)
    if not target.exists():
        staging = target.with_name(target.name + ".staging")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        shutil.copy2(store.parents_path(document_id), staging / "parents.parquet")
        shutil.copy2(store.children_path(document_id), staging / "children.parquet")
        if store.acronyms_path(document_id).exists():  # readers make it from the parents otherwise
            shutil.copy2(store.acronyms_path(document_id), staging / ACRONYMS_FILE)
        if store.identity_path(document_id).exists():  # readers fall back to the conversion's title
            shutil.copy2(store.identity_path(document_id), staging / IDENTITY_FILE)
        staging.replace(target)
    entry = {
        "version": version,
        "path": str(target.relative_to(store.root)),
        "published_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        **counts,
    }

    def flip(publication: dict[str, dict]) -> bool:
        publication[document_id] = entry
        return True

    pointer(store).edit(flip)
    for old in (store.document_dir(document_id) / "published").iterdir():
        if old.name != version:
            shutil.rmtree(old, ignore_errors=True)
    return entry


def withdraw(store: KnowledgeStore, document_id: str) -> None:
    pointer(store).edit(lambda publication: publication.pop(document_id, None) is not None)
