"""Children: HybridChunker-style chunks of one parent, sized by the embedding model's
tokenizer *after* contextualization (title + heading path + caption + table header are
prepended), whose [start, end) offsets partition the parent's text exactly.

Blocks that fit are kept whole and small neighbouring prose blocks are merged; an
oversized block is split at sentence ends (tables: at row boundaries, so row groups
repeat the table header in their contextualized text; never inside a number like
"5 000"), and a single sentence or row over the budget at word boundaries.

The budget holds by construction: each part of the context is bounded (heading path,
caption and table header each get a share of the budget and are shortened past it), so
at least half of every child is its own text, and a chunk whose exact token count comes
out over the budget is cut again.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Callable

from rag_assets.hashing import short_id
from rag_assets.ingest.boxes import Line, within
from rag_assets.ingest.sections import Block, Parent

_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")
# A "word" for the last-resort split; digit groups ("5 000", "1 250 000") stay together.
_WORD = re.compile(r"\d{1,3}(?:[  ]\d{3})+(?:[.,]\d+)?\S*|\S+")
# Shares of the budget the context parts may take (the rest is the child's own text).
HEADING_SHARE = 0.2
CAPTION_SHARE = 0.1
HEADER_SHARE = 0.2
ELLIPSIS = "…"


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
    boxes: list[Line] = field(default_factory=list)  # the parent's boxes of this text, offsets into it

    def to_row(self) -> dict:
        return asdict(self)


@dataclass
class _Unit:
    start: int
    end: int
    block: int
    whole: bool  # the unit is its block entire
    tokens: int


class ParentChunker:
    def __init__(self, count_tokens: Callable[[str], int], max_tokens: int = 400):
        self.count_tokens = count_tokens
        self.max_tokens = max_tokens

    # -- context ---------------------------------------------------------------------

    def _shorten(self, text: str, share: float, keep_end: bool = False) -> str:
        """``text`` cut at word boundaries to ``share`` of the budget (an ellipsis marks the cut)."""
        limit = max(1, int(share * self.max_tokens))
        if not text or self.count_tokens(text) <= limit:
            return text
        words = text.split(" ")
        lo, hi = 0, len(words)  # longest prefix (or suffix) of words that fits
        while lo < hi:
            mid = (lo + hi + 1) // 2
            part = words[-mid:] if keep_end else words[:mid]
            candidate = ELLIPSIS + " ".join(part) if keep_end else " ".join(part) + ELLIPSIS
            if self.count_tokens(candidate) <= limit:
                lo = mid
            else:
                hi = mid - 1
        part = words[-lo:] if keep_end and lo else words[:lo]
        return (ELLIPSIS + " ".join(part)) if keep_end else (" ".join(part) + ELLIPSIS)

    def _heading_lines(self, title: str, parent: Parent) -> list[str]:
        lines = [title] if title and (not parent.heading_path or parent.heading_path[0] != title) else []
        if parent.heading_path:
            lines.append(" > ".join(parent.heading_path))
        # the most specific headings matter most: a long path loses its start
        return [self._shorten("\n".join(lines), HEADING_SHARE, keep_end=True)] if lines else []

    def _prefix(self, title: str, parent: Parent, block: Block | None, start: int) -> str:
        lines = list(self._cache_get(("head",), lambda: self._heading_lines(title, parent)))
        if block is not None and block.caption and start > block.start:
            lines.append(self._cache_get(("caption", id(block)), lambda: self._shorten(block.caption, CAPTION_SHARE)))
        if block is not None and block.kind == "table" and block.header_end is not None and start >= block.header_end:

            def header() -> str:
                table_start = block.start + (len(block.caption) + 2 if block.caption else 0)
                return self._shorten(parent.text[table_start : block.header_end], HEADER_SHARE)

            lines.append(self._cache_get(("header", id(block)), header))
        return "\n".join(line for line in lines if line)

    def _cache_get(self, key, make):
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def _prefix_tokens(self, title: str, parent: Parent, block: Block | None, start: int) -> int:
        prefix = self._prefix(title, parent, block, start)
        return self._cache_get(("tokens", prefix), lambda: self.count_tokens(prefix) if prefix else 0)

    def _block_at(self, parent: Parent, start: int, end: int) -> Block | None:
        blocks = [b for b in parent.blocks if b.start < end and b.end > start]
        return next((b for b in blocks if b.kind == "table"), blocks[0] if blocks else None)

    def _contextualize(self, title: str, parent: Parent, start: int, end: int) -> str:
        raw = parent.text[start:end].strip()
        prefix = self._prefix(title, parent, self._block_at(parent, start, end), start)
        return f"{prefix}\n{raw}" if prefix else raw

    # -- units -----------------------------------------------------------------------

    def _unit(self, parent: Parent, start: int, end: int, index: int, whole: bool) -> _Unit:
        return _Unit(start, end, index, whole, self.count_tokens(parent.text[start:end]))

    def _room(self, title: str, parent: Parent, block: Block, start: int) -> int:
        return self.max_tokens - self._prefix_tokens(title, parent, block, start)

    def _split_words(self, title: str, parent: Parent, index: int, block: Block, s: int, e: int) -> list[_Unit]:
        """Cut [s, e) at word boundaries into pieces that fit with their context."""
        starts = [m.start() for m in _WORD.finditer(parent.text, s, e)] or [s]
        starts[0] = s
        units: list[_Unit] = []
        piece_start, tokens = starts[0], 0
        for word_start, word_end in zip(starts, starts[1:] + [e]):
            word_tokens = self.count_tokens(parent.text[word_start:word_end])
            if tokens and tokens + word_tokens > self._room(title, parent, block, piece_start):
                units.append(self._unit(parent, piece_start, word_start, index, False))
                piece_start, tokens = word_start, 0
            tokens += word_tokens
        units.append(self._unit(parent, piece_start, e, index, False))
        return units

    def _split_block(self, title: str, parent: Parent, index: int, block: Block) -> list[_Unit]:
        whole = self._unit(parent, block.start, block.end, index, True)
        if whole.tokens <= self._room(title, parent, block, block.start):
            return [whole]
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
            bounds = [block.start] + [
                m.end() for m in _SENTENCE_END.finditer(text, block.start, block.end) if m.end() < block.end
            ]
        units = []
        for s, e in zip(bounds, bounds[1:] + [block.end]):
            unit = self._unit(parent, s, e, index, False)
            if unit.tokens <= self._room(title, parent, block, s):
                units.append(unit)
            else:
                units.extend(self._split_words(title, parent, index, block, s, e))
        return units

    def _mergeable(self, a: _Unit, b: _Unit, parent: Parent) -> bool:
        if a.block == b.block:
            return True
        kinds = {parent.blocks[a.block].kind, parent.blocks[b.block].kind}
        return a.whole and b.whole and "table" not in kinds

    # -- children --------------------------------------------------------------------

    def _groups(self, title: str, parent: Parent, units: list[_Unit]) -> list[list[_Unit]]:
        groups: list[list[_Unit]] = []
        for unit in units:
            if groups and self._mergeable(groups[-1][-1], unit, parent):
                group = groups[-1]
                first = parent.blocks[group[0].block]
                if sum(u.tokens for u in group) + unit.tokens <= self._room(title, parent, first, group[0].start):
                    group.append(unit)
                    continue
            groups.append([unit])
        return groups

    def chunk(self, parent: Parent, title: str = "") -> list[Child]:
        self._cache: dict = {}
        units = [u for i, b in enumerate(parent.blocks) for u in self._split_block(title, parent, i, b)]
        groups = self._groups(title, parent, units)
        starts = [g[0].start for g in groups]
        if starts:
            starts[0] = 0
        ends = starts[1:] + [len(parent.text)]
        spans = list(zip(starts, ends))
        children: list[Child] = []
        while spans:
            start, end = spans.pop(0)
            contextualized = self._contextualize(title, parent, start, end)
            tokens = self.count_tokens(contextualized)
            if tokens > self.max_tokens:
                # Token counts of pieces do not add up exactly: cut this span again, tighter.
                cut = self._recut(parent, start, end)
                if cut is not None:
                    spans[:0] = [(start, cut), (cut, end)]
                    continue
            raw = parent.text[start:end]
            blocks = [b for b in parent.blocks if b.start < end and b.end > start]
            kinds = {b.kind for b in blocks}
            children.append(
                Child(
                    child_id=short_id(parent.parent_id, start, end, raw),
                    parent_id=parent.parent_id,
                    document_id=parent.document_id,
                    ordinal=len(children),
                    start=start,
                    end=end,
                    text=raw,
                    contextualized=contextualized,
                    token_count=tokens,
                    kind=kinds.pop() if len(kinds) == 1 else "mixed",
                    pages=sorted({p for b in blocks for p in b.pages}),
                    heading_path=parent.heading_path,
                    boxes=within(parent.boxes, start, end),
                )
            )
        return children

    def _recut(self, parent: Parent, start: int, end: int) -> int | None:
        """A word boundary near the middle of [start, end), or None for a single word."""
        words = [m.start() for m in _WORD.finditer(parent.text, start, end) if m.start() > start]
        if not words:
            return None
        middle = (start + end) // 2
        return min(words, key=lambda w: abs(w - middle))
