"""Page coordinates and letters as both sides compare them: the ingestion stores line boxes in
them (rag_assets/ingest/boxes.py), the answers find a quote's lines and draw them
(rag_assets/answering/highlight.py).

Boxes are PDF points with the origin at the page's top-left corner, y growing downwards, on the
page as shown (its rotation applied); pypdfium2 and PDF page space use a bottom-left origin on
the unrotated page.
"""

from __future__ import annotations

import unicodedata

from rag_assets.text.language import TYPOGRAPHIC_VARIANTS


def letters(char: str) -> str:
    """A character as compared: NFKC, case-folded, typographic variants unified, no space."""
    return "".join(unicodedata.normalize("NFKC", char).casefold().translate(TYPOGRAPHIC_VARIANTS).split())


def comparable(text: str) -> list[tuple[int, str]]:
    """(index in ``text``, letter) for each letter of ``text`` as compared (spaces and soft hyphens dropped)."""
    return [(index, letter) for index, char in enumerate(text) for letter in letters(char)]


def to_top_left(rotation: int, width: float, height: float, x: float, y: float) -> tuple[float, float]:
    """A point of PDF page space (bottom-left origin, the page unrotated, ``width`` x ``height``)
    as the page is shown (its /Rotate applied, clockwise) with a top-left origin."""
    return {0: (x, height - y), 90: (y, x), 180: (width - x, y), 270: (height - y, width - x)}[rotation % 360]


def to_page_space(rotation: int, width: float, height: float, x: float, y: float) -> tuple[float, float]:
    """The inverse of ``to_top_left``."""
    return {0: (x, height - y), 90: (y, x), 180: (width - x, y), 270: (width - y, height - x)}[rotation % 360]


def page_space_box(page, box) -> tuple[float, float, float, float]:
    """A shown, top-left box of a pypdfium2 page as (left, bottom, right, top) in its page space."""
    rotation = page.get_rotation()
    width, height = page.get_width(), page.get_height()
    if rotation in (90, 270):
        width, height = height, width
    corners = [to_page_space(rotation, width, height, x, y) for x, y in ((box[0], box[1]), (box[2], box[3]))]
    xs, ys = [c[0] for c in corners], [c[1] for c in corners]
    return min(xs), min(ys), max(xs), max(ys)
