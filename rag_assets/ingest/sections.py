"""Parents: one per section (heading path) of a DoclingDocument, in reading order.

A parent's text is its blocks (paragraphs, list items, formulas, tables as Markdown,
picture captions and the text set inside pictures) joined by blank lines; headings are not
repeated in the text, they are the parent's heading path. A table is one block and is never split across parents;
parents do not overlap and together cover every body item of the document.

Real policies cut their text into many tiny sections ("a. Délai d'attente" / "Néant.",
a box title over two amounts): a third of the sections of the 12 insurer PDFs hold fewer
than 40 words. Such a parent says too little to be found and fills a place in the model's
context on its own, so a section under ``min_tokens`` takes the sections that follow it
under its heading, up to ``min_tokens``: its subsections, or else its sibling sections that
have none; a heading with subsections starts a group of its own. The merged parent's path is
their common heading path and the headings below it become lines of its text, so nothing read
under a heading loses it. Records (one parent per record of a
benchmark collection) are never merged.

Given the PDF's text layer (``boxes.PdfText``), a parent keeps where its text is printed: its
``boxes`` (lines and table cells, with character offsets into its text, top-left origin; see
ingest/boxes.py) and the sizes of those pages.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Callable

from docling_core.types.doc import (
    DocItemLabel,
    DoclingDocument,
    FormulaItem,
    GroupItem,
    ListItem,
    PictureItem,
    RefItem,
    SectionHeaderItem,
    TableCell,
    TableItem,
    TextItem,
    TitleItem,
)

from rag_assets.hashing import short_id
from rag_assets.ingest.boxes import Line, PdfText, page_sizes, shifted

SEPARATOR = "\n\n"
# A short line just before a table that names it, when the format has no caption link
# (Markdown, many PDFs): "Tableau 1 – Franchises", "Table 3: ...".
_CAPTION_LIKE = re.compile(r"^\s*(tableau|table|figure|fig\.|formule)\s*[\dIVX]*\b", re.IGNORECASE)
_TABLE_TITLE = re.compile(r"^\s*(tableau|table)\b", re.IGNORECASE)
_DISPLAY_MATH = re.compile(r"^\s*(\$\$|\\\[|\\begin\{(equation|align))")


@dataclass
class Block:
    kind: str  # text | list | formula | table | picture | heading (a joined section's own heading)
    text: str
    refs: list[str]
    pages: list[int]
    start: int = 0
    end: int = 0
    caption: str | None = None
    header_end: int | None = None  # tables: offset (in the parent) where data rows start
    picture_path: str | None = None
    lines: list[Line] = field(default_factory=list, repr=False)  # offsets in the block; kept by the parent


@dataclass
class Parent:
    parent_id: str
    document_id: str
    ordinal: int
    heading_path: list[str]
    text: str
    blocks: list[Block]
    item_refs: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)
    picture_paths: list[str] = field(default_factory=list)
    table_count: int = 0
    record_id: str | None = None  # record collections (BEIR corpus): the record this parent is
    boxes: list[Line] = field(default_factory=list)  # PDFs: where the text is printed (ingest/boxes.py)
    page_sizes: dict[str, list[float]] = field(default_factory=dict)  # "3" -> [width, height] in points

    @classmethod
    def from_row(cls, row: dict) -> "Parent":
        return cls(**{**row, "blocks": [Block(**b) for b in row["blocks"]]})

    def to_row(self) -> dict:
        row = asdict(self)
        row["blocks"] = [{k: v for k, v in asdict(b).items() if k != "lines"} for b in self.blocks]
        return row


def _pages(item) -> list[int]:
    return sorted({p.page_no for p in getattr(item, "prov", []) or []})


def _caption_refs(document: DoclingDocument) -> set[str]:
    refs: set[str] = set()
    for item in [*document.tables, *document.pictures]:
        refs.update(ref.cref for ref in item.captions)
    return refs


def picture_text(item: GroupItem | PictureItem, document: DoclingDocument) -> str:
    """The text set inside a picture (a labelled diagram, a table the layout took for a
    picture): Docling makes those lines the picture's children, which reading order skips."""
    parts = []
    for ref in item.children:
        child = ref.resolve(document)
        if isinstance(child, TextItem) and child.text.strip():
            parts.append(" ".join(child.text.split()))
        elif isinstance(child, (GroupItem, PictureItem)):
            parts.append(picture_text(child, document))
    return " ".join(p for p in parts if p)


