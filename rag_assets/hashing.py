"""Content hashes: every ID and version stamp in the store derives from these."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_text(*parts: object) -> str:
    """Hash of several values; the separator keeps ("ab","c") and ("a","bc") apart."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(part, ensure_ascii=False, sort_keys=True, default=str).encode())
        digest.update(b"\x1f")
    return digest.hexdigest()


def short_id(*parts: object, length: int = 20) -> str:
    return sha256_text(*parts)[:length]
