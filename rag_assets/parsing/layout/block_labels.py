"""Labels of the paragraphs built from text lines: page header or footer, section header (a
"Article 13" line merged with the title under it), footnote, list item or text."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
from docling_core.types.doc import BoundingBox, DocItemLabel

from rag_assets.parsing.layout.detector import ACCEPT_SCORE
from rag_assets.parsing.layout.geometry import union_bbox
from rag_assets.parsing.layout.paragraphs import BULLETS, TextLine
from rag_assets.parsing.text_repair import heading_rank

HEADING_TITLE_GAP = 4.5  # max gap between "Article 13" and its title, in line heights
_PAGE_NUMBER = re.compile(
    r"^(?:(?:page|p\.)\s*\d+(?:\s*(?:/|sur|of|de)\s*\d+)?|\d+\s*(?:/|sur|of)\s*\d+|[-–]?\s*\d{1,4}\s*[-–]?)$",
    re.IGNORECASE,
)
_BULLET_START = re.compile(rf"^(?:{BULLETS})\s")
_AMOUNT_ONLY = re.compile(r"^[\d\s.,%€$£/()+-]*(?:€|EUR|euros?|%|jours?|mois|ans?)?[\d\s.,%€$£/()+-]*$", re.IGNORECASE)
_FOOTNOTE_MARK = re.compile(r"^(?:\(\s?\d{1,3}\s?\)|\d{1,3}[).]?\s|\*+|[¹²³⁴⁵⁶⁷⁸⁹])")


@dataclass
class _Block:
    lines: list[TextLine]
    label: DocItemLabel
    score: float

    @property
    def text(self) -> str:
        return " ".join(line.word.text for line in sorted(self.lines, key=lambda x: (x.word.t, x.word.l)))

    @property
    def bbox(self) -> BoundingBox:
        return union_bbox([line.word for line in self.lines])


def label_blocks(
    groups: list[list[TextLine]], page_height: float, body_h: float, top_band: float, bottom_band: float
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


__all__ = [
    "HEADING_TITLE_GAP",
    "label_blocks",
]
