"""Figures written the way people write them, normalised so that two spellings of the same
amount, rate, duration or date compare equal.

    figures("5 000 €") == figures("5000 euros") == figures("5.000 €")      (money, 5000)
    figures("6 930 k€")                                                     (money, 6930000)
    figures("99,5 %") / "99.5 pour cent"                                    (percent, 99.5)
    figures("30 jours") ~ figures("un mois"); "deux ans" ~ "24 mois"        (durations)
    figures("1er octobre 2024") ~ "2024-10-01"                              (date)

A figure carries every reading it may have ("5.000" is 5 or 5000, "1,004" is 1.004 or
1004): two figures match when one reading of each agrees (`same_figure`). Durations
compare in days, weeks, months and years (a month is 30 days, a year 12 months or 365
days), so "30 jours" matches "un mois" but "jours ouvrés" are still days.

Used by the premise detection (answering/premises.py) and by the answer evaluation
(evaluation/answer_scoring.py: expected figures present in the answer).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from rag_assets.text.folding import fold

MONEY, PERCENT, DURATION, DATE, NUMBER = "money", "percent", "duration", "date", "number"

_MONTHS = {
    "janvier": 1,
    "fevrier": 2,
    "mars": 3,
    "avril": 4,
    "mai": 5,
    "juin": 6,
    "juillet": 7,
    "aout": 8,
    "septembre": 9,
    "octobre": 10,
    "novembre": 11,
    "decembre": 12,
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
}
_WORDS = {
    "un": 1,
    "une": 1,
    "deux": 2,
    "trois": 3,
    "quatre": 4,
    "cinq": 5,
    "six": 6,
    "sept": 7,
    "huit": 8,
    "neuf": 9,
    "dix": 10,
    "onze": 11,
    "douze": 12,
    "treize": 13,
    "quatorze": 14,
    "quinze": 15,
    "seize": 16,
    "vingt": 20,
    "trente": 30,
    "quarante": 40,
    "cinquante": 50,
    "soixante": 60,
    "cent": 100,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six_": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "sixty": 60,
}
_WORDS.pop("six_")
# unit word -> (kind, unit, scale)
_UNITS = [
    (r"k\s?€|keur|k\s?euros?|milliers? d'euros", (MONEY, "€", 1000)),
    (r"m€|meur|millions? d'euros|millions? €|m\s?euros?", (MONEY, "€", 1000000)),
    (r"€|eur\b|euros?\b", (MONEY, "€", 1)),
    (r"%|pour\s?cent\b|percent\b", (PERCENT, "%", 1)),
    (r"jours?\b|j\b|days?\b", (DURATION, "day", 1)),
    (r"semaines?\b|weeks?\b", (DURATION, "week", 1)),
    (r"mois\b|months?\b", (DURATION, "month", 1)),
    (r"ans?\b|ann[ée]es?\b|years?\b", (DURATION, "year", 1)),
    (r"heures?\b|h\b|hours?\b", (DURATION, "hour", 1)),
]
_UNIT = re.compile(r"\s*(?:\(\s*\d+\s*\)\s*)?(?:(" + "|".join(f"(?:{p})" for p, _ in _UNITS) + r"))", re.IGNORECASE)
_NUM = re.compile(r"(?<![\w.,])(\d{1,3}(?:[ \u00a0\u202f.]\d{3})+(?![\d])|\d+)(?:,(\d+)|\.(\d+))?(?![\d])")
# A font that prints the euro sign as "e" (a real policy writes "700 e", "2 000e"): after a
# space or a thousands group it is euros; against a plain number it is an ordinal ("76e").
_EURO_AS_E = re.compile(r"\s+e\b(?![’'])")
_EURO_AS_E_GROUPED = re.compile(r"e\b(?![’'])")
_WORD_NUM = re.compile(r"\b(" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")\b", re.IGNORECASE)
_DATE_PATTERNS = [
    (re.compile(r"\b(\d{1,2})(?:er|st|nd|rd|th)?\s+(" + "|".join(_MONTHS) + r")\s+(\d{4})\b"), ("d", "m", "y")),
    (re.compile(r"\b(" + "|".join(_MONTHS) + r")\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b"), ("m", "d", "y")),
    (re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b"), ("y", "m", "d")),
    (re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b"), ("d", "m", "y")),
    # a day of every year: "au 31 décembre", "le 1er janvier" (ISO 8601's --MM-DD)
    (re.compile(r"\b(\d{1,2})(?:er)?\s+(" + "|".join(_MONTHS) + r")\b(?!\s+\d)"), ("d", "m")),
]


@dataclass(frozen=True)
class Figure:
    raw: str  # as written
    kind: str  # money | percent | duration | date | number
    values: frozenset[str]  # every reading, as canonical decimal strings ("5000", "99.5") or an ISO date
    unit: str | None = None  # €, %, day, week, month, year, hour
    start: int = 0
    end: int = 0

    @property
    def keys(self) -> frozenset[tuple[str, str]]:
        """Comparable readings: (dimension, value); a duration in every unit it converts to."""
        if self.kind != DURATION:
            return frozenset((self.kind, v) for v in self.values)
        keys = set()
        for value in self.values:
            for dimension, converted in _durations(Decimal(value), self.unit):
                keys.add((dimension, _canon(converted)))
        return frozenset(keys)

    def describe(self) -> str:
        return " ".join(self.raw.split())


def _canon(value: Decimal) -> str:
    value = value.normalize()
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _durations(value: Decimal, unit: str | None) -> list[tuple[str, Decimal]]:
    if unit == "day":
        out = [("day", value)]
        if value % 30 == 0:
            out.append(("month", value / 30))
        if value % 365 == 0:
            out.append(("year", value / 365))
        if value % 7 == 0:
            out.append(("week", value / 7))
        return out
    if unit == "week":
        return [("week", value), ("day", value * 7)]
    if unit == "month":
        out = [("month", value), ("day", value * 30)]
        if value % 12 == 0:
            out += [("year", value / 12), ("day", value / 12 * 365)]
        return out
    if unit == "year":
        return [("year", value), ("month", value * 12), ("day", value * 365)]
    if unit == "hour":
        out = [("hour", value)]
        if value % 24 == 0:
            out.append(("day", value / 24))
        return out
    return [(unit or "duration", value)]


def fold_keeping_positions(text: str) -> str:
    """`fold` character by character, each kept to one character (a lone combining mark
    becomes a space): same length as the input, so positions stay valid."""
    return "".join(fold(char)[:1] or " " for char in text)


def _readings(integer: str, decimals: str | None, separator: str | None) -> set[Decimal]:
    digits = re.sub(r"\D", "", integer)
    grouped = bool(re.search(r"[ \u00a0\u202f.]", integer))
    readings: set[Decimal] = set()
    whole = Decimal(digits or "0")
    if decimals is None:
        readings.add(whole)
        groups = integer.split(".")
        if len(groups) == 2 and not re.search(r"[ \u00a0\u202f]", integer):
            readings.add(Decimal(f"{groups[0]}.{groups[1]}"))  # "5.000": five thousand, or 5.0 in English
        return readings
    readings.add(Decimal(f"{digits}.{decimals}"))
    if len(decimals) == 3 and len(digits) <= 3 and not grouped:
        readings.add(Decimal(digits + decimals))  # "5,000" / "1.000": thousands in some locales
    return readings


def _euro_as_e(folded: str, end: int, grouped: bool) -> tuple[tuple[str, str, int] | None, int]:
    match = _EURO_AS_E.match(folded, end) or (_EURO_AS_E_GROUPED.match(folded, end) if grouped else None)
    return ((MONEY, "€", 1), match.end()) if match else (None, end)


def _unit_after(folded: str, end: int) -> tuple[tuple[str, str, int] | None, int]:
    match = _UNIT.match(folded, end)
    if not match or not match.group(1):
        return None, end
    word = match.group(1).lower()
    for pattern, spec in _UNITS:
        if re.fullmatch(pattern, word, re.IGNORECASE):
            return spec, match.end()
    return None, end


def figures(text: str) -> list[Figure]:
    """The figures of `text`, in order: dates first claim their span, then numbers in digits
    (with thousands separators: space, no-break space, dot) and number words before a unit
    ("trente (30) jours" is one figure)."""
    text = text or ""
    folded = fold_keeping_positions(text)
    found: list[Figure] = []
    taken: list[tuple[int, int]] = []

    def free(start: int, end: int) -> bool:
        return not any(s < end and start < e for s, e in taken)

    for pattern, order in _DATE_PATTERNS:
        for match in pattern.finditer(folded):
            if not free(*match.span()):
                continue
            parts = dict(zip(order, match.groups()))
            month = parts["m"]
            month = _MONTHS.get(month) if not month.isdigit() else int(month)
            try:
                day, year = int(parts["d"]), int(parts["y"]) if "y" in parts else None
            except ValueError:
                continue
            if not month or not 1 <= month <= 12 or not 1 <= day <= 31:
                continue
            value = f"{year:04d}-{month:02d}-{day:02d}" if year is not None else f"--{month:02d}-{day:02d}"
            found.append(
                Figure(text[match.start() : match.end()], DATE, frozenset({value}), "date", match.start(), match.end())
            )
            taken.append(match.span())
    for match in _WORD_NUM.finditer(folded):
        spec, end = _unit_after(folded, match.end())
        if spec is None or spec[0] != DURATION or not free(match.start(), end):
            continue  # "un" alone is an article; a number word counts before a duration unit
        number = Decimal(_WORDS[match.group(1).lower()])
        found.append(
            Figure(text[match.start() : end], DURATION, frozenset({_canon(number)}), spec[1], match.start(), end)
        )
        taken.append((match.start(), end))
    for match in _NUM.finditer(folded):
        if not free(*match.span()):
            continue
        integer, comma, dot = match.groups()
        decimals, separator = (comma, ",") if comma is not None else (dot, ".") if dot is not None else (None, None)
        readings = _readings(integer, decimals, separator)
        spec, end = _unit_after(folded, match.end())
        if spec is None:
            spec, end = _euro_as_e(folded, match.end(), grouped=not integer.isdigit())
        kind, unit, scale = spec if spec else (NUMBER, None, 1)
        values = frozenset(_canon(r * scale) for r in readings)
        found.append(Figure(text[match.start() : end], kind, values, unit, match.start(), end))
        taken.append((match.start(), end))
    return sorted(found, key=lambda f: f.start)


def same_figure(expected: Figure, found: Figure) -> bool:
    """One reading of each agrees: same dimension and value; a figure without a unit
    matches any figure of the same value (a table cell whose unit is in its header)."""
    if expected.keys & found.keys:
        return True
    if NUMBER in (expected.kind, found.kind) and DATE not in (expected.kind, found.kind):
        mine = expected.values if expected.kind != DURATION else {v for _, v in expected.keys}
        theirs = found.values if found.kind != DURATION else {v for _, v in found.keys}
        return bool(set(mine) & set(theirs))
    return False


def contains_figure(figure: Figure, text_or_figures) -> bool:
    pool = figures(text_or_figures) if isinstance(text_or_figures, str) else text_or_figures
    return any(same_figure(figure, other) for other in pool)


def to_decimal(value: str) -> Decimal | None:
    try:
        return Decimal(value)
    except (InvalidOperation, ValueError):
        return None


def figure_value(figure: Figure) -> Decimal | None:
    """One reading of the figure, to compare it with a band or a period (durations in days, the
    longest reading of "5.000"); None for a date or a figure without a reading."""
    if figure.kind == DURATION:
        days = [Decimal(v) for d, v in figure.keys if d == "day"]
        return min(days) if days else None  # "12 mois" is 360 days (or 365 as a year): the lower
    readings = sorted(figure.values, key=len)
    return to_decimal(readings[-1]) if readings and figure.kind != DATE else None


# What a question asks for, by the words that ask it: "combien de jours" a duration,
# "combien", "plafond", "franchise" an amount, "taux" a rate.
_ASKS = [
    (
        DURATION,
        re.compile(
            r"\b(?:d[ée]lais?|dur[ée]es?|carences?|pr[ée]avis|combien de (?:temps|jours?|mois|ans|ann[ée]es|"
            r"semaines?|nuits?|heures?)|quand|how long|period|waiting)\b",
            re.IGNORECASE,
        ),
    ),
    (PERCENT, re.compile(r"\b(?:taux|pourcentages?|quelle part|rate|percentage)\b|%", re.IGNORECASE)),
    (
        DATE,
        re.compile(
            r"\b(?:(?:quelle|what) date|jusqu'(?:à|au) quand|avant quand|à partir de quand|by when)\b", re.IGNORECASE
        ),
    ),
    # "sommes" is a sum, not "sommes-nous"
    (
        MONEY,
        re.compile(
            r"\b(?:combien(?! de (?:temps|jours?|mois|ans|ann[ée]es|semaines?|nuits?|heures?))|montants?|"
            r"plafonds?|plafonn[ée]e?s?|franchises?|prix|co[uû]ts?|rembours\w*|indemni\w*|capital|"
            r"(?<!nous )sommes?(?!-nous)|"
            r"tarifs?|cotisations?|how much|limit|deductible)\b|€",
            re.IGNORECASE,
        ),
    ),
]


@lru_cache(maxsize=1024)
def wanted_kinds(question: str) -> frozenset[str]:
    """The kinds of figure the question asks for (money, percent, duration, date); empty when
    it asks for none in particular."""
    return frozenset(kind for kind, pattern in _ASKS if pattern.search(question or ""))
