"""Document structure after conversion: table of contents, headings, title.

Real policies print a table of contents ("Annexe 2 : … ------ 79"); the layout stage
sees its lines as headings or as a two-column table, so a passage ended up under a path
of unrelated headings. Here the contents are recognized (leader dots/dashes, trailing
page numbers), moved out of the body (furniture: kept in the document, not indexed), and
their entries confirm which headings are real, and bring back a chapter heading the layout
stage took for a page header (Allianz prints each chapter's title at the top of its first
page: "Tableau de synthèse des garanties et options" was furniture, and the table under it
sat under the previous chapter's heading). Headings broken over two lines are
joined; a "heading" that is the first line of a paragraph, or a line in its middle, goes
back into it; the
document title comes from the PDF metadata when it reads like a title, else from the
first page's headings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from docling_core.types.doc import DocItemLabel, DoclingDocument, SectionHeaderItem, TableItem, TextItem, TitleItem
from docling_core.types.doc.document import ContentLayer

from rag_assets.parsing.text_repair import heading_rank
from rag_assets.text.folding import fold_alphanumeric

# "Titre ........ 12", "Titre ------ 12", "Titre … 12", "Titre 12" (in a run of such lines)
_LEADERS = r"(?:\s*[.·…_\-–—]{3,}\s*|\s*(?:\.\s){3,}\s*)"
_TOC_LINE = re.compile(rf"^(?P<title>.*?\S){_LEADERS}(?:p(?:age|\.)?\s*)?(?P<page>\d{{1,3}})$", re.IGNORECASE)
_TRAILING_PAGE = re.compile(r"^(?P<title>.*?[^\d\s])\s+(?:p(?:age|\.)?\s*)?(?P<page>\d{1,3})$", re.IGNORECASE)
_TRAILING_LEADERS = re.compile(rf"{_LEADERS}$")
_TOC_HEADING = re.compile(r"^(sommaire|table des mati[eè]res|contents|table of contents)\b", re.IGNORECASE)
_PAGE_NUMBER = re.compile(r"^(?:p(?:age|\.)?\s*)?\d{1,3}$", re.IGNORECASE)
_PAGE_NUMBERS = re.compile(r"^(?:(?:p(?:age|\.)?\s*)?\d{1,3}\s*)+$", re.IGNORECASE)  # "12", "p. 12", "8 8 8"
_REFERENCE = re.compile(r"^(?:p(?:age|\.)?\s*)?\d{1,3}(?:\s*(?:à|-|–|,)\s*\d{1,3})*$", re.IGNORECASE)
_ENUMERATED = re.compile(r"^(?:[a-z]|[ivx]{1,4}|\d{1,3})[.)]\s|^article\b", re.IGNORECASE)  # "a. Prise d'effet"
MIN_TOC_LINES = 3  # a page needs this many contents lines to hold a table of contents
MIN_ALTERNATING_ENTRIES = 8  # title / page-number line pairs on a page for a contents page
ALTERNATING_SHARE = 0.6  # ... that make up this share of its lines at least
RUNNING_HEADER_PAGES = 3  # a page header on this many pages is a running title, not a chapter's heading
HEADING_WORDS = 10  # a page header this short, not shaped like a sentence, is a heading taken for one
HEADING_QUESTION_WORDS = 15  # "Quand commence la couverture et quand prend-elle fin ?"
PARAGRAPH_HEADING_WORDS = 4  # a "heading" this long running on in lowercase is a paragraph's first line
PROSE_WORDS = (
    8  # a block this long stopping mid-sentence is prose that runs on (shorter: a label of a grid read as text)
)
_BAD_TITLES = re.compile(
    r"^(untitled|undefined|sans titre|document\d*|microsoft word.*|.*\.(docx?|pdf|indd|qxd))$", re.IGNORECASE
)


@dataclass(frozen=True)
class TocEntry:
    title: str
    page: int


def _toc_table_entries(table: TableItem, pages: int) -> list[TocEntry] | None:
    """Entries of a table that is a table of contents (title, …, page number per row)."""
    rows = [[c.text.strip() for c in row] for row in table.data.grid]
    # A contents row is a title then numbers (article, page); a cut title may add a cell.
    shapes = [[c for i, c in enumerate(row) if c and c not in row[:i]] for row in rows if any(row)]
    plain = [len(cells) <= 2 or all(_REFERENCE.match(c) for c in cells[1:]) for cells in shapes]
    if not shapes or sum(plain) < 0.8 * len(shapes):
        return None
    entries = []
    for row in rows:
        cells = [c for c in row if c]
        if not cells:
            continue
        page = cells[-1] if _PAGE_NUMBER.match(cells[-1]) else None
        title = _TRAILING_LEADERS.sub("", cells[0]).strip()
        if page is not None and len(cells) >= 2:
            number = int(re.sub(r"\D", "", page))
            if 0 < number <= max(pages, 1) + 5:
                entries.append(TocEntry(title, number))
                continue
        match = _TOC_LINE.match(" ".join(cells))
        if match:
            entries.append(TocEntry(match["title"].strip(), int(match["page"])))
    if len(entries) >= MIN_TOC_LINES and len(entries) >= 0.7 * len([r for r in rows if any(r)]):
        return entries
    return None


def _toc_line(text: str, pages: int) -> TocEntry | None:
    match = _TOC_LINE.match(text.strip())
    if match and 0 < int(match["page"]) <= max(pages, 1) + 5:
        return TocEntry(match["title"].strip(), int(match["page"]))
    return None


def find_table_of_contents(document: DoclingDocument) -> tuple[list, list[TocEntry]]:
    """(items forming the table of contents, its entries)."""
    pages = len(document.pages) if document.pages else 0
    items: list = []
    entries: list[TocEntry] = []
    by_page: dict[int, list[tuple[object, TocEntry]]] = {}
    headings_by_page: dict[int, list] = {}
    for item, _ in document.iterate_items():
        page = item.prov[0].page_no if getattr(item, "prov", None) else 0
        if isinstance(item, TableItem):
            found = _toc_table_entries(item, pages)
            if found:
                items.append(item)
                entries.extend(found)
        elif isinstance(item, TextItem):
            entry = _toc_line(item.text, pages)
            if entry is not None:
                by_page.setdefault(page, []).append((item, entry))
            elif _TOC_HEADING.match(item.text.strip()):
                headings_by_page.setdefault(page, []).append(item)
    for page, found in by_page.items():
        if len(found) >= MIN_TOC_LINES or (page in headings_by_page and found):
            items.extend(item for item, _ in found)
            items.extend(headings_by_page.get(page, []))
            entries.extend(entry for _, entry in found)
    items.extend(item for item in _repeated_headings_contents(document) if item not in items)
    for title_item, number_item, entry in _alternating_contents(document, pages):
        items.extend(i for i in (title_item, number_item) if i not in items)
        entries.append(entry)
    for page, headings in headings_by_page.items():  # a "Sommaire" heading above a contents table
        if any(isinstance(i, TableItem) and i.prov and i.prov[0].page_no == page for i in items):
            items.extend(h for h in headings if h not in items)
    # Page numbers and "pages" column titles the layout left beside the contents.
    toc_pages = {i.prov[0].page_no for i in items if getattr(i, "prov", None)}
    for item, _ in document.iterate_items():
        if (
            isinstance(item, TextItem)
            and item not in items
            and item.prov
            and item.prov[0].page_no in toc_pages
            and (
                _PAGE_NUMBERS.match(item.text.strip())
                or item.text.strip().lower() in ("pages", "page")
                or _TRAILING_LEADERS.search(item.text.strip())
            )
        ):
            items.append(item)
    return items, entries


def _alternating_contents(document: DoclingDocument, pages: int) -> list[tuple[object, object, TocEntry]]:
    """Contents set as a title line then its page number on a line of its own (MAIF's
    sommaires: "La garantie gel" / "31"), on a page where such pairs, in page order, are most
    of the lines: (title item, number item, entry) each."""
    lines: dict[int, list[TextItem]] = {}
    for item, _ in document.iterate_items():
        if isinstance(item, TextItem) and item.prov and item.text.strip():
            lines.setdefault(item.prov[0].page_no, []).append(item)
    found = []
    for page_lines in lines.values():
        pairs = [
            (a, b)
            for a, b in zip(page_lines, page_lines[1:])
            if _PAGE_NUMBER.match(b.text.strip())
            and not _PAGE_NUMBERS.match(a.text.strip())
            and a.text.strip().lower() not in ("pages", "page")
            and 0 < int(re.sub(r"\D", "", b.text)) <= max(pages, 1)
        ]
        numbers = [int(re.sub(r"\D", "", b.text)) for _, b in pairs]
        if (
            len(pairs) >= MIN_ALTERNATING_ENTRIES
            and 2 * len(pairs) >= ALTERNATING_SHARE * len(page_lines)
            and numbers == sorted(numbers)
        ):
            found += [(a, b, TocEntry(a.text.strip(), n)) for (a, b), n in zip(pairs, numbers)]
    return found


_NUMBERED_ENTRIES = re.compile(r"^(?:\d+(?:\.\d+)+\s*[-–.)]\s*\S.*){1}(?:\s\d+(?:\.\d+)+\s*[-–.)]\s*\S.*)+$")


def _repeated_headings_contents(document: DoclingDocument) -> list:
    """Contents printed without leaders or page numbers beside the titles (MAIF's "1 - Le
    domaine d'application du contrat", then "1.1 - L'objet… 1.2 - …", page numbers in a
    column of their own): a page holding at least MIN_TOC_LINES distinct numbered headings
    that all come back as headings on later pages is contents. Its repeated headings and its
    runs of sub-entries leave the body (its page numbers follow, as beside any contents);
    anything else on the page stays."""
    headings = [
        (item, item.prov[0].page_no, fold_alphanumeric(item.text))
        for item, _ in document.iterate_items()
        if isinstance(item, SectionHeaderItem) and item.prov and fold_alphanumeric(item.text)
    ]
    repeated: dict[int, list] = {}
    for i, (item, page, folded) in enumerate(headings):
        if heading_rank(item.text.strip()) is not None and any(
            f == folded and p > page for _, p, f in headings[i + 1 :]
        ):
            repeated.setdefault(page, []).append(item)
    pages = {
        page for page, found in repeated.items() if len({fold_alphanumeric(h.text) for h in found}) >= MIN_TOC_LINES
    }
    return [
        item
        for item, _ in document.iterate_items()
        if isinstance(item, TextItem)
        and item.prov
        and item.prov[0].page_no in pages
        and (item in repeated[item.prov[0].page_no] or _NUMBERED_ENTRIES.match(" ".join(item.text.split())))
    ]


def _join_split_headings(document: DoclingDocument) -> None:
    """ "1 Quelles sont les garanties et options que" + "nous vous proposons ?" → one heading."""
    headings = [item for item, _ in document.iterate_items() if isinstance(item, SectionHeaderItem)]
    to_delete = []
    for first, second in zip(headings, headings[1:]):
        if first in to_delete or not first.prov or not second.prov:
            continue
        same_page = first.prov[0].page_no == second.prov[0].page_no
        consecutive = first.parent == second.parent and _sibling(document, first) is second
        if (
            same_page
            and consecutive
            and second.text[:1].islower()
            and heading_rank(second.text) is None
            and not _ENUMERATED.match(second.text)
            and not first.text.rstrip().endswith(_SENTENCE_END)
        ):
            first.text = f"{first.text.rstrip()} {second.text.strip()}"
            first.orig = first.text
            first.prov.extend(second.prov)
            to_delete.append(second)
    if to_delete:
        document.delete_items(node_items=to_delete)


def _sibling(document: DoclingDocument, item, step: int = 1):
    """The item `step` places after `item` under the same parent (-1: the one before), or None."""
    parent = item.parent.resolve(document) if item.parent else document.body
    refs = [c.cref for c in parent.children]
    index = refs.index(item.self_ref) + step
    return parent.children[index].resolve(document) if 0 <= index < len(refs) else None


_SENTENCE_END = (".", ":", "?", "!", ";")


def _is_paragraph(item) -> bool:
    return isinstance(item, TextItem) and item.label == DocItemLabel.TEXT


def _headings_back_into_paragraphs(document: DoclingDocument) -> None:
    """A long "heading" whose sentence runs on into the next paragraph is that paragraph's start."""
    to_delete = []
    for item, _ in list(document.iterate_items()):
        if not isinstance(item, SectionHeaderItem) or len(item.text.split()) < PARAGRAPH_HEADING_WORDS:
            continue
        following = _sibling(document, item)
        if _is_paragraph(following) and following.text[:1].islower() and not item.text.rstrip().endswith(_SENTENCE_END):
            following.text = f"{item.text.rstrip()} {following.text}"
            following.orig = f"{item.orig.rstrip()} {following.orig}"
            following.prov[:0] = item.prov
            to_delete.append(item)
    if to_delete:
        document.delete_items(node_items=to_delete)