def _picture_path(item: PictureItem) -> str | None:
    image = item.image
    if image is None or image.uri is None:
        return None
    uri = str(image.uri)
    return None if uri.startswith("data:") else uri


# A cell spanning rows is repeated in each row (a row key read on its own) only while short.
_ROW_KEY_CHARS = 80


def _table_markdown(item: TableItem, document: DoclingDocument) -> tuple[str, int, list[tuple[int, int, TableCell]]]:
    """Compact Markdown (no alignment padding, which only costs tokens) and the number of
    leading lines that form the header (header rows + the ``|---|`` line).

    A cell spanning several columns is written once (its other positions stay empty, so
    columns keep their place); a cell spanning rows is repeated only while it is short.
    Empty rows and columns are dropped. Header rows are the leading rows Docling marked
    as column headers, else the first row; a "header" that is most of the table is a
    detection error and falls back to the first row. Also (start, end, cell) of each written
    cell in the Markdown, to find its box."""
    grid = item.data.grid
    if not grid or not grid[0]:
        text = item.export_to_markdown(document).strip()
        return text, min(2, len(text.splitlines())), []

    def cell(c, r: int, col: int) -> str:
        text = " ".join(c.text.split()).replace("|", "\\|")
        if col != c.start_col_offset_idx:
            return ""
        if r != c.start_row_offset_idx and len(text) > _ROW_KEY_CHARS:
            return ""
        return text

    rows = [[cell(c, r, col) for col, c in enumerate(row)] for r, row in enumerate(grid)]
    keep_cols = [j for j in range(len(rows[0])) if any(row[j] for row in rows)]
    kept = [(r, [row[j] for j in keep_cols]) for r, row in enumerate(rows) if any(row)]
    if not kept or not keep_cols:
        return "", 0, []
    marked = 0
    for r, _ in kept:
        if grid[r] and all(c.column_header for c in grid[r] if c.text.strip()) and any(c.text.strip() for c in grid[r]):
            marked += 1
        else:
            break
    header_rows = marked if 0 < marked <= max(1, len(kept) // 3) else 1
    lines = ["| " + " | ".join(values) + " |" for _, values in kept]
    lines.insert(header_rows, "|" + "---|" * len(keep_cols))
    cells, offset = [], 0
    for number, line in enumerate(lines):
        if number != header_rows:
            r, values = kept[number if number < header_rows else number - 1]
            position = offset + 2
            for j, value in zip(keep_cols, values):
                if value:
                    cells.append((position, position + len(value), grid[r][j]))
                position += len(value) + 3
        offset += len(line) + 1
    return "\n".join(lines), header_rows + 1, cells


def _record_id(document: DoclingDocument, refs: list[str]) -> str | None:
    """Id of the record group (``record:<id>``, see parsing/records.py) holding these items."""
    for ref in refs[:1]:
        node = RefItem(cref=ref).resolve(document)
        while getattr(node, "parent", None) is not None:
            node = node.parent.resolve(document)
            if isinstance(node, GroupItem) and (node.name or "").startswith("record:"):
                return node.name[len("record:") :]
    return None


def _text_lines(layout: PdfText | None, item, at: int, length: int) -> list[Line]:
    """Lines of an item written stripped at ``at`` in its block (``length`` characters)."""
    if layout is None:
        return []
    lead = len(item.text) - len(item.text.lstrip())
    return shifted(layout.item_lines(item, item.text), at - lead, at + length)


def _table_lines(
    layout: PdfText | None,
    item: TableItem,
    caption_item,
    caption: str | None,
    at: int,
    cells: list[tuple[int, int, TableCell]],
) -> list[Line]:
    """The caption's lines, then each written cell's box (a cell is one highlight)."""
    if layout is None or not item.prov:
        return []
    lines = _text_lines(layout, caption_item, 0, len(caption)) if caption_item is not None and caption else []
    for start, end, cell in cells:
        where = layout.cell_box(item, cell)
        if where is not None:
            lines.append([at + start, at + end, where[0], *where[1]])
    return lines


# A paragraph or list item the layout cut where a line, a column or a page ended: it ends on no
# closing mark, and the next paragraph opens in lower case ("… Toutefois, nous" / "conservons la
# possibilité d'exercer un recours"). Read as two, each half is a sentence of its own.
_CLOSED = re.compile(r"[.!?:;…»)\]]\s*$")
_LOWER_START = re.compile(r"^[a-zà-öø-ÿ]")
_HYPHENATED = re.compile(r"[a-zà-öø-ÿ]-$")


def _continues(previous: Block | None, block: Block) -> bool:
    return (
        previous is not None
        and previous.kind in ("text", "list")
        and block.kind == "text"
        and not _CLOSED.search(previous.text)
        and bool(_LOWER_START.match(block.text))
    )


def _joined(previous: Block, block: Block) -> Block:
    """One block of two, a word hyphenated at the cut made whole ("fonctionne-" "ment")."""
    if _HYPHENATED.search(previous.text):
        head, by = previous.text[:-1], len(previous.text) - 1
    else:
        head, by = previous.text + " ", len(previous.text) + 1
    return Block(
        previous.kind,
        head + block.text,
        previous.refs + block.refs,
        sorted(set(previous.pages) | set(block.pages)),
        lines=shifted(previous.lines, 0, len(head.rstrip())) + shifted(block.lines, by),
    )


def _joined_continuations(events):
    """The events of `_blocks_and_headings`, a block the layout cut mid-sentence joined again."""
    pending: Block | None = None
    for event in events:
        if event[0] == "block" and _continues(pending, event[1]):
            pending = _joined(pending, event[1])
            continue
        if pending is not None:
            yield ("block", pending)
            pending = None
        if event[0] == "block":
            pending = event[1]
        else:
            yield event
    if pending is not None:
        yield ("block", pending)


def _blocks_and_headings(document: DoclingDocument, layout: PdfText | None = None):
    """Yield ("heading", level, text) and ("block", Block) in reading order; with ``layout``,
    each block knows its lines."""
    caption_refs = _caption_refs(document)
    pending_caption: TextItem | SectionHeaderItem | None = None

    def flush_pending():
        nonlocal pending_caption
        if pending_caption is not None:
            item, pending_caption = pending_caption, None
            if isinstance(item, SectionHeaderItem) and _TABLE_TITLE.match(item.text):
                # no table adopted it: the heading it was ("Tableau de synthèse des garanties et
                # options", a chapter of Allianz's contents, over a sentence then its table;
                # "Formule PJ 2" over a comparison's column stays a line of text)
                yield ("heading", max(1, int(item.level)), item.text.strip())
            else:
                text = item.text.strip()
                yield (
                    "block",
                    Block("text", text, [item.self_ref], _pages(item), lines=_text_lines(layout, item, 0, len(text))),
                )

    for item, _level in document.iterate_items():
        if isinstance(item, TitleItem):
            yield from flush_pending()
            yield ("heading", 0, item.text.strip())
        elif isinstance(item, SectionHeaderItem):
            yield from flush_pending()
            if _CAPTION_LIKE.match(item.text) and len(item.text) < 200:
                pending_caption = item  # PDF layout often labels a table caption as a heading
                continue
            yield ("heading", max(1, int(item.level)), item.text.strip())
        elif isinstance(item, TableItem):
            caption = item.caption_text(document).strip() or None
            refs = [item.self_ref, *(ref.cref for ref in item.captions)]
            caption_item = item.captions[0].resolve(document) if len(item.captions) == 1 else None
            if caption is None and pending_caption is not None:
                caption, refs = pending_caption.text.strip(), [pending_caption.self_ref, item.self_ref]
                caption_item, pending_caption = pending_caption, None
            yield from flush_pending()
            markdown, header_lines, cells = _table_markdown(item, document)
            if markdown:
                text = f"{caption}{SEPARATOR}{markdown}" if caption else markdown
                header = "\n".join(markdown.split("\n")[:header_lines])
                # relative to the block's text here; build_parents makes it a parent offset
                header_end = len(text) - len(markdown) + len(header)
                lines = _table_lines(layout, item, caption_item, caption, len(text) - len(markdown), cells)
                yield (
                    "block",
                    Block("table", text, refs, _pages(item), caption=caption, header_end=header_end, lines=lines),
                )
        elif isinstance(item, PictureItem):
            yield from flush_pending()
            caption = item.caption_text(document).strip() or None
            text = "\n".join(t for t in (caption, picture_text(item, document)) if t)
            # the text of a picture is drawn inside it: the picture's box is its one highlight
            where = layout.item_box(item) if layout is not None and text else None
            yield (
                "block",
                Block(
                    "picture",
                    text,
                    [item.self_ref, *(ref.cref for ref in item.captions)],
                    _pages(item),
                    caption=caption,
                    picture_path=_picture_path(item),
                    lines=[[0, len(text), where[0], *where[1]]] if where else [],
                ),
            )
        elif isinstance(item, TextItem):
            if item.self_ref in caption_refs or item.label in (DocItemLabel.PAGE_HEADER, DocItemLabel.PAGE_FOOTER):
                continue
            text = item.text.strip()
            if not text:
                continue
            yield from flush_pending()
            if _CAPTION_LIKE.match(text) and len(text) < 200:
                pending_caption = item  # decided by what follows: a table adopts it
                continue
            at, length = 0, len(text)
            if isinstance(item, FormulaItem) or item.label == DocItemLabel.FORMULA or _DISPLAY_MATH.match(text):
                kind = "formula"
            elif isinstance(item, ListItem):
                kind = "list"
                marker = (item.marker or "-").strip()
                if not text.startswith(marker):
                    text, at = f"{marker} {text}", len(marker) + 1
            else:
                kind = "text"
            yield (
                "block",
                Block(kind, text, [item.self_ref], _pages(item), lines=_text_lines(layout, item, at, length)),
            )
    yield from flush_pending()


def _shared(a: list[str], b: list[str]) -> int:
    """Length of the common start of two heading paths."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def _merge_short_sections(
    sections: list[tuple[list[str], list[Block], int]], min_tokens: int, max_tokens: int
) -> list[tuple[list[str], list[Block], int]]:
    """Sections (path, blocks, tokens) under ``min_tokens`` joined with the sections that follow
    them under the same heading; each joined section's headings below the common path become
    heading blocks.

    A group stays within its first section's heading: it takes the subsections under that
    heading, or else the sibling sections after it that have none ("1. Délai d'attente",
    "2. Franchise"). A heading with subsections ("Article 7 – Résiliation": 7.1, 7.2) starts a
    group of its own, so its clauses keep it in their common path."""

    def under(path: list[str], heading: list[str]) -> bool:
        return len(path) > len(heading) and path[: len(heading)] == heading

    groups: list[list[tuple[list[str], list[Block], int]]] = []
    for index, (path, blocks, tokens) in enumerate(sections):
        if groups:
            group = groups[-1]
            first, size = group[0][0], sum(t for _, _, t in group)
            following = sections[index + 1][0] if index + 1 < len(sections) else []
            in_scope = under(path, first) or (
                len(path) == len(first)
                and path[:-1] == first[:-1]
                and all(len(p) == len(first) for p, _, _ in group)
                and not under(following, path)
            )
            if size < min_tokens and in_scope and size + tokens <= max_tokens:
                group.append((path, blocks, tokens))
                continue
        groups.append([(path, blocks, tokens)])
    merged = []
    for group in groups:
        if len(group) == 1:
            merged.append(group[0])
            continue
        common = group[0][0]
        for path, _, _ in group[1:]:
            common = common[: _shared(common, path)]
        blocks, shown = [], common
        for path, own, _ in group:
            # the headings of this section that the previous one did not already show
            shared = _shared(path, shown)
            pages = own[0].pages if own else []
            blocks += [Block("heading", heading, [], pages) for heading in path[max(shared, len(common)) :]]
            blocks += own
            shown = path
        merged.append((common, blocks, sum(t for _, _, t in group)))
    return merged


def build_parents(
    document: DoclingDocument,
    document_id: str,
    count_tokens: Callable[[str], int],
    max_tokens: int = 2000,
    min_tokens: int = 0,
    layout: PdfText | None = None,
) -> list[Parent]:
    """Group body blocks by heading path; an oversized section is cut at block
    boundaries into several parents (same heading path, consecutive ordinals); a section
    under ``min_tokens`` is joined with the sections after it under the same heading
    (never in record collections). With ``layout`` (a PDF's text layer), each parent keeps
    its boxes and page sizes."""
    sections: list[tuple[list[str], list[Block], int]] = []  # heading path, blocks, tokens
    headings: list[tuple[int, str]] = []
    current: list[Block] = []
    current_tokens = 0

    def close():
        nonlocal current, current_tokens
        if current:
            sections.append(([h for _, h in headings], current, current_tokens))
        current, current_tokens = [], 0

    records = any((group.name or "").startswith("record:") for group in document.groups)
    events = _blocks_and_headings(document, layout)
    # records are separate texts, whatever their punctuation
    for event in events if records else _joined_continuations(events):
        if event[0] == "heading":
            _, level, text = event
            close()
            headings = [(lvl, h) for lvl, h in headings if lvl < level] + [(level, text)]
            continue
        block: Block = event[1]
        tokens = count_tokens(block.text) if block.text else 0
        if current and current_tokens + tokens > max_tokens:
            close()
        current.append(block)
        current_tokens += tokens
    close()
    if min_tokens and not records:
        sections = _merge_short_sections(sections, min_tokens, max_tokens)

    sizes = page_sizes(document) if layout is not None else {}
    parents: list[Parent] = []
    seen: dict[str, int] = {}
    orphans: list[str] = []
    for path, blocks, _ in sections:
        offset, pieces = 0, []
        kept = [b for b in blocks if b.text]
        for i, block in enumerate(kept):
            block.start = offset
            block.end = offset + len(block.text)
            if block.kind == "table" and block.header_end is not None:
                block.header_end += block.start
            pieces.append(block.text)
            offset = block.end + (len(SEPARATOR) if i < len(kept) - 1 else 0)
        text = SEPARATOR.join(pieces)
        pictures = [b.picture_path for b in blocks if b.picture_path]
        if not text and not pictures:
            # Only caption-less pictures with no saved image (a logo): nothing to index, but
            # they stay accounted for in the next parent, so coverage checks see every item.
            orphans.extend(r for b in blocks for r in b.refs)
            continue
        content_key = short_id(document_id, path, text)
        boxes = [line for b in kept for line in shifted(b.lines, b.start)]
        duplicate = seen.get(content_key, 0)
        seen[content_key] = duplicate + 1
        parents.append(
            Parent(
                parent_id=short_id(document_id, path, text, duplicate),
                document_id=document_id,
                ordinal=len(parents),
                heading_path=path,
                text=text,
                blocks=kept,
                item_refs=[*orphans, *(r for b in blocks for r in b.refs)],
                pages=sorted({p for b in blocks for p in b.pages}),
                picture_paths=pictures,
                table_count=sum(b.kind == "table" for b in blocks),
                record_id=_record_id(document, [r for b in blocks for r in b.refs]),
                boxes=boxes,
                page_sizes={str(p): sizes[str(p)] for p in sorted({line[2] for line in boxes}) if str(p) in sizes},
            )
        )
        orphans = []
    if orphans and parents:
        parents[-1].item_refs.extend(orphans)
    return parents
