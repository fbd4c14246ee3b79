"""Cheap language identification (French vs English) by stop-word counts.

Only used when a document's sidecar does not declare its language; the lexical index
picks its analyzer from it.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-zàâäçéèêëîïôöùûüÿœæ]+")
_FRENCH = set(
    "le la les des du de un une et est en dans pour par sur au aux que qui ne pas ce cette son sa ses sont avec".split()
)
_ENGLISH = set("the of and to in is for on that by with as are be this which or from an at it not".split())
SUPPORTED = ("fr", "en")
# typographic variants two writings of one text differ by ("d’un" / "d'un", "–" / "-", a non-breaking
# space): a PDF and Docling's text, a quote and its source
TYPOGRAPHIC_VARIANTS = str.maketrans(
    {
        **dict.fromkeys("’‘`´", "'"),
        **dict.fromkeys("«»“”", '"'),
        **dict.fromkeys("–—‑‐−", "-"),
        **dict.fromkeys("\u00a0\u202f\u2009\u00ad", " "),
    }
)


def detect_language(text: str, default: str = "fr") -> str:
    words = _WORD.findall(text[:20000].lower())
    fr = sum(w in _FRENCH for w in words)
    en = sum(w in _ENGLISH for w in words)
    if fr == en:
        return default
    return "fr" if fr > en else "en"