def _continued_lines_out_of_headings(document: DoclingDocument) -> int:
    """A "heading" in lowercase after a paragraph that stops mid-sentence is that sentence's
    next line ("Les vêtements … à concurrence de leur valeur" / "résiduelle au jour du
    sinistre, … un abattement de" / "20 % par année d'âge…" was three blocks, the middle one a
    heading that cut MAIF's clothing rule in two): it joins the paragraph, and so does the
    line after it when the sentence still runs on. Returns the headings joined."""
    to_delete: list = []
    for item, _ in list(document.iterate_items()):
        if (
            not isinstance(item, SectionHeaderItem)
            or not item.text[:1].islower()
            or _ENUMERATED.match(item.text)
            or len(item.text.split()) < 2
            or item in to_delete
        ):
            continue
        before = _sibling(document, item, -1)
        if not (
            _is_paragraph(before)
            and before not in to_delete
            and len(before.text.split()) >= PROSE_WORDS
            and not before.text.rstrip().endswith(_SENTENCE_END)
        ):
            continue
        joined = [item]
        after = _sibling(document, item)
        if (
            _is_paragraph(after)
            and not item.text.rstrip().endswith(_SENTENCE_END)
            and (after.text[:1].islower() or after.text[:1].isdigit())
        ):
            joined.append(after)
        for line in joined:
            before.text = f"{before.text.rstrip()} {line.text.strip()}"
            before.orig = f"{before.orig.rstrip()} {line.orig.strip()}"
            before.prov.extend(line.prov)
        to_delete.extend(joined)
    if to_delete:
        document.delete_items(node_items=to_delete)
    return sum(isinstance(i, SectionHeaderItem) for i in to_delete)


