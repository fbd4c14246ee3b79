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
from typing import NamedTuple

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


class PdfChar(NamedTuple):
    """One non-space character as pdfium reads it, in top-left page coordinates."""

    text: str
    x: float  # centre of its glyph box
    y: float
    hidden: str | None  # why a reader cannot see it, or None


def _signature(function, restype, *argtypes):
    """`function` called through our own ctypes signature, every pointer an int: pypdfium2's
    signature checks each argument and returns a pointer object to cast, which costs more than
    the call itself over a page's thousands of characters."""
    return ctypes.CFUNCTYPE(restype, *argtypes)(ctypes.cast(function, ctypes.c_void_p).value)


_VOID, _INT = ctypes.c_void_p, ctypes.c_int
_get_unicode = _signature(pdfium_c.FPDFText_GetUnicode, ctypes.c_uint, _VOID, _INT)
_get_char_box = _signature(pdfium_c.FPDFText_GetCharBox, _INT, _VOID, _INT, _VOID, _VOID, _VOID, _VOID)
_get_text_object = _signature(pdfium_c.FPDFText_GetTextObject, _VOID, _VOID, _INT)


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


def _flat_colour(planes: np.ndarray) -> np.ndarray | None:
    """The one colour of a box (one plane a channel) that shows nothing else, or None when
    something is drawn there. Channel by channel, stopping at the first that varies: most
    boxes show their glyphs, and a reduction over one contiguous plane is many times faster
    than over interleaved channels."""
    low, high = [], []
    for plane in planes:
        low.append(int(plane.min()))
        high.append(int(plane.max()))
        if high[-1] - low[-1] > FLAT_TOLERANCE:
            return None
    return (np.array(low) + np.array(high)) / 2


def _read_chars(raw) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The page's non-space characters: their texts, rows of (left, right, bottom, top, pdfium
    index) and their text objects' addresses (0 when none)."""
    textpage = ctypes.cast(raw, ctypes.c_void_p).value
    box = (ctypes.c_double * 4)()
    at = ctypes.addressof(box)
    texts: list[str] = []
    rows: list[float] = []
    objects: list[int] = []
    for index in range(pdfium_c.FPDFText_CountChars(raw)):
        text = chr(_get_unicode(textpage, index))
        if text.isspace() or not text.isprintable():
            continue
        _get_char_box(textpage, index, at, at + 8, at + 16, at + 24)
        texts.append(text)
        rows.extend((*box, index))
        objects.append(_get_text_object(textpage, index) or 0)
    return texts, np.array(rows, dtype=float).reshape(-1, 5), np.array(objects, dtype=np.uint64)


def page_chars(page: pypdfium2.PdfPage) -> list[PdfChar]:
    """Every non-space character of ``page`` with why it is hidden (None when a reader sees it).

    The page is rendered once, without its /Rotate (character boxes are unrotated), at
    ``RENDER_SCALE``; each text object is judged on the union of its glyph boxes, its size
    and colour read from its first character.
    """
    left, bottom, right, top = page.get_bbox()
    textpage = page.get_textpage()
    try:
        raw = textpage.raw
        texts, rows, keys = _read_chars(raw)
        if not texts:
            return []
        l, r, b, t = rows[:, 0], rows[:, 1], rows[:, 2], rows[:, 3]
        objects, first, owner = np.unique(keys, return_index=True, return_inverse=True)
        reasons: list[str | None] = []
        colours = np.empty((len(objects), 3))
        for n, index in enumerate(rows[first, 4].astype(int).tolist()):
            reasons.append(TINY if _effective_size(raw, index) < MIN_SIZE else None)
            colours[n] = _fill_colour(raw, index)
        judged = np.array([reason is None for reason in reasons]) & (objects != 0)
        flat = _flat_colours(page, _unions(rows[:, :4], owner, judged), (left, top)) if judged.any() else {}
    finally:
        textpage.close()
    off_page = (r <= left) | (l >= right) | (t <= bottom) | (b >= top)
    shown: dict[int, str] = {}  # object -> the reason its seen-nothing box gives
    for n, colour in flat.items():
        if colour is not None:
            same = np.abs(colour - colours[n]).max() <= SAME_COLOUR
            shown[n] = SAME_AS_BACKGROUND if same else NOT_DRAWN
    xs, ys = ((l + r) / 2 - left).tolist(), (top - (b + t) / 2).tolist()
    out = []
    for text, x, y, n, outside in zip(texts, xs, ys, owner.tolist(), off_page.tolist()):
        reason = reasons[n]
        if reason is None:
            reason = OFF_PAGE if outside else shown.get(n)
        out.append(PdfChar(text, x, y, reason))
    return out


def _unions(boxes: np.ndarray, owner: np.ndarray, judged: np.ndarray) -> dict[int, list[float]]:
    """Object index -> the union (left, bottom, right, top) of its characters' boxes, for the
    objects `judged`."""
    count = len(judged)
    low = np.full((count, 2), np.inf)
    high = np.full((count, 2), -np.inf)
    np.minimum.at(low, owner, boxes[:, [0, 2]])
    np.maximum.at(high, owner, boxes[:, [1, 3]])
    return {n: [low[n, 0], low[n, 1], high[n, 0], high[n, 1]] for n in np.flatnonzero(judged).tolist()}


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
    planes = np.ascontiguousarray(np.moveaxis(image, 2, 0))  # red, green, blue planes
    height, width = image.shape[:2]
    out: dict[int, np.ndarray | None] = {}
    for key, (l, b, r, t) in boxes.items():
        x0 = max(0, math.floor((l - MARGIN - origin[0]) * RENDER_SCALE))
        x1 = min(width, math.ceil((r + MARGIN - origin[0]) * RENDER_SCALE))
        y0 = max(0, math.floor((origin[1] - t - MARGIN) * RENDER_SCALE))
        y1 = min(height, math.ceil((origin[1] - b + MARGIN) * RENDER_SCALE))
        out[key] = _flat_colour(planes[:, y0:y1, x0:x1]) if x1 > x0 and y1 > y0 else None
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
