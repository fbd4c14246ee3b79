"""Repairs applied to a converted DoclingDocument: line-break artefacts and heading levels.

Docling already joins "assu-" + "rance" inside one layout cluster and across the
paragraph merges of its reading-order stage. It does not handle soft hyphens
(U+00AD, common in EUR-Lex PDFs) inside a cluster, numbers split after a
separator ("$5," + "000" becomes "$5, 000"), words split between two items,
nor legal heading keywords beyond PART/TITLE/CHAPTER/ARTICLE in English.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from docling_core.types.doc import DocItemLabel, DoclingDocument, TextItem
from docling_core.types.doc.document import ContentLayer, SectionHeaderItem

MARGIN_BAND = 0.12
LEAF_LEVEL = (
    100  # level of an unnumbered heading inside a numbered tree  # share of page height holding running headers/footers
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SOFT_HYPHEN_BREAK = re.compile(r"\u00ad\s*")
# "$5, 000" / "1 234, 56 €": a number cut after its separator at a line break.
# Only rejoined next to a currency or unit, so "Articles 5, 100" stays apart.
_CURRENCY = r"(?:[$€£]|EUR|USD|GBP|euros?|%)"
_SPLIT_NUMBER_AFTER_CURRENCY = re.compile(r"(?<=[$€£])(\s?\d{1,3}(?:[ \u00a0.,]\d{3})*[.,]) (\d{2,3})(?!\d)")
_SPLIT_NUMBER_BEFORE_CURRENCY = re.compile(
    r"(?<![\d.,])(\d{1,3}(?:[ \u00a0.]\d{3})*[.,]) (\d{2,3})(?=\s?" + _CURRENCY + r"(?!\w))"
)
_WORD_HYPHEN_END = re.compile(r"[^\W\d_][-\u00ad]$")
_ENUMERATOR = (
    r"\s+(?:[IVXLCDM]+(?:er|re|ère)?|\d+(?:er|re)?[a-z]?|[A-Z]|premier|première|unique|preliminary|préliminaire)\b"
)
_LEGAL_KEYWORDS: list[tuple[int, re.Pattern[str]]] = [
    (rank, re.compile(rf"^(?:{words}){_ENUMERATOR}", re.IGNORECASE))
    for rank, words in [
        (0, "part|partie|book|livre"),
        (1, "title|titre|annex|annexe"),
        (2, "chapter|chapitre"),
        (3, "section"),
        (4, "subsection|sub-section|sous-section"),
        (5, "paragraphe|paragraph"),
        (6, "article|art\\."),
    ]
]
_SECTION_SIGN = re.compile(r"^§+\s*\d")
# "Article L 114-2 du Code des assurances", "Article 2246 du Code civil": a law the policy
# quotes (in its prescription clause), not a part of the policy's own numbering.
_CITED_ARTICLE = re.compile(r"^(?:article|art\.)\s+\S+(?:\s+\S+)?\s+(?:du|de la|des)\s+code\b", re.IGNORECASE)
_ROMAN_HEADING = re.compile(r"^[IVXLC]+[.)]\s")
_DOTTED_HEADING = re.compile(r"^(\d+(?:\.\d+)*)[.)]?\s+\D")
_LETTER_HEADING = re.compile(r"^[A-Z][.)]\s")


def clean_cell_text(text: str) -> str:
    """Drop control characters some PDFs emit (NUL, stray newlines) and trim."""
    return " ".join(_CONTROL.sub("", text).split())


def join_lines(lines: Sequence[str]) -> str:
    """Join text lines of one block, closing words hyphenated at a line end."""
    out = ""
    for line in (line.strip() for line in lines):
        if not line:
            continue
        if out.endswith("\u00ad") or (_WORD_HYPHEN_END.search(out) and line[0].islower()):
            out = out[:-1] + line
        else:
            out = f"{out} {line}" if out else line
    return fix_split_numbers(out)


def fix_split_numbers(text: str) -> str:
    text = _SPLIT_NUMBER_AFTER_CURRENCY.sub(r"\1\2", text)
    return _SPLIT_NUMBER_BEFORE_CURRENCY.sub(r"\1\2", text)


# A ligature glyph (fi, fl, ff…) that the PDF's text layer follows with a space:
# "confi ance", "bénéfi cie", "fi délité". Not before a short function word ("défi de").
_LIGATURE_SPLIT = re.compile(
    r"(?<![^\W\d_])(?=\w*(?:fi|fl|ff|ffi|ffl) )(\w*(?:fi|fl|ff|ffi|ffl)) "
    r"(?!(?:de|du|des|la|le|les|et|à|a|en|un|une|pour|par|sur|ou|au|aux|ne|se|ce|il|on|y)\b)([a-zàâçéèêëîïôûùœ]+)"
)
# Superscript ordinals set apart from their number: "3 e mois", "1 er degré", "2 nd".
_SPLIT_ORDINAL = re.compile(r"\b(\d{1,3}) (er|re|ère|e|ème|nd|nde)(?=\s)")


def repair_line_text(text: str) -> str:
    """Line-break repairs on the text of one item, already joined by Docling."""
    text = _SOFT_HYPHEN_BREAK.sub("", clean_cell_text(text))
    text = _LIGATURE_SPLIT.sub(r"\1\2", text)
    text = _SPLIT_ORDINAL.sub(r"\1\2", text)
    return fix_split_numbers(text)


def _merge_split_words(doc: DoclingDocument) -> None:
    """Join a paragraph ending in 'assu-' with the next one starting in lowercase."""
    items = [item for item, _ in doc.iterate_items() if type(item) is TextItem and item.label == DocItemLabel.TEXT]
    to_delete = []
    prev: TextItem | None = None
    for item in items:
        if (
            prev is not None
            and prev.parent == item.parent
            and _WORD_HYPHEN_END.search(prev.text)
            and item.text[:1].islower()
        ):
            prev.text = prev.text[:-1] + item.text
            prev.orig = prev.orig[:-1] + item.orig
            prev.prov.extend(item.prov)
            to_delete.append(item)
            continue
        prev = item
    if to_delete:
        doc.delete_items(node_items=to_delete)


def _repeated_margins_to_furniture(doc: DoclingDocument) -> None:
    """Running headers/footers the layout missed: same text in a page margin on 2+ pages."""
    repeats: dict[tuple[DocItemLabel, str], list[TextItem]] = {}
    for item in doc.texts:
        if type(item) is not TextItem or item.content_layer != ContentLayer.BODY or not item.prov:
            continue
        prov = item.prov[0]
        page = doc.pages.get(prov.page_no)
        if page is None:
            continue
        height = page.size.height
        box = prov.bbox.to_top_left_origin(height)
        if box.b <= MARGIN_BAND * height:
            label = DocItemLabel.PAGE_HEADER
        elif box.t >= (1 - MARGIN_BAND) * height:
            label = DocItemLabel.PAGE_FOOTER
        else:
            continue
        # Page numbers differ from page to page.
        repeats.setdefault((label, re.sub(r"\d+", "#", item.text.strip().lower())), []).append(item)
    for (label, _), items in repeats.items():
        if len({item.prov[0].page_no for item in items}) >= 2:
            for item in items:
                item.label = label
                item.content_layer = ContentLayer.FURNITURE


def repair_text(doc: DoclingDocument) -> DoclingDocument:
    """Fix line-break artefacts in the text of every item, in place; returns ``doc``.

    - soft hyphens and control characters left by the PDF parser are removed;
    - numbers cut at a line break after their separator are rejoined next to a
      currency or unit ("$5, 000" -> "$5,000", "1 234, 56 €" -> "1 234,56 €");
    - a paragraph ending in a word hyphen is joined with the next paragraph when
      that one starts in lowercase;
    - formulas that no formula model decoded keep their PDF text;
    - text repeated in the top or bottom margin of several pages becomes page
      header/footer furniture (running titles the layout stage missed).
    """
    for item in doc.texts:
        if item.label == DocItemLabel.FORMULA and not item.text:
            item.text = clean_cell_text(item.orig)
            continue
        item.text = repair_line_text(item.text)
    for table in doc.tables:
        for cell in table.data.table_cells:
            cell.text = repair_line_text(cell.text)
    _merge_split_words(doc)
    _repeated_margins_to_furniture(doc)
    return doc


def heading_rank(text: str) -> tuple[int, int] | None:
    """Rank of a heading's numbering: legal keywords first, then I. / 1. / 1.1 / A."""
    if _CITED_ARTICLE.match(text):
        return None
    for rank, pattern in _LEGAL_KEYWORDS:
        if pattern.match(text):
            return rank, 0
    if _SECTION_SIGN.match(text):
        return 5, 0
    if _ROMAN_HEADING.match(text):
        return 7, 0
    m = _DOTTED_HEADING.match(text)
    if m:
        return 8, m.group(1).count(".")
    if _LETTER_HEADING.match(text):
        return 9, 0
    return None


