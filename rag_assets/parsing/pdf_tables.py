"""Table structure stage for Docling built from PDF ruling lines and text geometry.

Stands in for TableFormer when its weights cannot be downloaded. For each TABLE
cluster it finds row and column boundaries from the vector rules drawn in the
PDF (strokes and thin filled rectangles) and, where rules are missing, from the
whitespace between words, then emits the same ``Table`` objects as Docling's
TableStructureModel so page assembly and the document builder are unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
from docling.datamodel.accelerator_options import AcceleratorOptions
from docling.datamodel.base_models import Page, Table, TableStructurePrediction
from docling.datamodel.document import ConversionResult
from docling.datamodel.pipeline_options import BaseTableStructureOptions
from docling.models.base_layout_model import TABLE_LABELS
from docling.models.base_table_model import BaseTableStructureModel
from docling.utils.profiling import TimeRecorder
from docling_core.types.doc import BoundingBox, CoordOrigin, TableCell
from docling_core.types.doc.page import TextCell

from rag_assets.parsing.text_repair import clean_cell_text, join_lines
from rag_assets.text.amounts import BARE_AMOUNT

# Rules thicker than this are filled areas (shading, bars), not lines.
RULE_MAX_THICKNESS = 2.0
# Whitespace narrower than this (points) is a word space, not a column gap.
MIN_COLUMN_GAP = 4.0
# Share of text lines allowed to cross a column gap (spanning titles, merged headers).
GAP_CROSSING_SHARE = 0.1
# A rule must cover this share of a cell edge to count as a boundary there.
EDGE_COVERAGE = 0.5
# How far a word must reach into the next column's text to span it (unruled tables): this
# many points, and this share of its own width.
SPAN_OVERLAP = 3.0
SPAN_SHARE = 0.25
_LIST_MARKER = re.compile(r"^(?:[(\[]?\s?(?:\d{1,3}|[a-zA-Z]|[ivxlcdmIVXLCDM]{1,5})\s?[.)\]]?|[•·▪‣◦–—-])$")
_BOLD_FONT = re.compile(r"bold|black|heavy|semibold|demi", re.IGNORECASE)


@dataclass(frozen=True)
class Word:
    """A text cell in top-left page coordinates."""

    l: float
    t: float
    r: float
    b: float
    text: str
    bold: bool = False

    @property
    def h(self) -> float:
        return self.b - self.t

    @property
    def cx(self) -> float:
        return (self.l + self.r) / 2

    @property
    def cy(self) -> float:
        return (self.t + self.b) / 2


@dataclass
class TextLine:
    words: list[Word]

    @property
    def t(self) -> float:
        return min(w.t for w in self.words)

    @property
    def b(self) -> float:
        return max(w.b for w in self.words)

    @property
    def h(self) -> float:
        return float(np.median([w.h for w in self.words]))


@dataclass(frozen=True)
class Rules:
    """Horizontal rules as (y, x0, x1) and vertical rules as (x, y0, y1)."""

    horizontal: list[tuple[float, float, float]] = field(default_factory=list)
    vertical: list[tuple[float, float, float]] = field(default_factory=list)


@dataclass
class GridCell:
    row0: int
    row1: int  # exclusive
    col0: int
    col1: int  # exclusive
    words: list[Word] = field(default_factory=list)


@dataclass
class TableGrid:
    row_edges: list[float]
    col_edges: list[float]
    cells: list[GridCell]
    header: bool

    @property
    def num_rows(self) -> int:
        return len(self.row_edges) - 1

    @property
    def num_cols(self) -> int:
        return len(self.col_edges) - 1


def is_bold(cell: TextCell) -> bool:
    return bool(_BOLD_FONT.search(getattr(cell, "font_name", "") or ""))


def to_word(cell: TextCell) -> Word | None:
    """Convert a parsed (top-left origin) text cell; blank cells give None."""
    text = clean_cell_text(cell.text)
    if not text:
        return None
    box = cell.rect.to_bounding_box()
    if box.coord_origin != CoordOrigin.TOPLEFT:
        raise ValueError("text cells must be in top-left coordinates")
    l, r = sorted((box.l, box.r))
    t, b = sorted((box.t, box.b))
    return Word(l=l, t=t, r=r, b=b, text=text, bold=is_bold(cell))


def words_in_bbox(cells: Iterable[TextCell], bbox: BoundingBox, min_inside: float = 0.5) -> list[Word]:
    """Words whose area lies mostly inside ``bbox`` (top-left coordinates)."""
    words = []
    for cell in cells:
        w = to_word(cell)
        if w is None:
            continue
        area = max(w.r - w.l, 1e-6) * max(w.b - w.t, 1e-6)
        iw = min(w.r, bbox.r) - max(w.l, bbox.l)
        ih = min(w.b, bbox.b) - max(w.t, bbox.t)
        if iw > 0 and ih > 0 and iw * ih / area >= min_inside:
            words.append(w)
    return words


def group_lines(words: Sequence[Word]) -> list[TextLine]:
    """Group words into text lines by vertical overlap, top to bottom."""
    lines: list[TextLine] = []
    for w in sorted(words, key=lambda w: (w.cy, w.l)):
        if lines:
            line = lines[-1]
            overlap = min(line.b, w.b) - max(line.t, w.t)
            if overlap >= 0.5 * min(line.h, w.h):
                line.words.append(w)
                continue
        lines.append(TextLine(words=[w]))
    for line in lines:
        line.words.sort(key=lambda w: w.l)
    return lines


def page_rules(page: Page) -> Rules:
    """Straight horizontal/vertical rules of the page, stroked or drawn as thin boxes."""
    backend = page._backend
    if backend is None:
        return Rules()
    boxes = list(backend.get_shape_lines() or [])
    boxes += backend.get_thin_shape_boxes(max_thickness=RULE_MAX_THICKNESS) or []
    horizontal, vertical = [], []
    for box in boxes:
        l, r = sorted((box.l, box.r))
        t, b = sorted((box.t, box.b))
        if b - t <= RULE_MAX_THICKNESS and r - l > 2 * RULE_MAX_THICKNESS:
            horizontal.append(((t + b) / 2, l, r))
        elif r - l <= RULE_MAX_THICKNESS and b - t > 2 * RULE_MAX_THICKNESS:
            vertical.append(((l + r) / 2, t, b))
    return Rules(horizontal=_join_segments(horizontal), vertical=_join_segments(vertical))


def _join_segments(segments: list[tuple[float, float, float]], tol: float = 1.5) -> list[tuple[float, float, float]]:
    """Join collinear touching segments (rules drawn cell by cell, or drawn twice)."""
    joined: list[list[float]] = []
    for pos, a, b in sorted(segments):
        last = joined[-1] if joined else None
        if last is not None and abs(pos - last[0]) <= tol and a <= last[2] + tol:
            last[2] = max(last[2], b)
        else:
            joined.append([pos, a, b])
    return [(pos, a, b) for pos, a, b in joined]


def rules_in_bbox(rules: Rules, bbox: BoundingBox, tol: float = 3.0) -> Rules:
    """Rules inside ``bbox`` (with tolerance), clipped to it."""
    horizontal = [
        (y, max(x0, bbox.l), min(x1, bbox.r))
        for y, x0, x1 in rules.horizontal
        if bbox.t - tol <= y <= bbox.b + tol and min(x1, bbox.r) - max(x0, bbox.l) > tol
    ]
    vertical = [
        (x, max(y0, bbox.t), min(y1, bbox.b))
        for x, y0, y1 in rules.vertical
        if bbox.l - tol <= x <= bbox.r + tol and min(y1, bbox.b) - max(y0, bbox.t) > tol
    ]
    return Rules(horizontal=horizontal, vertical=vertical)


def _cluster_positions(values: Iterable[float], tol: float = 2.0) -> list[float]:
    """Merge positions closer than ``tol`` (rules drawn twice, box edges)."""
    merged: list[list[float]] = []
    for v in sorted(values):
        if merged and v - merged[-1][-1] <= tol:
            merged[-1].append(v)
        else:
            merged.append([v])
    return [float(np.mean(group)) for group in merged]


def _coverage(segments: Iterable[tuple[float, float]], lo: float, hi: float) -> float:
    """Share of [lo, hi] covered by the union of ``segments``."""
    if hi <= lo:
        return 0.0
    covered, end = 0.0, lo
    for a, b in sorted(segments):
        a, b = max(a, end), min(b, hi)
        if b > a:
            covered += b - a
            end = b
    return covered / (hi - lo)


def _gap_boundaries(lines: Sequence[TextLine], x0: float, x1: float) -> list[float]:
    """Column boundaries at whitespace that (almost) no text line crosses."""
    res = 0.5
    n = int((x1 - x0) / res) + 2
    counts = np.zeros(n, dtype=int)
    for line in lines:
        covered = np.zeros(n, dtype=bool)
        for w in line.words:
            covered[max(0, int((w.l - x0) / res)) : int((w.r - x0) / res) + 1] = True
        counts += covered
    # A title or note line across a table of 4+ lines must not hide its columns.
    allowed = max(1 if len(lines) >= 4 else 0, int(len(lines) * GAP_CROSSING_SHARE))
    free = counts <= allowed
    occupied = np.flatnonzero(~free)
    if occupied.size == 0:
        return []
    boundaries = []
    start = None
    for i in range(occupied[0], occupied[-1] + 1):
        if free[i] and start is None:
            start = i
        elif not free[i] and start is not None:
            if (i - start) * res >= MIN_COLUMN_GAP:
                boundaries.append(x0 + (start + i) / 2 * res)
            start = None
    return boundaries


def _drop_empty_bands(edges: list[float], centers: Sequence[float]) -> list[float]:
    """Remove edges so that no band between consecutive edges is empty (double rules, padding)."""
    kept = [edges[0]]
    for edge in edges[1:-1]:
        if any(kept[-1] <= c < edge for c in centers):
            kept.append(edge)
    if len(kept) > 1 and not any(kept[-1] <= c <= edges[-1] for c in centers):
        kept.pop()
    return [*kept, edges[-1]]


def _rule_between(rules: Rules, y0: float, y1: float, x0: float, x1: float) -> bool:
    """Whether a horizontal rule between y0 and y1 spans part of [x0, x1]."""
    return any(y0 - 1 <= y <= y1 + 1 and min(b, x1) - max(a, x0) > 0.3 * (x1 - x0) for y, a, b in rules.horizontal)


def _col_of(x: float, col_edges: Sequence[float]) -> int:
    for i in range(1, len(col_edges) - 1):
        if x < col_edges[i]:
            return i - 1
    return len(col_edges) - 2


def _goes_on(line: TextLine, above: TextLine, col_edges: Sequence[float]) -> bool:
    """A line opening in lowercase, under text of its first column, goes on with the line
    above ("Perte de votre statut de TNS" / "non agricole (chapitre « Les" / "conditions
    d'adhésion »…), also after a parenthesis ("(chapitre « Les conditions…"): a row opens
    with a capital, a figure or a marker. Under an empty column it is a line of its own
    (VAM p.38: "sans option | avec option" under the "Initiale" / "Essentiel" header)."""
    first = line.words[0]
    column = _col_of(first.cx, col_edges)
    return first.text.lstrip("(")[:1].islower() and any(_col_of(w.cx, col_edges) == column for w in above.words)


def _text_rows(lines: Sequence[TextLine], col_edges: Sequence[float], rules: Rules) -> list[list[TextLine]]:
    """Group text lines into table rows.

    A line continues the row above (a wrapped cell) when it is set tight under
    it, no rule separates them, and it leaves the first column empty (in tables
    the first column carries the row key) or opens in lowercase (the key wraps).
    """
    rows: list[list[TextLine]] = []
    for line in lines:
        if rows:
            prev = rows[-1][-1]
            tight = line.t - prev.b <= 0.8 * min(prev.h, line.h)
            first_col_empty = _col_of(line.words[0].l + 0.5, col_edges) > 0
            ruled = _rule_between(rules, prev.b, line.t, col_edges[0], col_edges[-1])
            if tight and (first_col_empty or _goes_on(line, prev, col_edges)) and not ruled and len(col_edges) > 2:
                rows[-1].append(line)
                continue
        rows.append([line])
    return rows


class _UnionFind:
    def __init__(self, n: int) -> None:
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(a)] = self.find(b)


def _merge_cells(
    n_rows: int, n_cols: int, join_right: np.ndarray, join_down: np.ndarray
) -> list[tuple[int, int, int, int]]:
    """Rectangular spans (row0, row1, col0, col1) from pairwise joins of base cells."""
    uf = _UnionFind(n_rows * n_cols)
    for r in range(n_rows):
        for c in range(n_cols):
            if c + 1 < n_cols and join_right[r, c]:
                uf.union(r * n_cols + c, r * n_cols + c + 1)
            if r + 1 < n_rows and join_down[r, c]:
                uf.union(r * n_cols + c, (r + 1) * n_cols + c)
    # Grow every group to its bounding rectangle; merge rectangles that then overlap.
    while True:
        spans: dict[int, list[int]] = {}
        for r in range(n_rows):
            for c in range(n_cols):
                g = uf.find(r * n_cols + c)
                s = spans.setdefault(g, [r, r + 1, c, c + 1])
                s[0], s[1] = min(s[0], r), max(s[1], r + 1)
                s[2], s[3] = min(s[2], c), max(s[3], c + 1)
        changed = False
        for g, (r0, r1, c0, c1) in spans.items():
            for r in range(r0, r1):
                for c in range(c0, c1):
                    if uf.find(r * n_cols + c) != uf.find(g):
                        uf.union(r * n_cols + c, g)
                        changed = True
        if not changed:
            return sorted(tuple(s) for s in spans.values())  # type: ignore[misc]


def _item_edges(band: Sequence[TextLine], col_edges: Sequence[float]) -> list[float] | None:
    """Rows of a band whose values are bare amounts, one per item of its first column
    ("- comparution devant le procureur | 411 €" / "- accord du prévenu et comparution
    immédiate" / "devant le juge du siège | 351 €" under one rule): an item opens with a
    capital, a figure or a marker, or is a line with an amount of its own after an item
    that has one ("Tribunal de police : | 500 €" / "infraction au code de la route | 400 €");
    a value alone on its line belongs to the item beside it, an item without a value to the
    one after it (a label wrapped onto a capital) unless it heads a list ("CIVI" / "- requête
    …"). None: the band's values are not all bare amounts, or it holds one item."""
    values = [" ".join(w.text for w in line.words if _col_of(w.cx, col_edges) > 0) for line in band]
    if sum(bool(v) for v in values) < 2 or not all(BARE_AMOUNT.match(v) for v in values if v):
        return None
    items: list[list[int]] = []  # line indices of each item; its value count beside
    counts: list[int] = []
    above: TextLine | None = None  # the last line with a label
    for i, line in enumerate(band):
        labelled = any(_col_of(w.cx, col_edges) == 0 for w in line.words)
        opens = labelled and (
            above is None or not _goes_on(line, above, col_edges) or (bool(values[i]) and counts[-1] > 0)
        )
        if labelled:
            above = line
        if opens:
            items.append([])
            counts.append(0)
        elif not items:
            return None  # a value above every label: not read here
        items[-1].append(i)
        counts[-1] += bool(values[i])
    kept: list[list[int]] = []
    pending: list[int] = []
    for lines_of, count in zip(items, counts):
        if pending and (
            _LIST_MARKER.match(band[lines_of[0]].words[0].text) or band[pending[-1]].words[-1].text.endswith(":")
        ):
            kept.append(pending)  # a heading over its list's items ("CIVI" / "- requête …"): a row
            pending = []
        pending += lines_of
        if count:
            kept.append(pending)
            pending = []
    if pending and kept:
        kept[-1] += pending
    if len(kept) < 2:
        return None
    return [(band[a[-1]].b + band[b[0]].t) / 2 for a, b in zip(kept, kept[1:])]


def _unruled_row_edges(lines: Sequence[TextLine], row_edges: Sequence[float], col_edges: Sequence[float]) -> set[float]:
    """Rows inside one ruled band: several lines each filling two or more columns
    ("Praticiens signataires | 100 % BR | 150 % BR …" under one rule) are rows of
    their own; a line filling only the first column, or opening in lowercase (its
    cells wrapped: "non agricole (chapitre « Les | simple, e-mail, via…"), continues
    the row above. A band of bare amounts is also cut between its items (`_item_edges`)."""
    edges: set[float] = set()
    for upper, lower in zip(row_edges, row_edges[1:]):
        band = [line for line in lines if upper <= (line.t + line.b) / 2 < lower]
        full = [len({_col_of(w.cx, col_edges) for w in line.words}) >= 2 for line in band]
        if sum(full) < 2:
            continue
        if len(col_edges) > 2:
            edges.update(_item_edges(band, col_edges) or [])
        for i in range(1, len(band)):
            if full[i] and not _goes_on(band[i], band[i - 1], col_edges):
                edges.add((band[i - 1].b + band[i].t) / 2)
    return edges


def build_grid(words: Sequence[Word], bbox: BoundingBox, rules: Rules) -> TableGrid | None:
    """Recover rows, columns and spans of a table region.

    Interior vertical rules give the columns when present, otherwise whitespace
    gaps do. Rows come from horizontal rules when the table rules (most of) its
    rows, otherwise from text lines, with wrapped cells folded into their row.
    """
    if not words:
        return None
    lines = group_lines(words)
    left = min(bbox.l, *(w.l for w in words))
    right = max(bbox.r, *(w.r for w in words))
    top = min(bbox.t, *(w.t for w in words))
    bottom = max(bbox.b, *(w.b for w in words))

    v_interior = _cluster_positions(
        x for x, y0, y1 in rules.vertical if left + 3 < x < right - 3 and (y1 - y0) > 0.2 * (bottom - top)
    )
    ruled_cols = bool(v_interior)
    col_edges = [left, *(v_interior or _gap_boundaries(lines, left, right)), right]
    if ruled_cols:
        col_edges = _drop_empty_bands(col_edges, [w.cx for w in words])

    # Row rules span at least a column; shorter ones underline words.
    widths = [b - a for a, b in zip(col_edges, col_edges[1:])]
    min_rule = 0.8 * min(widths) if ruled_cols else 0.25 * (right - left)
    h_interior = _cluster_positions(
        y for y, x0, x1 in rules.horizontal if top + 2 < y < bottom - 2 and x1 - x0 >= min_rule
    )
    # Rows are ruled in a grid (rules both ways), or when rules separate most
    # of the gaps between text lines; otherwise wrapped lines are folded.
    gaps = list(zip(lines, lines[1:]))
    ruled_gaps = sum(any(a.b - 1 <= y <= b.t + 1 for y in h_interior) for a, b in gaps)
    ruled_rows = bool(gaps) and (ruled_gaps >= 0.5 * len(gaps) or (ruled_cols and bool(h_interior)))
    text_edges: set[float] = set()
    if ruled_rows:
        row_edges = _drop_empty_bands([top, *h_interior, bottom], [w.cy for w in words])
        text_edges = _unruled_row_edges(lines, row_edges, col_edges)
        row_edges = sorted([*row_edges, *text_edges])
    else:
        text_rows = _text_rows(lines, col_edges, rules)
        row_edges = [top]
        for upper, lower in zip(text_rows, text_rows[1:]):
            row_edges.append((upper[-1].b + lower[0].t) / 2)
        row_edges.append(bottom)

    n_rows, n_cols = len(row_edges) - 1, len(col_edges) - 1

    def row_of(y: float) -> int:
        return min(max(int(np.searchsorted(row_edges, y)) - 1, 0), n_rows - 1)

    join_right = np.zeros((n_rows, n_cols), dtype=bool)
    join_down = np.zeros((n_rows, n_cols), dtype=bool)
    if ruled_cols:
        # A missing rule between two cells of a ruled grid means a merged cell.
        for c, x in enumerate(col_edges[1:-1]):
            segs = [(y0, y1) for vx, y0, y1 in rules.vertical if abs(vx - x) <= 2.5]
            for r in range(n_rows):
                if _coverage(segs, row_edges[r], row_edges[r + 1]) < EDGE_COVERAGE:
                    join_right[r, c] = True
        if ruled_rows:
            for r, y in enumerate(row_edges[1:-1]):
                if y in text_edges:
                    continue  # rows set apart by their text, not by a rule
                segs = [(x0, x1) for hy, x0, x1 in rules.horizontal if abs(hy - y) <= 2.5]
                for c in range(n_cols):
                    if _coverage(segs, col_edges[c], col_edges[c + 1]) < EDGE_COVERAGE:
                        join_down[r, c] = True
    else:
        # Without column rules a word running into the next column's text makes a spanning
        # cell; one only reaching into the whitespace beside its own column (a header set
        # wider than the values under it: MAIF Raqvam p.16) stays in the column of its centre.
        extent: dict[int, tuple[float, float]] = {}
        for w in words:
            c = _col_of(w.l + 0.5, col_edges)
            if c == _col_of(w.r - 0.5, col_edges):
                lo, hi = extent.get(c, (w.l, w.r))
                extent[c] = (min(lo, w.l), max(hi, w.r))
        for w in words:
            c0 = c1 = _col_of(w.cx, col_edges)
            reach = max(SPAN_OVERLAP, SPAN_SHARE * (w.r - w.l))
            while c0 > 0 and w.l < extent.get(c0 - 1, (0.0, -np.inf))[1] - reach:
                c0 -= 1
            while c1 < n_cols - 1 and w.r > extent.get(c1 + 1, (np.inf, 0.0))[0] + reach:
                c1 += 1
            join_right[row_of(w.cy), c0:c1] = True

    cells = [GridCell(r0, r1, c0, c1) for r0, r1, c0, c1 in _merge_cells(n_rows, n_cols, join_right, join_down)]
    by_pos = {(r, c): cell for cell in cells for r in range(cell.row0, cell.row1) for c in range(cell.col0, cell.col1)}
    for w in words:
        by_pos[(row_of(w.cy), _col_of(w.cx, col_edges))].words.append(w)

    first_row = [c for c in cells if c.row0 == 0]
    body_words = [w for c in cells if c.row0 > 0 for w in c.words]
    header_words = [w for c in first_row for w in c.words]
    header_ruled = n_rows > 1 and _rule_between(rules, row_edges[1] - 3, row_edges[1] + 3, left, right)
    header_bold = bool(header_words) and all(w.bold for w in header_words) and not all(w.bold for w in body_words)
    header = n_rows > 1 and (header_ruled or header_bold)
    return TableGrid(row_edges, col_edges, cells, header=header)


def looks_tabular(words: Sequence[Word], strict: bool) -> bool:
    """Whether words are laid out as a table: 2+ whitespace columns that most rows fill.

    ``strict`` (for regions no model called a table) asks for 3+ rows and rules
    out two columns of running text (both columns filled edge to edge).
    """
    if not words:
        return False
    lines = group_lines(words)
    left, right = min(w.l for w in words), max(w.r for w in words)
    col_edges = [left, *_gap_boundaries(lines, left, right), right]
    if len(col_edges) < 3:
        return False
    rows = _text_rows(lines, col_edges, Rules())
    first_col = [" ".join(w.text for w in line.words if _col_of(w.cx, col_edges) == 0) for line in lines]
    if all(_LIST_MARKER.match(text) for text in first_col if text):
        return False  # a numbered or bulleted list, not a table
    multi = sum(len({_col_of(w.cx, col_edges) for line in row for w in line.words}) >= 2 for row in rows)
    if not strict:
        return len(rows) >= 2 and multi >= 0.5 * len(rows)
    if len(rows) < 3 or multi < 0.6 * len(rows):
        return False
    if len(col_edges) == 3:
        fill = []
        for c in range(2):
            spans = [
                max(w.r for w in line.words if _col_of(w.cx, col_edges) == c)
                - min(w.l for w in line.words if _col_of(w.cx, col_edges) == c)
                for line in lines
                if any(_col_of(w.cx, col_edges) == c for w in line.words)
            ]
            fill.append(float(np.median(spans)) / (col_edges[c + 1] - col_edges[c]))
        if min(fill) > 0.5:
            return False
    return True


def _cell_text(words: Sequence[Word]) -> str:
    return join_lines([" ".join(w.text for w in line.words) for line in group_lines(words)])


def grid_to_table(grid: TableGrid, cluster_table: Table) -> Table:
    """Fill a Docling ``Table`` (cells, OTSL sequence) from a recovered grid."""
    table_cells = []
    for cell in grid.cells:
        if cell.words:
            bbox = BoundingBox(
                l=min(w.l for w in cell.words),
                t=min(w.t for w in cell.words),
                r=max(w.r for w in cell.words),
                b=max(w.b for w in cell.words),
            )
        else:
            bbox = BoundingBox(
                l=grid.col_edges[cell.col0],
                t=grid.row_edges[cell.row0],
                r=grid.col_edges[cell.col1],
                b=grid.row_edges[cell.row1],
            )
        table_cells.append(
            TableCell(
                bbox=bbox,
                text=_cell_text(cell.words),
                row_span=cell.row1 - cell.row0,
                col_span=cell.col1 - cell.col0,
                start_row_offset_idx=cell.row0,
                end_row_offset_idx=cell.row1,
                start_col_offset_idx=cell.col0,
                end_col_offset_idx=cell.col1,
                column_header=grid.header and cell.row0 == 0,
            )
        )
    by_pos = {
        (r, c): cell for cell in grid.cells for r in range(cell.row0, cell.row1) for c in range(cell.col0, cell.col1)
    }
    otsl: list[str] = []
    for r in range(grid.num_rows):
        for c in range(grid.num_cols):
            cell = by_pos[(r, c)]
            if (r, c) == (cell.row0, cell.col0):
                otsl.append("fcel" if cell.words else "ecel")
            elif r == cell.row0:
                otsl.append("lcel")
            elif c == cell.col0:
                otsl.append("ucel")
            else:
                otsl.append("xcel")
        otsl.append("nl")
    return cluster_table.model_copy(
        update={
            "otsl_seq": otsl,
            "table_cells": table_cells,
            "num_rows": grid.num_rows,
            "num_cols": grid.num_cols,
        }
    )


class RulingTableOptions(BaseTableStructureOptions):
    """Options of the ruling-line table structure stage."""

    kind: ClassVar[str] = "rag_assets_ruling_lines"


class RulingTableStructureModel(BaseTableStructureModel):
    """Table structure from ruling lines and text alignment, no learned weights."""

    def __init__(
        self,
        enabled: bool,
        artifacts_path: Path | None,
        options: RulingTableOptions,
        accelerator_options: AcceleratorOptions,
        enable_remote_services: bool = False,
    ) -> None:
        self.enabled = enabled
        self.options = options

    @classmethod
    def get_options_type(cls) -> type[RulingTableOptions]:
        return RulingTableOptions

    def predict_tables(self, conv_res: ConversionResult, pages: Sequence[Page]) -> Sequence[TableStructurePrediction]:
        predictions = []
        for page in pages:
            if page._backend is None or not page._backend.is_valid() or page.predictions.layout is None:
                predictions.append(page.predictions.tablestructure or TableStructurePrediction())
                continue
            with TimeRecorder(conv_res, "table_structure"):
                predictions.append(self._predict_page(page))
        return predictions

    def _predict_page(self, page: Page) -> TableStructurePrediction:
        prediction = TableStructurePrediction()
        clusters = [c for c in page.predictions.layout.clusters if c.label in TABLE_LABELS]
        if not clusters:
            return prediction
        # Word cells split the lines the parser merged across table columns.
        source = page.parsed_page.word_cells if page.parsed_page is not None else page.cells
        rules = page_rules(page)
        for cluster in clusters:
            words = words_in_bbox(source, cluster.bbox) or words_in_bbox(cluster.cells, cluster.bbox)
            empty = Table(
                otsl_seq=[],
                table_cells=[],
                num_rows=0,
                num_cols=0,
                id=cluster.id,
                page_no=page.page_no,
                cluster=cluster,
                label=cluster.label,
            )
            grid = build_grid(words, cluster.bbox, rules_in_bbox(rules, cluster.bbox))
            prediction.table_map[cluster.id] = grid_to_table(grid, empty) if grid else empty
        return prediction
