"""Content hashes: every ID and version stamp in the store derives from these."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import BinaryIO

from rag_assets.errors import DocumentError

BLOCK = 1 << 20


def sha256_stream(handle: BinaryIO, sink: BinaryIO | None = None) -> tuple[str, int]:
    """(sha256, size) of what `handle` reads to its end, each block also written to `sink`."""
    digest, size = hashlib.sha256(), 0
    for block in iter(lambda: handle.read(BLOCK), b""):
        digest.update(block)
        size += len(block)
        if sink is not None:
            sink.write(block)
    return digest.hexdigest(), size


def sha256_file(path: Path) -> str:
    with open(path, "rb") as handle:
        return sha256_stream(handle)[0]


def copy_hashed(path: Path, sink: BinaryIO) -> tuple[str, int]:
    """Copy the file to `sink` in one read, returning the sha256 and size of the bytes copied:
    hashing and copying in two reads would name a file rewritten in between by bytes it no
    longer holds. A file whose size or modification time moved while it was read is refused
    rather than stored as a mix of its versions."""
    with open(path, "rb") as handle:
        before = os.fstat(handle.fileno())
        sha, size = sha256_stream(handle, sink)
        after = os.fstat(handle.fileno())
    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns) or size != after.st_size:
        raise DocumentError(
            path,
            f"file changed while it was read ({before.st_size:,} bytes when the copy began, "
            f"{after.st_size:,} when it ended); try again",
        )
    return sha, size


def sha256_text(*parts: object) -> str:
    """Hash of several values; the separator keeps ("ab","c") and ("a","bc") apart."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(part, ensure_ascii=False, sort_keys=True, default=str).encode())
        digest.update(b"\x1f")
    return digest.hexdigest()


def short_id(*parts: object, length: int = 20) -> str:
    return sha256_text(*parts)[:length]
