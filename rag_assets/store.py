"""Layout of the knowledge store on disk, atomic writes and the document registry.

<store>/registry.json                  document_id -> source path (what the partitions mean)
<store>/sources/<sha256>/<file name>   content-addressed copies of the source files
<store>/documents/<document_id>/       per-document artifacts (source.json, docling/, parents, acronyms, identity,
                                       children)
<store>/lancedb/                       dense vectors (table "children"), unless an object store
                                       is set (RAG_ASSETS_OBJECT_STORE): then <uri>/lancedb/
<store>/tantivy/                       lexical index
<store>/cache/                         embedding cache by content hash
<store>/published.json                 the publication pointer (or <uri>/published.json)
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import unicodedata
from pathlib import Path
from typing import Any, Callable

from filelock import FileLock

from rag_assets.hashing import short_id
from rag_assets.object_store import ObjectStore

LANCEDB_NAME = "lancedb"


ACRONYMS_FILE = "acronyms.json"  # a document's acronym summary, beside its parents
IDENTITY_FILE = "identity.json"  # what names a document (parsing/identity.py), beside its parents


def write_json_atomic(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(payload, handle, ensure_ascii=False, indent=2, sort_keys=True, default=str)
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def file_lock(path: Path) -> FileLock:
    """Exclusive lock on ``path`` (a context manager): serializes writers across threads
    and processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path)


_SEPARATORS = re.compile(r"[\\/\x00-\x1f]")
_DOT_RUNS = re.compile(r"\.{2,}")
# a stored name fits a file system's 255-byte name limit with room for what is
# added beside it (".part" while copying, ".meta.yaml"); a longer name keeps a hash of the whole.
MAX_NAME_BYTES = 180


def _unsafe(ch: str) -> bool:
    """Separators, control and invisible formatting characters (escape codes, bidi overrides)."""
    return bool(_SEPARATORS.match(ch)) or unicodedata.category(ch)[0] == "C" or unicodedata.category(ch) in ("Zl", "Zp")


def safe_file_name(name: str) -> str:
    """A name that cannot climb out of its folder (no separators, no '..', no control
    characters) and fits any file system (at most MAX_NAME_BYTES bytes of UTF-8), keeping
    the extension that says what the file is."""
    cleaned = "".join("_" if _unsafe(ch) else ch for ch in name)
    suffix = Path(name).suffix if not any(map(_unsafe, Path(name).suffix)) else ""
    suffix = suffix if len(suffix.encode()) <= 16 else ""
    stem = cleaned[: len(cleaned) - len(suffix)]
    stem = _DOT_RUNS.sub("_", stem).strip("._") or "document"
    if len((stem + suffix).encode()) > MAX_NAME_BYTES:
        tag = "-" + short_id(name, length=8)
        room = MAX_NAME_BYTES - len(suffix.encode()) - len(tag)
        stem = stem.encode()[:room].decode(errors="ignore").rstrip("._") + tag
    return stem + suffix


_KEY_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def document_key_for(path: Path) -> str:
    """Partition key of a source file: its name made safe, plus a hash of where it lives.

    The key follows the file's identity (its location), not its bytes, so a new version of
    the same file replaces the old one.
    """
    name = _KEY_UNSAFE.sub("-", safe_file_name(path.name)).strip("-.") or "document"
    return f"{name[:80]}-{short_id(str(path.resolve()), length=8)}"


class KnowledgeStore:
    def __init__(self, root: Path, objects: ObjectStore | None = None):
        self.root = Path(root)
        self.objects = objects  # where the dense index and the publication pointer live, if not under root

    @classmethod
    def of(cls, settings) -> KnowledgeStore:
        return cls(settings.store, ObjectStore.from_settings(settings))

    # paths -----------------------------------------------------------------
    @property
    def registry_path(self) -> Path:
        return self.root / "registry.json"

    @property
    def lancedb_dir(self) -> Path:
        return self.root / LANCEDB_NAME

    @property
    def tantivy_dir(self) -> Path:
        return self.root / "tantivy"

    @property
    def cache_dir(self) -> Path:
        return self.root / "cache"

    @property
    def sources_dir(self) -> Path:
        return self.root / "sources"

    def source_dir(self, sha256: str) -> Path:
        return self.sources_dir / sha256

    def document_dir(self, document_id: str) -> Path:
        return self.root / "documents" / document_id

    def docling_dir(self, document_id: str) -> Path:
        return self.document_dir(document_id) / "docling"

    def parents_path(self, document_id: str) -> Path:
        return self.document_dir(document_id) / "parents.parquet"

    def acronyms_path(self, document_id: str) -> Path:
        return self.document_dir(document_id) / ACRONYMS_FILE

    def identity_path(self, document_id: str) -> Path:
        return self.document_dir(document_id) / IDENTITY_FILE

    def children_path(self, document_id: str) -> Path:
        return self.document_dir(document_id) / "children.parquet"

    def lock_path(self, name: str) -> Path:
        return self.root / "locks" / f"{name}.lock"

    # registry --------------------------------------------------------------
    def registry(self) -> dict[str, str]:
        if not self.registry_path.exists():
            return {}
        return read_json(self.registry_path)

    def register(self, paths: list[Path]) -> dict[str, Path]:
        """Record source files under their document keys; returns key -> path."""
        keys = {document_key_for(p): Path(p).resolve() for p in paths}
        self._edit_registry(lambda registry: registry.update({key: str(path) for key, path in keys.items()}))
        return keys

    def unregister(self, document_id: str) -> None:
        self._edit_registry(lambda registry: registry.pop(document_id, None))

    def _edit_registry(self, edit: Callable[[dict[str, str]], object]) -> None:
        """Read, change in place and write the registry under its lock."""
        with file_lock(self.lock_path("registry")):
            registry = self.registry()
            edit(registry)
            write_json_atomic(self.registry_path, registry)

    def source_path_of(self, document_id: str) -> Path:
        registry = self.registry()
        if document_id not in registry:
            raise KeyError(f"document '{document_id}' is not registered in {self.registry_path}")
        return Path(registry[document_id])
