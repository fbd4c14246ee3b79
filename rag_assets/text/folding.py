"""One folding of accents and case, for every comparison of words that ignores them.

In French insurance text accents and case are not evidence of a different word: "Assuré",
"assure" and "ASSURÉ" are one word written three ways (capitals drop their accents, PDFs and
users drop them too), so words are compared folded.
"""

from __future__ import annotations

import unicodedata
from itertools import filterfalse


def fold(text: str) -> str:
    """`text` without accents (NFKD, combining marks dropped: compatibility forms such as
    the ligature "ﬁ" are split too) and case folded (`str.casefold`: "ß" → "ss")."""
    # casefold last: NFKD can give capitals ("ℌ" → "H"), and this order is idempotent
    return "".join(filterfalse(unicodedata.combining, unicodedata.normalize("NFKD", text))).casefold()


def fold_alphanumeric(text: str) -> str:
    """`fold(text)` with only its letters, digits and single spaces: how a heading or a name
    is compared, punctuation aside ("Article 3 – Garanties :" → "article 3 garanties")."""
    return " ".join("".join(c for c in fold(text) if c.isalnum() or c.isspace()).split())
