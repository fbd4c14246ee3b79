"""Is a PDF text layer text? Verdicts on the text extracted from one page or one font.

Some PDFs carry a text layer that does not read: a font whose ToUnicode map is
shifted by a constant number of code points ("vous êtes" extracted as
"WPVT ÐUFT"), glyphs mapped to private-use code points, words run together
with no spaces. Scanned pages have no text layer at all.

The verdict is one of:

- ``empty``: no text at all;
- ``ok``: reads as text, or is too short to judge (a title, a page number);
- ``shifted(k)``: every code point is ``k`` above the right one (a ToUnicode
  map off by ``k``): subtracting ``k`` makes it read as French or English; the
  repair is that mechanical shift (``unshift``), never a per-word guess;
- ``garbled``: private-use or unmapped code points, words run together, or
  almost none of the common French/English words normal text is made of, and
  no shift fixes it.

"Reads as French or English" is measured by the share of the words (two
letters or more) that are common function words: normal prose scores about
0.3 to 0.5 in either language, shifted text about 0. Tables, formulas and
lists score low too, so a low score alone makes a verdict only on long texts
whose letters are also implausible (see ``assess_text``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from rag_assets.text.language import _ENGLISH, _FRENCH

VerdictKind = Literal["ok", "shifted", "garbled", "empty"]

# Common words of French and English (two letters or more: single letters are
# as frequent in formulas as in prose).
COMMON_WORDS = frozenset(
    w
    for w in (
        _FRENCH
        | _ENGLISH
        | set(
            """
            au aux avec ce ces cet cette dans de des du en et est il ils elle elles leur leurs lors
            mais ne ni nos notre nous on ont ou où par pas peut plus pour qu que qui sa se ses si son
            sont sous sur tout tous toute toutes un une vos votre vous été être avoir fait doit
            entre chaque comme dont ainsi autre autres même cas afin selon après avant aussi
            the of and to in is for on that by with as are be this which or from an at it not
            any shall such may will has have been its their other than these under where if no
            all who his her they we you your our can must should would each into upon was were
            """.split()
        )
    )
    if len(w) >= 2
)
SHIFTS = (-3, -2, -1, 1, 2, 3)
MIN_WORDS = 8  # words (2+ letters) needed to judge a text by its common words
OK_SCORE = 0.12  # common-word share at or above which a text reads as text
SHIFT_SCORE = 0.1  # common-word share a shift must reach ...
SHIFT_GAIN = 0.08  # ... gaining this much over the unshifted text ...
SHIFT_DISTINCT = 4  # ... with this many different common words (not one "de" repeated)
GARBLED_MIN_WORDS = 30  # a low score alone condemns only a long text ...
GARBLED_SCORE = 0.03  # ... scoring below this ...
VOWEL_RANGE = (0.25, 0.62)  # ... whose vowel share is outside what French/English prose has
LONG_WORD = 20  # letters; longer runs are words run together
LONG_WORD_SHARE = 0.3  # share of letters in such runs that means "spaces are missing"
UNMAPPED_SHARE = 0.25  # share of private-use/unmapped code points that means "not text"
UNMAPPED_MIN = 10

_WORD = re.compile(r"[^\W\d_]+")
# How PDF parsers spell a glyph with no Unicode mapping (docling-parse, pdfminer).
_PARSER_UNMAPPED = re.compile(r"GLYPH<[0-9A-Fa-f]+>|(?:/G\d+)|\(cid:\d+\)")
_VOWELS = set("aeiouyàâäéèêëîïôöùûüÿœæ")


@dataclass(frozen=True)
class Verdict:
    kind: VerdictKind
    shift: int = 0  # code points the text of a "shifted" verdict is off by (repair: ``unshift``)
    reason: str = ""
    score: float | None = None  # common-word share (after the shift for "shifted")
    words: int = 0

    def __str__(self) -> str:
        if self.kind == "shifted":
            return f"shifted({self.shift:+d})"
        return f"{self.kind} ({self.reason})" if self.reason else self.kind


@dataclass
class PageAssessment:
    """Verdict on a page whose text is split by font, with the shifts that repair it."""

    verdict: Verdict  # page-level: empty, garbled, shifted (some font repaired) or ok
    font_shifts: dict[str, int] = field(default_factory=dict)  # font -> shift of its text (to undo)
    fonts: dict[str, Verdict] = field(default_factory=dict)


def _is_unmapped(ch: str) -> bool:
    category = unicodedata.category(ch)
    return category in ("Co", "Cs", "Cn") or ch in "\ufffd\ufffe\uffff" or (category == "Cc" and not ch.isspace())


def shift_text(text: str, shift: int) -> str:
    """Add ``shift`` to the code point of every non-space character.

    Spaces the extractor inserted between glyphs stay; a character whose
    shifted code point would be a control or surrogate stays as it is.
    """
    if shift == 0:
        return text
    out = []
    for ch in text:
        code = ord(ch) + shift
        if ch.isspace() or code < 0x20 or 0x7F <= code < 0xA0 or 0xD800 <= code <= 0xDFFF or code > 0x10FFFF:
            out.append(ch)
        else:
            out.append(chr(code))
    return "".join(out)


def unshift(text: str, shift: int) -> str:
    """Undo a text layer's shift: ``shift_text(text, -shift)``."""
    return shift_text(text, -shift)


def words(text: str) -> list[str]:
    """Lowercased letter runs of two letters or more."""
    return [w for w in _WORD.findall(text.lower()) if len(w) >= 2]


