"""Model detections plus the page's text lines and rules turned into Docling clusters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from docling.datamodel.base_models import Cluster
from docling_core.types.doc import BoundingBox, DocItemLabel
from docling_core.types.doc.page import TextCell

from rag_assets.parsing.layout.block_labels import label_blocks
from rag_assets.parsing.layout.detector import ACCEPT_SCORE, Detection
from rag_assets.parsing.layout.geometry import is_inside, near, overlap_share, union_bbox
from rag_assets.parsing.layout.paragraphs import TextLine, group_paragraphs, page_lines, respace_letter_spaced
from rag_assets.parsing.layout.regions import classify_region, looks_like_formula
from rag_assets.parsing.pdf_tables import Rules, Word, to_word
from rag_assets.parsing.text_repair import heading_rank

HEADER_BAND = 0.12  # share of page height where page headers/footers may sit
RUNNING_LINE_WORDS = 15  # most words a page header or footer holds


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
    lines = page_lines(text_cells)
    body_h = float(np.median([w.h for _, w in lines])) if lines else 10.0
    top_band, bottom_band = HEADER_BAND * page_height, (1 - HEADER_BAND) * page_height
    page_words = [w for w in (to_word(c) for c in word_cells) if w is not None]

    special: list[tuple[DocItemLabel, float, Detection]] = []
    hints: list[Detection] = []
    captions: list[Detection] = []

    def running_line(det: Detection) -> bool:
        # a running header/footer is a few words; body text set high on a page is not
        return len([w for w in page_words if is_inside(w, det)]) <= RUNNING_LINE_WORDS

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
            for label, score, region in classify_region(det, rules, page_words, [w for _, w in lines], bitmaps, body_h):
                if label is None:
                    hints.append(region)
                elif not any(overlap_share(region, d) > 0.8 for lab, _, d in special if lab == label):
                    special.append((label, score, region))
        elif det.label in ("figure_caption", "table_caption") and det.score >= ACCEPT_SCORE:
            captions.append(det)
        elif (
            det.label == "equation"
            and det.score >= ACCEPT_SCORE
            and looks_like_formula(" ".join(w.text for _, w in lines if is_inside(w, det)))
        ):
            special.append((DocItemLabel.FORMULA, det.score, det))
        elif det.label != "figure":
            hints.append(det)
    # A caption sits next to a table or picture and is not a numbered article
    # heading; otherwise it is a text block.
    regions = [det for label, _, det in special if label in (DocItemLabel.TABLE, DocItemLabel.PICTURE)]
    for det in captions:
        rank = heading_rank(" ".join(w.text for _, w in lines if is_inside(w, det)))
        if (rank is None or rank[0] > 6) and any(near(det, region, 3 * body_h) for region in regions):
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
    free: list[TextLine] = []
    for cell, w in lines:
        owner = next((i for i, (_, _, det) in enumerate(special) if is_inside(w, det)), None)
        if owner is not None:
            special_cells[owner].append((cell, w))
            continue
        holders = [(h.score, i) for i, h in enumerate(hints) if is_inside(w, h)]
        score, idx = max(holders) if holders else (0.0, None)
        hint_label = hints[idx].label if idx is not None else None
        # Only confident model boxes separate paragraphs; weak ones still name the block.
        free.append(TextLine(cell, w, idx if score >= ACCEPT_SCORE else None, hint_label, score))

    clusters: list[Cluster] = []
    for i, (label, score, det) in enumerate(special):
        members = special_cells[i]
        if label in (DocItemLabel.TABLE, DocItemLabel.PICTURE):
            bbox = det.bbox  # Docling attaches the lines inside as children
        elif members:
            bbox = union_bbox([w for _, w in members])
        else:
            continue
        clusters.append(
            Cluster(id=len(clusters), label=label, confidence=score, bbox=bbox, cells=[c for c, _ in members])
        )

    for block in label_blocks(group_paragraphs(free), page_height, body_h, top_band, bottom_band):
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


__all__ = [
    "HEADER_BAND",
    "RUNNING_LINE_WORDS",
    "build_clusters",
]
