"""Children: HybridChunker-style chunks of one parent, sized by the embedding model's
tokenizer *after* contextualization (title + heading path + caption + table header are
prepended), whose [start, end) offsets partition the parent's text exactly.

Blocks that fit are kept whole and small neighbouring prose blocks are merged; an
oversized block is split at sentence ends (tables: at row boundaries, repeating the
table header in every chunk's contextualized text; never inside a number like "5 000").
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Callable

from rag_assets.hashing import short_id
from rag_assets.sections import Block, Parent

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")
# A "word" for the last-resort split; digit groups ("5 000", "1 250 000") stay together.
_WORD = re.compile(r"\d{1,3}(?:[  ]\d{3})+(?:[.,]\d+)?\S*|\S+")


@dataclass
class Child:
    child_id: str
    parent_id: str
    document_id: str
    ordinal: int
    start: int
    end: int
    text: str
    contextualized: str
    token_count: int
    kind: str
    pages: list[int]
    heading_path: list[str]

    def to_row(self) -> dict:
        return asdict(self)


@dataclass
class _Unit:
    start: int
    end: int
    block: int
    whole: bool  # the unit is its block entire


def _context_prefix(title: str, parent: Parent, block: Block | None, needs_header: bool, text: str) -> str:
    lines = [title] if title and (not parent.heading_path or parent.heading_path[0] != title) else []
    if parent.heading_path:
        lines.append(" > ".join(parent.heading_path))
    if block is not None and block.caption and block.caption not in text:
        lines.append(block.caption)
    if needs_header and block is not None and block.header_end is not None:
        table_start = block.start + (len(block.caption) + 2 if block.caption else 0)
        lines.append(parent.text[table_start : block.header_end])
    return "\n".join(lines)


class ParentChunker:
    def __init__(self, count_tokens: Callable[[str], int], max_tokens: int = 400):
        self.count_tokens = count_tokens
        self.max_tokens = max_tokens

    def _contextualize(self, title: str, parent: Parent, start: int, end: int) -> str:
        raw = parent.text[start:end].strip()
        blocks = [b for b in parent.blocks if b.start < end and b.end > start]
        table = next((b for b in blocks if b.kind == "table"), None)
        needs_header = table is not None and table.header_end is not None and start >= table.header_end
        prefix = _context_prefix(title, parent, table or (blocks[0] if blocks else None), needs_header, raw)
        return f"{prefix}\n{raw}" if prefix else raw

    def _fits(self, title: str, parent: Parent, start: int, end: int) -> bool:
        return self.count_tokens(self._contextualize(title, parent, start, end)) <= self.max_tokens

    def _split_block(self, title: str, parent: Parent, index: int, block: Block) -> list[_Unit]:
        if self._fits(title, parent, block.start, block.end):
            return [_Unit(block.start, block.end, index, True)]
        text = parent.text
        if block.kind == "table" and block.header_end is not None:
            # header (and caption) is glued to the first row; each further row is a unit
            bounds = [block.start]
            pos = text.find("\n", block.header_end + 1)
            while 0 <= pos < block.end:
                bounds.append(pos + 1)
                pos = text.find("\n", pos + 1)
            bounds = [b for b in bounds if b < block.end]
        else:
            bounds = [block.start] + [m.end() for m in _SENTENCE_END.finditer(text, block.start, block.end) if m.end() < block.end]
        units = []
        for s, e in zip(bounds, bounds[1:] + [block.end]):
            if self._fits(title, parent, s, e):
                units.append(_Unit(s, e, index, False))
            else:
                words = [m.start() for m in _WORD.finditer(text, s, e)]
                units.extend(_Unit(ws, we, index, False) for ws, we in zip(words, words[1:] + [e]))
        return units

    def _mergeable(self, a: _Unit, b: _Unit, parent: Parent) -> bool:
        if a.block == b.block:
            return True
        kinds = {parent.blocks[a.block].kind, parent.blocks[b.block].kind}
        return a.whole and b.whole and "table" not in kinds

    def chunk(self, parent: Parent, title: str = "") -> list[Child]:
        units = [u for i, b in enumerate(parent.blocks) for u in self._split_block(title, parent, i, b)]
        groups: list[list[_Unit]] = []
        for unit in units:
            if groups and self._mergeable(groups[-1][-1], unit, parent) and self._fits(
                title, parent, groups[-1][0].start, unit.end
            ):
                groups[-1].append(unit)
            else:
                groups.append([unit])
        starts = [g[0].start for g in groups]
        if starts:
            starts[0] = 0
        ends = starts[1:] + [len(parent.text)]
        children = []
        for ordinal, (start, end) in enumerate(zip(starts, ends)):
            raw = parent.text[start:end]
            contextualized = self._contextualize(title, parent, start, end)
            blocks = [b for b in parent.blocks if b.start < end and b.end > start]
            kinds = {b.kind for b in blocks}
            children.append(
                Child(
                    child_id=short_id(parent.parent_id, start, end, raw),
                    parent_id=parent.parent_id,
                    document_id=parent.document_id,
                    ordinal=ordinal,
                    start=start,
                    end=end,
                    text=raw,
                    contextualized=contextualized,
                    token_count=self.count_tokens(contextualized),
                    kind=kinds.pop() if len(kinds) == 1 else "mixed",
                    pages=sorted({p for b in blocks for p in b.pages}),
                    heading_path=parent.heading_path,
                )
            )
        return children
