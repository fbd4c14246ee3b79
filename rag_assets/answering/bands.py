"""Bands: a table row or column that holds for a range of a quantity ("de 15 001 à 30 000 €",
"moins de 25 ans", "au-delà de 100 000 km", "à partir de 61 ans"), and whether the
quantity a question states (a 35 000 € car, 85 000 km, a 52-year-old) falls inside.

A band table's whole row of bands answers no one: the reader's own figure picks one band,
and the answer gives that band's value, naming its row and column (`answering/extractive.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache

from rag_assets.answering.figures import (
    DATE,
    DURATION,
    NUMBER,
    PERCENT,
    Figure,
    figure_value,
    figures,
    fold_keeping_positions,
)

_BELOW = re.compile(
    r"(?:moins de|inferieure?s? (?:ou egale?s? )?a|jusqu'?\s?a|au plus|maximum|max\.?|<=?|≤|"
    r"n'excedant pas|ne depassant pas)\s*$"
)
_ABOVE = re.compile(
    r"(?:plus de|superieure?s? (?:ou egale?s? )?a|au-?dela de|a partir de|des|au moins|minimum|"
    r"min\.?|>=?|≥|exceda\w* |depassa\w* )\s*$"
)
_ABOVE_AFTER = re.compile(r"^\s*(?:et (?:plus|au-?dela)|ou plus|\+)")
_BETWEEN = re.compile(r"^\s*(?:a|et|-|–|—|au)\s*$")


@dataclass(frozen=True)
class Band:
    low: Decimal | None
    high: Decimal | None
    dimension: str  # money | percent | number | day (durations compared in days)

    def holds(self, value: Decimal) -> bool:
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


def _dimension(figure: Figure) -> str | None:
    if figure.kind == DATE:
        return None
    if figure.kind == DURATION:
        return "day"
    return figure.kind if figure.kind in ("money", PERCENT, NUMBER) else None


def bands(text: str) -> list[Band]:
    """The bands written in `text` (a table cell, a row label or a column header)."""
    found = figures(text)
    folded = fold_keeping_positions(text or "")
    out: list[Band] = []
    used: set[int] = set()
    for i, figure in enumerate(found):
        if i in used:
            continue
        before = folded[max(0, figure.start - 40) : figure.start]
        nxt = found[i + 1] if i + 1 < len(found) else None
        if nxt is not None and _BETWEEN.match(folded[figure.end : nxt.start]):
            # "de 15 001 à 30 000 €": the bare first number takes the second's unit
            dimension = _dimension(nxt) if figure.kind == NUMBER else _dimension(figure)
            low = high = None
            if dimension and _dimension(nxt) == dimension:
                low = figure_value(
                    figure
                    if figure.kind != NUMBER or nxt.kind == NUMBER
                    else Figure(figure.raw, nxt.kind, figure.values, nxt.unit)
                )
                high = figure_value(nxt)
            if low is not None and high is not None and low <= high:
                out.append(Band(low, high, dimension))
                used |= {i, i + 1}
                continue
        dimension, value = _dimension(figure), figure_value(figure)
        if not dimension or value is None:
            continue
        if _BELOW.search(before):
            below = (
                out.pop()
                if out
                and out[-1].high is None
                and out[-1].dimension == dimension
                and out[-1].low is not None
                and out[-1].low <= value
                else None
            )
            # "plus de 12 mois et jusqu'à 18 mois" is one band
            out.append(Band(below.low if below else None, value, dimension))
        elif _ABOVE.search(before) or _ABOVE_AFTER.match(folded[figure.end : figure.end + 15]):
            out.append(Band(value, None, dimension))
    return out


@lru_cache(maxsize=1024)
def quantities(question: str) -> tuple[tuple[str, Decimal], ...]:
    """(dimension, value) of the figures the question states about its own case: amounts,
    rates, durations and ages, and bare numbers of 100 or more (kilometres, square metres);
    not the "2" of "formule 2"."""
    out = []
    for figure in figures(question):
        dimension, value = _dimension(figure), figure_value(figure)
        if dimension and value is not None and (dimension != NUMBER or value >= 100):
            out.append((dimension, value))
    return tuple(out)


def band_match(text: str, asked: Sequence[tuple[str, Decimal]]) -> bool | None:
    """True when a band of `text` holds one of the question's quantities, False when it has
    bands of that dimension and none holds it, None when it has none of that dimension."""
    written = bands(text)
    verdict = None
    for dimension, value in asked:
        same = [b for b in written if b.dimension == dimension]
        if not same:
            continue
        if any(b.holds(value) for b in same):
            return True
        verdict = False
    return verdict
