"""Evidence that survives re-chunking and parser upgrades: a document + a verbatim quote.

A parent (or child) is relevant to an evidence item when it belongs to the evidence's
document and its text, read with its own heading, either contains the quote or shares at
least half of the quote's 4-word shingles. Text on both sides is normalized first (Unicode
NFKC, accents and case folded, punctuation dropped, PDF hyphenation marks removed), so a
quote taken from the source still matches after Docling's dash/quote normalisation or a
table rendered as Markdown. Chunk ids are never stored in a question set.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from rag_assets.text.folding import fold

SHINGLE = 4
SHINGLE_SHARE = 0.5
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=65536)
def words(text: str) -> tuple[str, ...]:
    text = unicodedata.normalize("NFKC", text).replace("\ufffe", "").replace("\u00ad", "")
    return tuple(_WORD.findall(fold(text)))


def shingles(tokens: tuple[str, ...], size: int = SHINGLE) -> set[tuple[str, ...]]:
    return {tokens[i : i + size] for i in range(len(tokens) - size + 1)}


@dataclass(frozen=True)
class Evidence:
    document: str  # path relative to the collection root (a file name for flat folders), or a record id
    quote: str = ""  # verbatim quote; empty for benchmark records (the whole record is the evidence)

    def key(self) -> str:
        return f"{self.document}::{self.quote}"


class TextUnit:
    """A parent (or child) prepared for matching: normalized words and shingles, computed once."""

    __slots__ = ("unit_id", "document", "joined", "shingles")

    def __init__(self, unit_id: str, document: str, text: str):
        tokens = words(text)
        self.unit_id = unit_id
        self.document = document
        self.joined = " " + " ".join(tokens) + " "
        self.shingles = shingles(tokens)


def quote_matches(quote: str, unit: TextUnit) -> bool:
    tokens = words(quote)
    if not tokens:
        return False
    if " " + " ".join(tokens) + " " in unit.joined:
        return True
    quote_shingles = shingles(tokens)
    if not quote_shingles:  # shorter than a shingle: containment only
        return False
    return len(quote_shingles & unit.shingles) / len(quote_shingles) >= SHINGLE_SHARE


def document_matches(evidence_document: str, source_path: str, file_name: str) -> bool:
    """Evidence names a document by its path relative to the collection root (or its file
    name); a store knows the source's absolute path."""

    def norm(text: str) -> str:  # NFKC: a no-break space in a folder name equals a space
        return unicodedata.normalize("NFKC", text).replace("\\", "/")

    wanted = norm(evidence_document).strip("/")
    return wanted == norm(file_name) or norm(source_path).endswith("/" + wanted)


def relevant_units(
    evidence: list[Evidence], units: list[TextUnit], documents: dict[str, tuple[str, str]]
) -> dict[Evidence, list[str]]:
    """Evidence item → ids of the units that match it. ``documents`` maps a store document id
    to (source path, file name)."""
    found: dict[Evidence, list[str]] = {}
    for item in evidence:
        docs = {d for d, (path, name) in documents.items() if document_matches(item.document, path, name)}
        found[item] = [u.unit_id for u in units if u.document in docs and quote_matches(item.quote, u)]
    return found