def language_score(text: str) -> tuple[float, int, int]:
    """(share of common French/English words, number of words, distinct common words)."""
    tokens = words(text)
    if not tokens:
        return 0.0, 0, 0
    common = [w for w in tokens if w in COMMON_WORDS]
    return len(common) / len(tokens), len(tokens), len(set(common))


def vowel_share(text: str) -> float | None:
    letters = [c for c in text.lower() if c.isalpha() and (c.isascii() or c in _VOWELS)]
    if not letters:
        return None
    return sum(c in _VOWELS for c in letters) / len(letters)


def _long_word_share(text: str) -> float:
    runs = _WORD.findall(text)
    letters = sum(len(r) for r in runs)
    return sum(len(r) for r in runs if len(r) >= LONG_WORD) / letters if letters else 0.0


def _best_shift(text: str, score: float) -> Verdict | None:
    best: Verdict | None = None
    for k in SHIFTS:
        shifted_score, n, distinct = language_score(unshift(text, k))
        if (
            shifted_score >= SHIFT_SCORE
            and shifted_score - score >= SHIFT_GAIN
            and distinct >= SHIFT_DISTINCT
            and (best is None or shifted_score > (best.score or 0.0))
        ):
            best = Verdict(
                "shifted",
                shift=k,
                score=round(shifted_score, 3),
                words=n,
                reason=f"reads as text once shifted back by {-k:+d}",
            )
    return best


def assess_text(text: str) -> Verdict:
    """Verdict on one page's (or one font's) extracted text."""
    text = _PARSER_UNMAPPED.sub("\ufffd", text)
    chars = [c for c in text if not c.isspace()]
    if not chars:
        return Verdict("empty", reason="no text")
    unmapped = sum(_is_unmapped(c) for c in chars)
    if unmapped >= UNMAPPED_MIN and unmapped / len(chars) >= UNMAPPED_SHARE:
        return Verdict("garbled", reason=f"{unmapped / len(chars):.0%} private-use or unmapped code points")
    score, n, _ = language_score(text)
    if n >= MIN_WORDS and score < OK_SCORE:
        shifted = _best_shift(text, score)
        if shifted is not None:
            return shifted
    if n >= MIN_WORDS / 2 and _long_word_share(text) >= LONG_WORD_SHARE:
        return Verdict("garbled", score=round(score, 3), words=n, reason="words run together (no spaces)")
    if n >= GARBLED_MIN_WORDS and score < GARBLED_SCORE:
        vowels = vowel_share(text)
        if vowels is not None and not VOWEL_RANGE[0] <= vowels <= VOWEL_RANGE[1]:
            return Verdict(
                "garbled",
                score=round(score, 3),
                words=n,
                reason=f"not French or English (common words {score:.0%}, vowels {vowels:.0%})",
            )
    if n < MIN_WORDS:
        return Verdict("ok", score=round(score, 3), words=n, reason="too short to judge")
    return Verdict("ok", score=round(score, 3), words=n)


def assess_page(texts_by_font: Mapping[str, str], known_shifts: Mapping[str, int] | None = None) -> PageAssessment:
    """Verdict on a page given its text per font (one entry when fonts are unknown).

    A font is repaired when its own text reads shifted, or when it is too
    short to judge and the same font was found shifted elsewhere in the
    document (``known_shifts``). The page is then judged on its repaired text
    as a whole: still shifted or garbled means the text layer cannot be
    trusted (fonts too short to judge each, or not a shift at all).
    """
    known_shifts = known_shifts or {}
    fonts = {font: assess_text(text) for font, text in texts_by_font.items()}
    if all(v.kind == "empty" for v in fonts.values()):
        return PageAssessment(Verdict("empty", reason="no text"), fonts=fonts)
    shifts: dict[str, int] = {}
    for font, verdict in fonts.items():
        if verdict.kind == "shifted":
            shifts[font] = verdict.shift
        elif font in known_shifts and verdict.kind == "ok" and verdict.words < MIN_WORDS:
            shifts[font] = known_shifts[font]
    # A font too short to judge alone (a bold heading, a table header) on a page whose other
    # fonts are shifted: the same broken encoder made it; take the page's shift when it
    # reads at least as well shifted back.
    page_shifts = sorted(set(shifts.values()))
    if len(page_shifts) == 1:
        for font, verdict in fonts.items():
            if font in shifts or verdict.kind != "ok" or verdict.words >= MIN_WORDS:
                continue
            text = texts_by_font[font]
            back = unshift(text, page_shifts[0])
            vowels = vowel_share(back)
            if language_score(back)[0] >= language_score(text)[0] and (
                vowels is not None and VOWEL_RANGE[0] <= vowels <= VOWEL_RANGE[1]
            ):
                shifts[font] = page_shifts[0]
    repaired = "\n".join(unshift(text, shifts.get(font, 0)) for font, text in texts_by_font.items())
    page = assess_text(repaired)
    if page.kind in ("shifted", "garbled"):
        reason = page.reason if page.kind == "garbled" else f"part of the text reads shifted by {page.shift:+d}"
        return PageAssessment(Verdict("garbled", reason=reason, score=page.score, words=page.words), shifts, fonts)
    if shifts:
        distinct = sorted(set(shifts.values()))
        verdict = Verdict(
            "shifted",
            shift=distinct[0] if len(distinct) == 1 else 0,
            score=page.score,
            words=page.words,
            reason=", ".join(f"{f}: {k:+d}" for f, k in shifts.items()),
        )
        return PageAssessment(verdict, shifts, fonts)
    return PageAssessment(page, {}, fonts)


__all__ = [
    "COMMON_WORDS",
    "PageAssessment",
    "Verdict",
    "assess_page",
    "assess_text",
    "language_score",
    "shift_text",
    "unshift",
    "vowel_share",
    "words",
]
