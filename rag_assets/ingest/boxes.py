"""Where a PDF's text is on its pages: line boxes with character offsets, so that a quote of a
parent or child maps back to the lines that print it.

A *line* is ``[start, end, page, l, t, r, b]``: the characters ``[start, end)`` of a text (a block,
then a parent or a child) printed on page ``page`` (1-based) inside the box ``l, t, r, b``.
Coordinates are PDF points with the origin at the page's **top-left** corner, y growing
downwards, on the page as shown (its rotation applied: the way it is drawn). Docling gives
item boxes with a bottom-left origin (PDF's) and table cells with a top-left one; both are
converted here, once.

Docling keeps one box per item (a paragraph) and per table cell. Lines come from the PDF's
own text layer, read with pypdfium2: the characters inside an item's box, grouped into rows,
aligned with the item's text (which Docling or our repairs may have changed slightly: ligatures,
joined hyphenation). A table cell is its own box. Where the page has no text layer for the item
(a scan read by OCR), the item's box stands for all its text.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from docling_core.types.doc import BoundingBox, DoclingDocument, TableCell

from rag_assets.index.page_boxes import comparable, letters, to_top_left

Line = list  # [start, end, page, l, t, r, b]
_MARGIN = 2.0  # points: a character whose centre is this close outside an item's box is still its own
DIGITS = 1  # rounding of stored coordinates (a tenth of a point)


@dataclass(frozen=True)
class Char:
    key: str  # the character as compared (NFKC, case-folded; may be several letters: "ﬁ" -> "fi")
    l: float
    t: float
    r: float
    b: float


def page_sizes(document: DoclingDocument) -> dict[str, list[float]]:
    """{"3": [width, height]} in points, for every page of the document."""
    return {str(no): [round(p.size.width, DIGITS), round(p.size.height, DIGITS)] for no, p in document.pages.items()}


def _top_left(bbox: BoundingBox, height: float) -> tuple[float, float, float, float]:
    box = bbox.to_top_left_origin(page_height=height)
    return box.l, box.t, box.r, box.b


def _rounded(values) -> list[float]:
    return [round(float(v), DIGITS) for v in values]


def _group_lines(chars: list[Char]) -> list[list[Char]]:
    """The characters of one item's box as its printed lines, top to bottom, each left to right
    (the PDF's drawing order need not be the reading order)."""
    lines: list[list[Char]] = []
    centre = top = bottom = height = 0.0
    for char in sorted(chars, key=lambda c: (c.t + c.b) / 2):
        middle = (char.t + char.b) / 2
        # a letter of this row: near the row's centre, or (a full stop, a comma) inside its extent
        if lines and (middle - centre < 0.5 * max(height, char.b - char.t, 1.0) or top <= middle <= bottom):
            lines[-1].append(char)
            centre += (middle - centre) / len(lines[-1])
            top, bottom, height = min(top, char.t), max(bottom, char.b), max(height, char.b - char.t)
            continue
        lines.append([char])
        centre, top, bottom, height = middle, char.t, char.b, char.b - char.t
    return [sorted(line, key=lambda c: c.l) for line in lines]


def _line_of_each_letter(text_keys: list[str], line_keys: list[tuple[int, str]]) -> list[int | None]:
    """For each letter of the text, the line index of the PDF letter it is aligned with."""
    pdf = [k for _, k in line_keys]
    if text_keys == pdf:
        return [i for i, _ in line_keys]
    found: list[int | None] = [None] * len(text_keys)
    matcher = difflib.SequenceMatcher(None, text_keys, pdf, autojunk=False)
    for a, b, size in matcher.get_matching_blocks():
        for k in range(size):
            found[a + k] = line_keys[b + k][0]
    if not any(x is not None for x in found) and pdf:  # nothing in common (a garbled font): by position
        found = [line_keys[min(len(pdf) - 1, i * len(pdf) // max(1, len(text_keys)))][0] for i in range(len(text_keys))]
    return found


class PdfText:
    """A PDF's text layer, page by page, for locating Docling items' lines."""

    def __init__(self, path: Path, document: DoclingDocument):
        import pypdfium2 as pdfium

        self.pdf = pdfium.PdfDocument(str(path))
        self.heights = {no: p.size.height for no, p in document.pages.items()}
        self._chars: dict[int, list[Char]] = {}

    def close(self) -> None:
        self.pdf.close()

    def __enter__(self) -> "PdfText":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def chars(self, page_no: int) -> list[Char]:
        if page_no not in self._chars:
            import pypdfium2.raw as raw

            chars = []
            if 1 <= page_no <= len(self.pdf):
                page = self.pdf[page_no - 1]
                rotation = page.get_rotation()
                width, height = page.get_width(), page.get_height()
                if rotation in (90, 270):  # pypdfium2 gives the shown size; characters are in page space
                    width, height = height, width
                textpage = page.get_textpage()
                for i in range(textpage.count_chars()):
                    key = letters(chr(raw.FPDFText_GetUnicode(textpage.raw, i)))
                    if not key:
                        continue
                    left, bottom, right, top = textpage.get_charbox(i)
                    if right <= left and top <= bottom:
                        continue
                    (x0, y0), (x1, y1) = (
                        to_top_left(rotation, width, height, left, bottom),
                        to_top_left(rotation, width, height, right, top),
                    )
                    chars.append(Char(key, min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1)))
                textpage.close()
                page.close()
            self._chars[page_no] = chars
        return self._chars[page_no]

    def item_lines(self, item, text: str) -> list[Line]:
        """Lines of ``text`` (the item's text, offsets into it) on the item's pages. An item may have
        several boxes (a paragraph Docling joined across lines, columns or pages): their lines are
        read box after box, in the item's order."""
        regions = [
            (prov.page_no, _top_left(prov.bbox, self.heights[prov.page_no]))
            for prov in getattr(item, "prov", None) or []
            if prov.page_no in self.heights
        ]
        return self._lines_in_boxes(text, regions)

    def _lines_in_boxes(self, text: str, regions: list[tuple[int, tuple]]) -> list[Line]:
        lines: list[tuple[int, list[Char]]] = []
        for page_no, (left, top, right, bottom) in regions:
            inside = [
                c
                for c in self.chars(page_no)
                if left - _MARGIN <= (c.l + c.r) / 2 <= right + _MARGIN
                and top - _MARGIN <= (c.t + c.b) / 2 <= bottom + _MARGIN
            ]
            lines += [(page_no, line) for line in _group_lines(inside)]
        if not text:
            return []
        if not lines:  # no text layer there (a scan): the item's box holds all its text
            return [[0, len(text), regions[0][0], *_rounded(regions[0][1])]] if regions else []
        line_keys = [(n, letter) for n, (_, line) in enumerate(lines) for c in line for letter in c.key]
        letters_ = comparable(text)
        assigned = _line_of_each_letter([k for _, k in letters_], line_keys)
        # each position of the text takes the line of the last aligned letter at or before it
        # (spaces, letters the PDF writes otherwise), the first aligned line before any
        per_char: list[int] = []
        current = next((x for x in assigned if x is not None), 0)
        pending = iter(zip(letters_, assigned))
        nxt = next(pending, None)
        for offset in range(len(text)):
            while nxt is not None and nxt[0][0] == offset:
                if nxt[1] is not None:
                    current = nxt[1]
                nxt = next(pending, None)
            per_char.append(current)
        boxes = [
            (
                page_no,
                _rounded(
                    (min(c.l for c in line), min(c.t for c in line), max(c.r for c in line), max(c.b for c in line))
                ),
            )
            for page_no, line in lines
        ]
        out: list[Line] = []
        run_start = 0
        for offset in range(1, len(text) + 1):
            if offset == len(text) or per_char[offset] != per_char[run_start]:
                page_no, box = boxes[per_char[run_start]]
                out.append([run_start, offset, page_no, *box])
                run_start = offset
        return out

    def cell_box(self, table, cell: TableCell) -> tuple[int, list[float]] | None:
        """(page, box) of a table cell. A table continued over pages has a box on each page and
        its cells do not say their page: the cell is on the page that prints its text there."""
        pages = [prov.page_no for prov in table.prov if prov.page_no in self.heights]
        if cell.bbox is None or not pages:
            return None
        if len(set(pages)) > 1:
            wanted = Counter(k for _, k in comparable(cell.text))
            pages.sort(key=lambda page_no: -sum((wanted & self._letters_in(page_no, cell.bbox)).values()))
        return pages[0], _rounded(_top_left(cell.bbox, self.heights[pages[0]]))

    def _letters_in(self, page_no: int, bbox: BoundingBox) -> Counter:
        left, top, right, bottom = _top_left(bbox, self.heights[page_no])
        return Counter(
            letter
            for c in self.chars(page_no)
            if left - _MARGIN <= (c.l + c.r) / 2 <= right + _MARGIN
            and top - _MARGIN <= (c.t + c.b) / 2 <= bottom + _MARGIN
            for letter in c.key
        )

    def item_box(self, item) -> tuple[int, list[float]] | None:
        """(page, box) of an item's first box (a picture: its text has no lines of its own)."""
        for prov in getattr(item, "prov", None) or []:
            height = self.heights.get(prov.page_no)
            if height is not None:
                return prov.page_no, _rounded(_top_left(prov.bbox, height))
        return None


def shifted(lines: list[Line], by: int, limit: int | None = None) -> list[Line]:
    """Lines moved ``by`` characters, clipped to ``[0, limit)``; those left empty are dropped."""
    out = []
    for start, end, *rest in lines:
        start, end = max(0, start + by), end + by
        if limit is not None:
            end = min(end, limit)
        if end > start:
            out.append([start, end, *rest])
    return out


def within(lines: list[Line], start: int, end: int) -> list[Line]:
    """The lines of ``[start, end)`` of a text, with offsets relative to ``start`` (a child of a parent)."""
    return shifted([[max(s, start), min(e, end), *rest] for s, e, *rest in lines if s < end and e > start], -start)
