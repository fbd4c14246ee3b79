"""Publication: the one switch that makes a document version visible to readers.

The index stages write a new version *beside* the published one; publishing copies the
version's parents/children to `documents/<id>/published/<version>/`, flips the entry in
`published.json` (atomic replace), then drops the other versions from both indexes.
A reader therefore serves, per document, the version named in `published.json` and skips
index hits of any other version; a run killed before the flip leaves the previous
version intact and searchable.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from rag_assets.store import ACRONYMS_FILE, KnowledgeStore, file_lock, read_json, write_json_atomic

PUBLISHED_FILE = "published.json"


def published_path(store: KnowledgeStore) -> Path:
    return store.root / PUBLISHED_FILE


def read_publication(store: KnowledgeStore) -> dict[str, dict]:
    path = published_path(store)
    return read_json(path) if path.exists() else {}


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
        staging.replace(target)
    entry = {
        "version": version,
        "path": str(target.relative_to(store.root)),
        "published_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        **counts,
    }
    with file_lock(store.lock_path("publication")):
        publication = read_publication(store)
        publication[document_id] = entry
        write_json_atomic(published_path(store), publication)
    for old in (store.document_dir(document_id) / "published").iterdir():
        if old.name != version:
            shutil.rmtree(old, ignore_errors=True)
    return entry


def withdraw(store: KnowledgeStore, document_id: str) -> None:
    with file_lock(store.lock_path("publication")):
        publication = read_publication(store)
        if publication.pop(document_id, None) is not None:
            write_json_atomic(published_path(store), publication)