def _page(item) -> int:
    return item.prov[0].page_no if item.prov else 0


def assign_heading_levels(doc: DoclingDocument) -> DoclingDocument:
    """Set ``SectionHeaderItem.level`` from numbering, in place; returns ``doc``.

    Docling's heading-hierarchy step knows PART/TITLE/CHAPTER/ARTICLE in English
    and puts Section and Article on one level. This ranks the French and English
    legal keywords (LIVRE/PART > TITRE/TITLE/ANNEX > CHAPITRE/CHAPTER > Section
    > Sous-section/Subsection > Paragraphe > Article), then I. > 1. > 1.1 > A.,
    compressed to the ranks present. Unnumbered headings on the first page with a heading,
    before the first numbered one (the document title), are level 1 and push the numbered
    ones down a level; any other unnumbered heading is a leaf (it heads what follows it up
    to the next heading; numbered headings never hang from it — a preface's "Plafond
    d'intervention" box title must not head the whole policy).
    Documents with no numbered heading keep the levels Docling gave.
    """
    headings = [item for item, _ in doc.iterate_items() if isinstance(item, SectionHeaderItem)]
    ranks = [heading_rank(h.text.strip()) for h in headings]
    present = sorted({r for r in ranks if r is not None})
    if not present:
        return doc
    title_page = _page(headings[0])
    # Unnumbered headings of the title page before the first numbered one head the tree.
    offset = 1 if ranks[0] is None else 0
    level_of = {rank: i + 1 + offset for i, rank in enumerate(present)}
    numbered_seen = False
    for heading, rank in zip(headings, ranks):
        if rank is not None:
            heading.level, numbered_seen = level_of[rank], True
        elif numbered_seen or _page(heading) != title_page:
            # Inside the numbered tree an unnumbered heading ("Franchise", a bold line of a
            # box) heads only what follows it up to the next heading: numbered headings
            # hang from numbered ones, never from it.
            heading.level = LEAF_LEVEL
        else:
            heading.level = 1
    return doc


__all__ = [
    "assign_heading_levels",
    "clean_cell_text",
    "heading_rank",
    "join_lines",
    "repair_text",
]
