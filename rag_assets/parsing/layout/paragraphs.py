"""The page's text lines (letter-spaced ones respaced) grouped into paragraphs by line spacing."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from docling_core.types.doc.page import TextCell

from rag_assets.parsing.layout.geometry import is_inside, union_bbox
from rag_assets.parsing.pdf_tables import Word, to_word

LINE_GAP = 0.8  # max gap between lines of a paragraph, in line heights
_MARKER = re.compile(r"^(?:[(\[]?(?:\d{1,3}|[a-zA-Z]|[ivxIVX]{1,4})[.)\]]|[•·▪‣◦–—-])$")
# Bullets as policies print them: dashes and dots, check marks and crosses (IPID sheets),
# "o" sub-bullets, and the letters x/X a pictogram font decodes to.
BULLETS = r"[-–—•·▪*✓✔✗✘×■□●○◆◇➢➤►▶!]|[xXo](?=\s+\w)"
_LIST_ITEM_START = re.compile(rf"^(?:{BULLETS}|\(?\d{{1,3}}[.)°]|\(?[a-z][.)])\s")


@dataclass
class TextLine:
    cell: TextCell
    word: Word
    hint: int | None  # index of the confident model text box holding the line
    hint_label: str | None
    hint_score: float


def page_lines(cells: Sequence[TextCell]) -> list[tuple[TextCell, Word]]:
    out = []
    for cell in cells:
        w = to_word(cell)
        if w is not None and w.r > w.l and w.b > w.t:
            out.append((cell, w))
    return out


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
            (w for w in (to_word(c) for c in word_cells) if w is not None and is_inside(w, line)),
            key=lambda w: w.l,
        )
        gaps = [b.l - a.r for a, b in zip(words, words[1:])]
        if not gaps or sum(g < 0.25 * line.h for g in gaps) < 0.5 * len(gaps):
            continue
        text = words[0].text
        for gap, w in zip(gaps, words[1:]):
            text += w.text if gap < 0.4 * line.h else " " + w.text
        cell.text = text


def _is_marker(text: str) -> bool:
    """A list or paragraph marker set apart from its text ("2.", "(a)", "•")."""
    return bool(_MARKER.match(text))


def group_paragraphs(lines: list[TextLine]) -> list[list[TextLine]]:
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

    def compatible(a: TextLine, b: TextLine) -> bool:
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
    boxes = {root: union_bbox([lines[i].word for i in members]) for root, members in printed.items()}
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
    groups: dict[int, list[TextLine]] = {}
    for r in roots:
        groups.setdefault(group(r), []).extend(lines[i] for i in printed[r])
    return list(groups.values())


__all__ = [
    "BULLETS",
    "LINE_GAP",
    "TextLine",
    "group_paragraphs",
    "page_lines",
    "respace_letter_spaced",
]