def _row_texts(table: TableItem, row: int) -> list[str]:
    return [" ".join(c.text.split()).casefold() for c in table.data.grid[row]] if table.data.num_rows > row else []


def merge_continued_tables(document: DoclingDocument) -> list[int]:
    """A table that ends one page and one that opens the next, with the same columns, are
    one table: the second's rows are appended to the first (its repeated header row
    dropped). Returns the pages where a table continues."""
    body = [
        item
        for item, _ in document.iterate_items()
        if getattr(item, "prov", None)
        and item.label
        not in (DocItemLabel.PAGE_HEADER, DocItemLabel.PAGE_FOOTER, DocItemLabel.FOOTNOTE, DocItemLabel.CAPTION)
    ]
    merged_into: dict[str, TableItem] = {}
    continued, to_delete = [], []
    for before, after in zip(body, body[1:]):
        if not (isinstance(before, TableItem) and isinstance(after, TableItem)):
            continue
        first = merged_into.get(before.self_ref, before)
        if (
            after.prov[0].page_no != before.prov[-1].page_no + 1
            or after.data.num_cols != first.data.num_cols
            or after.caption_text(document).strip()
        ):
            continue
        skip = 1 if _row_texts(after, 0) == _row_texts(first, 0) else 0
        offset = first.data.num_rows - skip
        for cell in after.data.table_cells:
            if cell.start_row_offset_idx < skip:
                continue
            first.data.table_cells.append(
                cell.model_copy(
                    update={
                        "start_row_offset_idx": cell.start_row_offset_idx + offset,
                        "end_row_offset_idx": cell.end_row_offset_idx + offset,
                        "column_header": False,
                    }
                )
            )
        first.data.num_rows += after.data.num_rows - skip
        first.prov.extend(after.prov)
        merged_into[after.self_ref] = first
        to_delete.append(after)
        continued.append(after.prov[0].page_no)
    if to_delete:
        document.delete_items(node_items=to_delete)
    return continued


