"""Which files are documents, and which are the same bytes under another name.

Whether a document needs (re)processing is not decided here: Dagster decides it from the
data versions it records (rag_assets/defs/ingestion/assets.py).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from rag_assets.errors import DocumentError, printable
from rag_assets.hashing import sha256_file
from rag_assets.index.records import load_source_record
from rag_assets.ingest.sidecars import SIDECAR_SUFFIX, metadata_files
from rag_assets.ingest.sources import MEDIA_TYPES
from rag_assets.settings import Settings
from rag_assets.store import KnowledgeStore, document_key_for, file_lock, read_json, write_json_atomic


@dataclass
class Registration:
    paths: dict[str, Path] = field(default_factory=dict)  # key -> source path (registered)
    duplicates: dict[Path, str] = field(default_factory=dict)  # path -> key of the indexed copy


def candidate_files(
    paths: Iterable[Path], follow_links_inside: bool = False, refused: dict[Path, str] | None = None
) -> list[Path]:
    """Files as given; folders recursively, keeping supported documents only (sidecars,
    READMEs and scripts beside them are not documents).

    Symbolic links are not followed (folders linked inside a folder are not walked either):
    a link is left out, named in ``refused`` (link -> reason), unless ``follow_links_inside``
    and its target stays inside the folder given (for a file given itself: its folder).
    So is a document whose file or metadata file has a name (hard link) outside that folder."""
    files: list[Path] = []
    names: dict[Path, Counter] = {}
    for path in map(Path, paths):
        if path.is_dir():
            found = [
                p
                for p in sorted(path.rglob("*"))
                if (p.is_symlink() or p.is_file())
                and p.suffix.lower() in MEDIA_TYPES
                and not p.name.endswith(SIDECAR_SUFFIX)
                and not p.name.startswith(".")
                and p.name.lower() != "readme.md"
            ]
            root = path
        else:
            found, root = [path], path.absolute().parent
        for file in found:
            reason = link_refusal(file, root, follow_links_inside) or hard_link_refusal(file, root, names)
            if reason is None:
                files.append(file)
            elif refused is not None:
                refused[file] = reason
    return files


def link_refusal(path: Path, folder: Path, follow_links_inside: bool) -> str | None:
    """Why the link ``path`` is not followed (None: not a link, or a link allowed). Names the
    link only: where it leads is not the reader's business."""
    if not path.is_symlink():
        return None
    if not follow_links_inside:
        return (
            "is a symbolic link; links are not followed (RAG_ASSETS_FOLLOW_LINKS_INSIDE=true follows "
            "links that stay inside the folder)"
        )
    target = path.resolve()
    if not target.is_relative_to(folder.resolve()) or not target.is_file():
        return "is a symbolic link leading outside the folder (or to nothing); not followed"
    return None


def _names_under(folder: Path) -> Counter:
    """How many names each file with several names (hard links) has under ``folder``."""
    counts: Counter = Counter()
    for parent, _, entries in os.walk(folder):  # symbolic links to folders are not walked
        for entry in entries:
            try:
                stat = os.lstat(os.path.join(parent, entry))
            except OSError:
                continue
            if stat.st_nlink > 1:
                counts[stat.st_dev, stat.st_ino] += 1
    return counts


def _outside_names(path: Path, folder: Path, names: dict[Path, Counter], follow: bool) -> str | None:
    try:
        stat = path.stat() if follow else path.lstat()
    except OSError:
        return None  # gone or unreadable: the source stage says so
    if stat.st_nlink <= 1:
        return None
    if folder not in names:
        names[folder] = _names_under(folder)
    outside = stat.st_nlink - names[folder][stat.st_dev, stat.st_ino]
    if outside <= 0:
        return None
    return (
        f"has {stat.st_nlink} names (hard links), {outside} of them outside {printable(folder.absolute())}; "
        "a file with several names is read only when all of them are inside the folder ingested"
    )


def hard_link_refusal(path: Path, folder: Path, names: dict[Path, Counter]) -> str | None:
    """Why the document ``path`` is not read: it, its sidecar or the defaults file it takes
    has a name outside ``folder`` (another name of the same bytes, which another folder's
    owner may change). ``names``: the counts per folder, walked once."""
    reason = _outside_names(path, folder, names, follow=True)  # a link followed stays inside the folder
    if reason:
        return reason
    try:
        sidecars = metadata_files(path)
    except DocumentError:
        return None  # a look-alike sidecar: the source stage refuses the document, naming it
    for sidecar in sidecars:
        # a sidecar that is a symbolic link is refused by the source stage, by its own name
        if reason := _outside_names(sidecar, folder, names, follow=False):
            return f"its metadata file {printable(sidecar)} {reason}"
    return None


def _indexed_sha(store: KnowledgeStore, key: str) -> str | None:
    try:
        return load_source_record(store, key).sha256
    except FileNotFoundError:
        return None


def register(settings: Settings, files: list[Path]) -> Registration:
    """Register the files in the store. A file whose bytes equal an already indexed
    document under another name is not registered: its name is recorded as an alias of
    that document."""
    store = KnowledgeStore(settings.store)
    result = Registration()
    registry = store.registry()
    by_sha: dict[str, str] = {}
    for key in registry:
        sha = _indexed_sha(store, key)
        if sha:
            by_sha.setdefault(sha, key)
    keep = []
    for path in files:
        try:
            sha = sha256_file(path) if path.is_file() else None
        except OSError:
            sha = None
        owner = by_sha.get(sha) if sha else None
        if owner is not None and owner != document_key_for(path) and Path(registry.get(owner, "")).exists():
            result.duplicates[path] = owner
            record_alias(store, owner, path)
            continue
        if sha:
            by_sha.setdefault(sha, document_key_for(path))
        keep.append(path)
    result.paths.update(store.register(keep))
    return result


def record_alias(store: KnowledgeStore, document_id: str, path: Path) -> None:
    aliases_path = store.document_dir(document_id) / "aliases.json"
    with file_lock(store.lock_path("aliases")):
        aliases = read_json(aliases_path) if aliases_path.exists() else []
        if str(path.resolve()) not in aliases:
            write_json_atomic(aliases_path, sorted({*aliases, str(path.resolve())}))


def aliases_of(store: KnowledgeStore, document_id: str) -> list[str]:
    path = store.document_dir(document_id) / "aliases.json"
    return read_json(path) if path.exists() else []


def withdrawn(settings: Settings, folder: Path) -> list[str]:
    """Registered documents under `folder` whose source file is gone."""
    folder = folder.resolve()
    registry = KnowledgeStore(settings.store).registry()
    return [key for key, path in registry.items() if Path(path).is_relative_to(folder) and not Path(path).exists()]
