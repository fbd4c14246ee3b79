"""Text a reader cannot see, found with pdfium, dropped from a page's cells before they are read.

A PDF can carry text that no viewer shows (white 1-pt text "la franchise est de 1 euro" under
a visible 130 €): indexed, it would be quoted as the document's word. A character is hidden
when its pdfium text object, rendered as a viewer renders the page, leaves its glyph boxes
one flat colour (white on white, any colour on the same colour, a layer that is off, text
clipped away or covered, an invisible render mode over blank paper), when its size is under
``MIN_SIZE`` points, or when it lies outside the page's crop box.

Render mode 3 ("invisible") is not a reason by itself: an OCR'd scan lays its text that way
over the page image, and there the box shows the scanned glyphs, so it is kept. Judging the
rendered pixels, not the text's declared state, is what lets both cases be told apart.
"""

from __future__ import annotations

import ctypes
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pypdfium2
import pypdfium2.raw as pdfium_c

MIN_SIZE = 2.0  # points: text smaller than this is not read by anyone
RENDER_SCALE = 1.0  # 72 dpi: any glyph covers some pixel, and anti-aliasing shows even partial cover
FLAT_TOLERANCE = 24  # 0-255 per channel: a box whose pixels all stay within this range shows no glyph
MARGIN = 1.0  # points around a glyph box: a glyph all ink (a hyphen, a bar) still shows against its ground
SAME_COLOUR = 48  # ... and that colour is the text's own when this close (else the text was not drawn)

TINY = "under 2 pt"
OFF_PAGE = "outside the crop box"
SAME_AS_BACKGROUND = "same colour as what is under it"
NOT_DRAWN = "not drawn: invisible render mode, hidden layer, clipped or covered"


@dataclass(frozen=True)
class PdfChar:
    """One non-space character as pdfium reads it, in top-left page coordinates."""

    text: str
    x: float  # centre of its glyph box
    y: float
    hidden: str | None  # why a reader cannot see it, or None


def _effective_size(textpage, index: int) -> float:
    """The character's font size scaled by its text and page matrices."""
    matrix = pdfium_c.FS_MATRIX()
    size = pdfium_c.FPDFText_GetFontSize(textpage, index)
    if not pdfium_c.FPDFText_GetMatrix(textpage, index, matrix):
        return size
    return size * math.sqrt(abs(matrix.a * matrix.d - matrix.b * matrix.c))


def _fill_colour(textpage, index: int) -> tuple[int, int, int]:
    r, g, b, a = (ctypes.c_uint() for _ in range(4))
    pdfium_c.FPDFText_GetFillColor(textpage, index, r, g, b, a)
    return r.value, g.value, b.value


def _flat_colour(pixels: np.ndarray) -> np.ndarray | None:
    """The one colour of a box that shows nothing else, or None when something is drawn there."""
    low, high = pixels.min(axis=(0, 1)).astype(int), pixels.max(axis=(0, 1)).astype(int)
    return (low + high) / 2 if (high - low).max() <= FLAT_TOLERANCE else None


def page_chars(page: pypdfium2.PdfPage) -> list[PdfChar]:
    """Every non-space character of ``page`` with why it is hidden (None when a reader sees it).

    The page is rendered once, without its /Rotate (character boxes are unrotated), at
    ``RENDER_SCALE``; each text object is judged on the union of its glyph boxes.
    """
    left, bottom, right, top = page.get_bbox()
    textpage = page.get_textpage()
    box = [ctypes.c_double() for _ in range(4)]  # left, right, bottom, top
    try:
        raw = textpage.raw
        chars: list[tuple[str, tuple[float, float, float, float], int | None]] = []
        objects: dict[int | None, tuple[str | None, tuple[int, int, int]]] = {}  # object -> (reason, colour)
        boxes: dict[int, list[float]] = {}  # text object -> union of its glyph boxes
        for index in range(pdfium_c.FPDFText_CountChars(raw)):
            text = chr(pdfium_c.FPDFText_GetUnicode(raw, index))
            if text.isspace() or not text.isprintable():
                continue
            pdfium_c.FPDFText_GetCharBox(raw, index, *box)
            l, r, b, t = (v.value for v in box)
            obj = pdfium_c.FPDFText_GetTextObject(raw, index)
            key = ctypes.cast(obj, ctypes.c_void_p).value if obj else None
            if key not in objects:  # size and colour are the text object's: read once
                objects[key] = (TINY if _effective_size(raw, index) < MIN_SIZE else None, _fill_colour(raw, index))
            chars.append((text, (l, b, r, t), key))
            if key is not None and objects[key][0] is None:
                union = boxes.setdefault(key, [l, b, r, t])
                union[:] = [min(union[0], l), min(union[1], b), max(union[2], r), max(union[3], t)]
        flat = _flat_colours(page, boxes, (left, top)) if boxes else {}
    finally:
        textpage.close()
    out = []
    for text, (l, b, r, t), key in chars:
        reason, colour = objects[key]
        if reason is None and (r <= left or l >= right or t <= bottom or b >= top):
            reason = OFF_PAGE
        shown = flat.get(key) if reason is None else None
        if shown is not None:
            same = np.abs(shown - np.array(colour)).max() <= SAME_COLOUR
            reason = SAME_AS_BACKGROUND if same else NOT_DRAWN
        out.append(PdfChar(text, (l + r) / 2 - left, top - (b + t) / 2, reason))
    return out


def _flat_colours(
    page: pypdfium2.PdfPage, boxes: dict[int, list[float]], origin: tuple[float, float]
) -> dict[int, np.ndarray | None]:
    """Text object -> the flat colour its boxes show, or None when its glyphs are seen."""
    rotation = page.get_rotation()
    if rotation:
        page.set_rotation(0)  # in memory only: the boxes are in unrotated page space
    try:
        image = page.render(scale=RENDER_SCALE, rev_byteorder=True).to_numpy()[:, :, :3]
    finally:
        if rotation:
            page.set_rotation(rotation)
    height, width = image.shape[:2]
    out: dict[int, np.ndarray | None] = {}
    for key, (l, b, r, t) in boxes.items():
        x0 = max(0, math.floor((l - MARGIN - origin[0]) * RENDER_SCALE))
        x1 = min(width, math.ceil((r + MARGIN - origin[0]) * RENDER_SCALE))
        y0 = max(0, math.floor((origin[1] - t - MARGIN) * RENDER_SCALE))
        y1 = min(height, math.ceil((origin[1] - b + MARGIN) * RENDER_SCALE))
        out[key] = _flat_colour(image[y0:y1, x0:x1]) if x1 > x0 and y1 > y0 else None
    return out


def hidden_summary(reasons: Counter[str]) -> str:
    """'41 characters of invisible text dropped (same colour as what is under it, under 2 pt)'."""
    total = sum(reasons.values())
    return (
        f"{total} character{'s' if total != 1 else ''} of invisible text dropped "
        f"({', '.join(reason for reason, _ in reasons.most_common())})"
    )


__all__ = [
    "MIN_SIZE",
    "NOT_DRAWN",
    "OFF_PAGE",
    "SAME_AS_BACKGROUND",
    "TINY",
    "PdfChar",
    "hidden_summary",
    "page_chars",
]