def apply_structure(document: DoclingDocument) -> dict:
    """Table of contents out of the body, heading repairs, tables continued across pages
    joined; in place. Returns a summary."""
    continued = merge_continued_tables(document)
    items, entries = find_table_of_contents(document)
    for item in items:
        item.content_layer = ContentLayer.FURNITURE
    stripped = 0
    for item, _ in document.iterate_items():
        if isinstance(item, SectionHeaderItem):
            cleaned = _TRAILING_LEADERS.sub("", item.text).strip()
            if cleaned != item.text and cleaned:
                item.text, stripped = cleaned, stripped + 1
    _join_split_headings(document)
    _headings_back_into_paragraphs(document)
    continued_lines = _continued_lines_out_of_headings(document)
    toc_pages = sorted({i.prov[0].page_no for i in items if getattr(i, "prov", None)})
    restored = _headings_from_page_headers(document, entries, min(toc_pages, default=0))
    confirmed = _confirm_headings(document, entries)
    return {
        "tables_continued_on_pages": continued,
        "toc_entries": len(entries),
        "toc_pages": toc_pages,
        "headings_confirmed_by_toc": confirmed,
        "headings_restored_from_page_headers": restored["headings"],
        "paragraphs_restored_from_page_headers": restored["paragraphs"],
        "headings_joined_to_their_paragraph": continued_lines,
    }


