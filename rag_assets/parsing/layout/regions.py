"""What a detected figure, table or equation region really is: a picture, table(s), a formula or text,
judged from the page's ruling lines and the words inside it."""

from __future__ import annotations

import re
from collections.abc import Sequence

from docling_core.types.doc import BoundingBox, DocItemLabel

from rag_assets.parsing.layout.detector import ACCEPT_SCORE, Detection
from rag_assets.parsing.layout.geometry import is_inside, union_bbox
from rag_assets.parsing.pdf_tables import Rules, Word, build_grid, looks_tabular, rules_in_bbox

TEXT_FIGURE_COVERAGE = 0.12  # text-line area share above which a "figure" is text
# Text lines from which a "figure" is text set in the PDF whatever else it holds: a sparse
# shaded table (MAIF Vam p.38: 21 lines over 9 % of its box) or boxes of text on a picture
# background (Vam p.4: 73 lines); labelled diagrams hold fewer
FIGURE_TEXT_LINES = 12
PROSE_CELL_WORDS = 20  # median words per cell from which a ruled region is prose, not a table
PROSE_MAX_ROWS = 2  # ... when its boxes are at most this many rows high
_MATH = re.compile(r"[=+×÷∑∏√∫≤≥<>^∂∞±]")


def _is_text_region(det: Detection, words: Sequence[Word], bitmaps: Sequence[BoundingBox]) -> bool:
    """Whether a detected picture is really text set in the PDF: its lines would otherwise
    be the picture's children, which no parent indexes."""
    inside = [w for w in words if is_inside(w, det)]
    if len(inside) >= FIGURE_TEXT_LINES:
        return True
    text_area = sum((w.r - w.l) * (w.b - w.t) for w in inside)
    bitmap_area = sum(det.bbox.intersection_area_with(b) for b in bitmaps)
    return len(inside) >= 3 and text_area > TEXT_FIGURE_COVERAGE * det.area and bitmap_area < 0.3 * det.area


def looks_like_formula(text: str) -> bool:
    """Math symbols, or few real words: the model also calls plain headings equations."""
    tokens = text.split()
    words = sum(len(t) >= 3 and t.isalpha() for t in tokens)
    return bool(tokens) and (bool(_MATH.search(text)) or words < 0.5 * len(tokens))


def _shrink_to_rules(det: Detection, rules: Rules, words: Sequence[Word]) -> Detection:
    """Cut a region down to its ruled part when that is much smaller.

    The model often boxes a whole page of text around a small ruled table. But rules can
    also only underline the section rows of a borderless table (MAIF Raqvam p.16): when
    the words left outside the ruled part are laid out as a table too, the region stays.
    """
    xs = [x for y, x0, x1 in rules.horizontal for x in (x0, x1)] + [x for x, _, _ in rules.vertical]
    ys = [y for y, _, _ in rules.horizontal] + [y for _, y0, y1 in rules.vertical for y in (y0, y1)]
    t, b = min(ys), max(ys)
    if b - t >= 0.7 * (det.b - det.t):
        return det
    ruled = Detection(det.label, det.score, max(det.l, min(xs) - 2), t - 2, min(det.r, max(xs) + 2), b + 2)
    outside = [w for w in words if is_inside(w, det) and not is_inside(w, ruled)]
    return det if looks_tabular(outside, strict=True) else ruled


def _region_rules(rules: Rules, det: Detection, body_h: float) -> Rules:
    """The region's rules; short ones (a square-root bar, an underline) do not make a table."""
    det_rules = rules_in_bbox(rules, det.bbox)
    return Rules(
        horizontal=[r for r in det_rules.horizontal if r[2] - r[1] >= 0.3 * (det.r - det.l)],
        vertical=[r for r in det_rules.vertical if r[2] - r[1] >= 2 * body_h],
    )