def _headings_from_page_headers(document: DoclingDocument, entries: list[TocEntry], toc_page: int) -> dict:
    """Page headers after the contents that are no running title go back into the body.

    A running title repeats on two pages or more ("Référence : NI202401/…", "Page 2 sur 4": its
    numbers do not count; text_repair makes furniture of any line in the margin of two pages);
    a contents entry, on `RUNNING_HEADER_PAGES` or more (a chapter's title printed atop its
    first two pages is still its heading). A one-page document tells none from a heading: its
    page headers stay furniture. Otherwise the layout stage took the top line of a page's body
    for a header (a close call that differs between CPUs: the Mila IPID's "MULTIRISQUE
    HABITATION" is a heading on one machine, a header on another; restored, both give one
    document):

    * a contents entry, or a line that reads like a heading ("2.4.4 - La garantie gel",
      "Où suis-je couvert ?", an IPID's "MULTIRISQUE HABITATION") and is no heading of the
      body yet, becomes a heading at the level of the headings numbered like it, else of the
      first numbered level (a chapter title beside "I. …");
    * any other line is a paragraph again ("Vous êtes reconnu en état d'incapacité temporaire
      totale lorsque…" was furniture, never indexed).

    Returns the pages of each."""
    titles = {fold_alphanumeric(e.title) for e in entries if fold_alphanumeric(e.title)}
    every = list(document.iterate_items(included_content_layers={*ContentLayer}))
    headings = [
        item for item, _ in every if isinstance(item, SectionHeaderItem) and item.content_layer == ContentLayer.BODY
    ]
    body_titles = {fold_alphanumeric(h.text) for h in headings}
    page_headers = [
        item
        for item, _ in every
        if isinstance(item, TextItem)
        and item.label == DocItemLabel.PAGE_HEADER
        and item.prov
        and item.prov[0].page_no > toc_page
        and fold_alphanumeric(item.text)
    ]
    pages_of: dict[str, set[int]] = {}
    for item in page_headers:
        pages_of.setdefault(_running_key(item.text), set()).add(item.prov[0].page_no)
    several_pages = len(document.pages) >= 2
    level_of_rank: dict = {}
    for heading in headings:
        rank = heading_rank(heading.text.strip())
        if rank is not None:
            level_of_rank.setdefault(rank, heading.level)
    top_level = level_of_rank[min(level_of_rank)] if level_of_rank else min((h.level for h in headings), default=1)
    restored: dict[str, list[int]] = {"headings": [], "paragraphs": []}
    back = []
    for item in page_headers:
        text = item.text.strip()
        pages = len(pages_of[_running_key(text)])
        entry = fold_alphanumeric(text) in titles
        running = pages >= RUNNING_HEADER_PAGES if entry else (pages > 1 or not several_pages)
        if running or _PAGE_NUMBERS.match(text) or fold_alphanumeric(text) in body_titles:
            continue
        if entry or _reads_like_heading(text):
            level = level_of_rank.get(heading_rank(text), top_level)
            document.insert_heading(
                sibling=item,
                text=item.text,
                orig=item.orig,
                level=level,
                prov=item.prov[0],
                content_layer=ContentLayer.BODY,
                after=False,
            )
            restored["headings"].append(item.prov[0].page_no)
        else:
            document.insert_text(
                sibling=item,
                label=DocItemLabel.TEXT,
                text=item.text,
                orig=item.orig,
                prov=item.prov[0],
                content_layer=ContentLayer.BODY,
                after=False,
            )
            restored["paragraphs"].append(item.prov[0].page_no)
        back.append(item)
    if back:
        document.delete_items(node_items=back)
    return restored


def _running_key(text: str) -> str:
    """A running title's identity: "Page 1 sur 4" and "Page 2 sur 4" are one."""
    return " ".join(w for w in fold_alphanumeric(text).split() if not w.isdigit())


def _reads_like_heading(text: str) -> bool:
    """A numbered title, a short question, or a short line in no sentence's shape."""
    words = text.split()
    if heading_rank(text) is not None or (text.endswith("?") and len(words) <= HEADING_QUESTION_WORDS):
        return True
    return len(words) <= HEADING_WORDS and not text.endswith((*_SENTENCE_END, ",")) and text[:1].isupper()


def _confirm_headings(document: DoclingDocument, entries: list[TocEntry]) -> int:
    """Headings listed in the contents are real: count them (and so measure the TOC's use).

    A heading that is itself a contents line printed in the body (title + page number,
    matching an entry) is not a heading: it goes to furniture with the contents."""
    if not entries:
        return 0
    titles = {fold_alphanumeric(e.title) for e in entries if fold_alphanumeric(e.title)}
    confirmed = 0
    for item, _ in document.iterate_items():
        if not isinstance(item, SectionHeaderItem):
            continue
        folded = fold_alphanumeric(item.text)
        if folded in titles or any(folded.startswith(t) or t.startswith(folded) for t in titles if len(t) > 8):
            confirmed += 1
            continue
        match = _TRAILING_PAGE.match(item.text.strip())
        if match and fold_alphanumeric(match["title"]) in titles:
            item.content_layer = ContentLayer.FURNITURE
    return confirmed


def document_title(document: DoclingDocument, metadata_title: str | None) -> str | None:
    """The PDF's own title when it reads like one, else the first page's first headings."""
    if metadata_title:
        title = " ".join(metadata_title.split())
        if len(title.split()) >= 2 and not _BAD_TITLES.match(title):
            return title
    first_page = []
    for item, _ in document.iterate_items():
        if not getattr(item, "prov", None) or item.prov[0].page_no > 1:
            if first_page:
                break
            continue
        if isinstance(item, (TitleItem, SectionHeaderItem)):
            first_page.append(" ".join(item.text.split()))
            if len(first_page) == 2:
                break
        elif first_page:
            break
    title = " – ".join(first_page)
    return title[:160] if title else None