def _rule_components(rules: Rules, body_h: float) -> list[BoundingBox]:
    """Bounding boxes of groups of touching rules: separate frames and grids on one page.

    Rules connect where they cross or touch; stacked horizontal rules of one table
    (rows ruled without verticals) connect when they overlap horizontally and are
    at most two line heights apart. Groups of fewer than two rules are underlines.
    """
    boxes = [(x0 - 2, y - body_h, x1 + 2, y + body_h) for y, x0, x1 in rules.horizontal]
    boxes += [(x - 2, y0 - 2, x + 2, y1 + 2) for x, y0, y1 in rules.vertical]
    parent = list(range(len(boxes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, a in enumerate(boxes):
        for j in range(i + 1, len(boxes)):
            b = boxes[j]
            if a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]:
                parent[find(j)] = find(i)
    groups: dict[int, list[int]] = {}
    for i in range(len(boxes)):
        groups.setdefault(find(i), []).append(i)
    regions = []
    n_h = len(rules.horizontal)
    for members in groups.values():
        if len(members) < 2:
            continue
        ys = [rules.horizontal[i][0] for i in members if i < n_h]
        ys += [y for i in members if i >= n_h for y in rules.vertical[i - n_h][1:]]
        xs = [x for i in members if i < n_h for x in rules.horizontal[i][1:]]
        xs += [rules.vertical[i - n_h][0] for i in members if i >= n_h]
        if max(ys) - min(ys) >= 1.5 * body_h:
            regions.append(BoundingBox(l=min(xs), t=min(ys), r=max(xs), b=max(ys)))
    return sorted(regions, key=lambda r: (r.t, r.l))


def _word_blocks(words: Sequence[Word], body_h: float) -> list[BoundingBox]:
    """Boxes of words set close together: lines of one block are under a line height
    apart, the columns of one table a few line heights apart; separate blocks further."""
    boxes = [(w.l - 1.5 * body_h, w.t - 0.4 * body_h, w.r + 1.5 * body_h, w.b + 0.4 * body_h) for w in words]
    parent = list(range(len(boxes)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    order = sorted(range(len(boxes)), key=lambda i: boxes[i][1])
    for k, i in enumerate(order):
        a = boxes[i]
        for j in order[k + 1 :]:
            b = boxes[j]
            if b[1] > a[3]:
                break
            if a[0] <= b[2] and b[0] <= a[2]:
                parent[find(j)] = find(i)
    groups: dict[int, list[Word]] = {}
    for i, w in enumerate(words):
        groups.setdefault(find(i), []).append(w)
    return [union_bbox(group) for group in groups.values()]


def _is_prose(words: Sequence[Word], bbox: BoundingBox, rules: Rules) -> bool:
    """A ruled region holding running text: a framed box (one column) or boxes of
    paragraphs side by side (IPID sheets, boxed exclusion lists), not a table to read by
    rows. Three rows or more of long cells are a table ("Finalité | Est-ce que votre
    consentement … ?", one purpose a row)."""
    grid = build_grid(words, bbox, rules)
    if grid is None:
        return False
    if grid.num_cols == 1:
        return True
    if len(grid.row_edges) - 1 > PROSE_MAX_ROWS:
        return False
    sizes = sorted(len(w) for w in (cell.words for cell in grid.cells) if w)
    return bool(sizes) and sizes[len(sizes) // 2] >= PROSE_CELL_WORDS


def classify_region(
    det: Detection,
    rules: Rules,
    page_words: Sequence[Word],
    line_words: Sequence[Word],
    bitmaps: Sequence[BoundingBox],
    body_h: float,
) -> list[tuple[DocItemLabel | None, float, Detection]]:
    """What a detected figure/table region really is: a picture, table(s) or text.

    Several separate ruled frames or grids in one detection are judged one by one;
    a region of prose (framed text, boxed two-column sheets) becomes text hints
    (label None), so its lines are grouped into paragraphs inside each frame.
    """
    det_rules = _region_rules(rules, det, body_h)
    components = _rule_components(det_rules, body_h)
    if len(components) >= 2:
        out: list[tuple[DocItemLabel | None, float, Detection]] = []
        parts = [Detection("table", det.score, box.l - 2, box.t - 2, box.r + 2, box.b + 2) for box in components]
        for part in parts:
            out.extend(_classify_one(part, rules_in_bbox(det_rules, part.bbox), page_words, body_h, confident=True))
        # Text of the region outside every frame: blocks of it may be unruled tables.
        rest = [w for w in page_words if is_inside(w, det) and not any(is_inside(w, part) for part in parts)]
        for box in _word_blocks(rest, body_h):
            part = Detection("table", det.score, box.l - 1, box.t - 1, box.r + 1, box.b + 1)
            out.extend(_classify_one(part, rules_in_bbox(det_rules, part.bbox), rest, body_h, confident=False))
        return out
    if det.label == "figure" and not _is_text_region(det, line_words, bitmaps):
        return [(DocItemLabel.PICTURE, det.score, det)] if det.score >= ACCEPT_SCORE else []
    ruled = len({round(y) for y, _, _ in det_rules.horizontal}) >= 2
    if ruled:
        det = _shrink_to_rules(det, det_rules, page_words)
    confident = ruled or (det.label == "table" and det.score >= ACCEPT_SCORE)
    return _classify_one(det, det_rules, page_words, body_h, confident)


def _classify_one(
    det: Detection, det_rules: Rules, page_words: Sequence[Word], body_h: float, confident: bool
) -> list[tuple[DocItemLabel | None, float, Detection]]:
    words = [w for w in page_words if is_inside(w, det)]
    text_hint = (
        None,
        max(det.score, ACCEPT_SCORE),
        Detection("text", max(det.score, ACCEPT_SCORE), det.l, det.t, det.r, det.b),
    )
    if not words:
        return []
    # Column rules, or words lined up in columns; a framed single-column
    # box of text or a numbered list is not a table.
    column_ruled = any(det.l + 3 < x < det.r - 3 for x, _, _ in det_rules.vertical)
    if not (column_ruled or looks_tabular(words, strict=not confident)):
        return [text_hint]
    if _is_prose(words, det.bbox, det_rules):
        grid = build_grid(words, det.bbox, det_rules)
        if grid is None or grid.num_cols == 1:
            return [text_hint]
        # cells of prose side by side: one text region per cell
        return [
            (
                None,
                text_hint[1],
                Detection(
                    "text",
                    text_hint[1],
                    grid.col_edges[c.col0],
                    grid.row_edges[c.row0],
                    grid.col_edges[c.col1],
                    grid.row_edges[c.row1],
                ),
            )
            for c in grid.cells
            if c.words
        ]
    return [(DocItemLabel.TABLE, max(det.score, ACCEPT_SCORE), det)]


__all__ = [
    "FIGURE_TEXT_LINES",
    "PROSE_CELL_WORDS",
    "PROSE_MAX_ROWS",
    "TEXT_FIGURE_COVERAGE",
    "classify_region",
    "looks_like_formula",
]
