"""A document's identity read from the document itself: its title, insurer, product, line of
insurance (branch), kind of document and edition.

Unseen insurers' PDFs name themselves in places a generic rule misses: the PDF metadata
title is often the insurer's form code ("Mod. 5751 - 01/2003", "DG Auto Acheel - STD", the
cover's "Référence : DG_Auto_ACHEEL_STD_Mars_2022" with spaces), the first headings a running
header ("Votre contrat") or a contract number, and a cover set as one picture has no heading
at all. What a reader sees instead is the cover's **title block**: the lines set in the
largest type on page 1. Its size is read from each text item's box: an item of ``n``
characters filling a ``w`` × ``h`` box is set in type of about ``sqrt(w·h / (0.55·n))``
points whatever its number of lines (a character is about 0.55 em wide, a line 1.2 em high),
and never larger than the box's height.

- **title**: the PDF metadata title when it reads like one (two words or more, no form code,
  not the cover's reference code with other separators, its words printed on the first
  pages); else the title block, with the kind of document when the block does not say it
  ("Allianz Prévoyance Personne Clé – Notice d'information"); a line repeated on
  `RUNNING_PAGES` pages or more (a running header) or shaped like a form code is never part
  of it. Else the title recorded at conversion (`fallback_title`).
- **insurer**: the company the legal notice names: "l'assureur est …", "Assureur : …",
  "… désigne l'assureur : …", "assuré par …", "Compagnie : …" (an IPID), then the company
  whose legal notice ("… SA au capital de …", "entreprise régie par le Code des assurances")
  names it, on its line or the line before. A broker's or an assistance company's notice
  (courtage, ORIAS, SAS) names a **distributor**, not the insurer. Else the metadata author
  when the text writes that name (a person who saved the file does not).
- **product**: an IPID's "Produit : …", else the title block without the kind of document.
- **document_type**: conditions générales, dispositions générales, notice d'information,
  document d'information (IPID), tableau de garanties, conditions particulières — from the
  cover (title block, headers), else the metadata title, else the first pages.
- **branch**: the line the title or product names (`text/branches.py`, and "responsabilité
  civile" or "assistance" when the title names them), else the line whose words the most
  text items write.
- **edition**: a date or edition printed on the cover or in its reference ("Mars 2022",
  "01/2003", "V07/24", "2023-01").

A sidecar (``*.meta.yaml``) naming a field wins over what is read here (`with_sidecar`).
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import dataclass

from docling_core.types.doc import DocItemLabel, DoclingDocument, TextItem
from docling_core.types.doc.document import ContentLayer
from pydantic import BaseModel, ConfigDict

from rag_assets.parsing.structure import RUNNING_HEADER_PAGES
from rag_assets.text.analysis import analyze
from rag_assets.text.branches import branch_terms, branches_of_text
from rag_assets.text.folding import fold_alphanumeric

RUNNING_PAGES = RUNNING_HEADER_PAGES  # a line printed on this many pages ...
RUNNING_SHARE = 0.3  # ... and on this share of them is a running header, never a title (a product's name
# printed again on two section covers of a long notice is still its name)
BLOCK_SHARE = 0.6  # lines in type at least this share of the largest form the title block
BLOCK_GAP = 1.5  # ... set together: no further apart than this many times the largest type
TITLE_LARGER = 1.5  # ... and a title block is set larger than this many times the document's body type
TITLE_POINTS = 12.0  # ... and than this: a table's column headings on a first page are no title
SAME_TYPE = 0.85  # a line in type this close to the previous one's, right under it, continues its phrase
TITLE_CHARS = 160
LINE_CHARS = 120  # a cover line longer than this is a paragraph, not part of a title
PARAGRAPH_CHARS = 200  # the body type is read from items this long
EM_WIDTH = 0.55  # a character's mean width, in em
FIRST_PAGES = 3  # where a metadata title's words and the kind of document are looked for
TYPE_AT = 40  # a cover line naming the kind of document names it within its first characters
BRANCH_SHARE = 0.05  # of the text items writing a branch's words, for the text alone to name the branch

# The kinds of document, most specific first ("document d'information sur le produit d'assurance"
# before "notice d'information"): the name shown, the ways a cover writes it.
DOCUMENT_TYPES = (
    ("Document d'information (IPID)", r"document d['’]information (?:sur|normalis[ée])|(?-i:\bIPID\b)"),
    ("Tableau de garanties", r"tableau (?:des|de) garanties|bar[èe]me de garanties|prestations garanties|^garanties\b"),
    ("Conditions particulières", r"conditions particuli[èe]res"),
    ("Dispositions générales", r"dispositions g[ée]n[ée]rales|(?-i:\bDG\b)"),
    ("Conditions générales", r"conditions g[ée]n[ée]rales|(?-i:\bCG\b)"),
    ("Notice d'information", r"notice(?: d['’]information)?\b"),
)
# Lines named only in a title: every policy writes "responsabilité civile" in its text.
TITLE_BRANCHES = {"responsabilité civile": r"responsabilit[ée] civile|(?-i:\bRC\b)", "assistance": r"\bassistance\b"}
# When a title names several lines, the narrower one is the product's ("santé animale": animaux).
BRANCH_ORDER = (
    "animaux",
    "emprunteur",
    "chasse",
    "navigation",
    "protection juridique",
    "auto",
    "habitation",
    "voyage",
    "santé",
    "prévoyance",
    "épargne",
    "responsabilité civile",
    "assistance",
)

_CODE_TOKEN = re.compile(r"^(?=.*\d)(?=.*[a-z])[\w/.-]{4,}$", re.IGNORECASE)  # 17601FR, M3202AHA, DPP13-225
_CODE_START = re.compile(r"^(?:mod(?:[eè]le)?\.?|r[ée]f(?:[ée]rence)?\.?|visa|n°|form)(?:\s|:|$)", re.IGNORECASE)
_NUMBER = re.compile(r"\s*\bN°\s*[\w/-]*\d[\w/-]*", re.IGNORECASE)  # a contract's number: no part of a name
_PAGE = re.compile(r"^(?:page\s*)?\d{1,3}(?:\s*(?:/|sur)\s*\d{1,3})?$", re.IGNORECASE)
_BAD_METADATA = re.compile(
    r"^(untitled|undefined|sans titre|document\d*|microsoft word.*|présentation powerpoint|.*\.(docx?|pdf|indd|qxd))$",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[.;:!?]\s+\S.*\s\S+\s\S+")  # a full stop then more words: prose, not a title line
_MONTHS = "janvier|février|fevrier|mars|avril|mai|juin|juillet|août|aout|septembre|octobre|novembre|décembre|decembre"
_EDITION = re.compile(
    rf"\b(?:[ée]dition|version|mise à jour)\s*:?\s*((?:{_MONTHS})\s+\d{{4}}|\d{{1,2}}[/.-]\d{{4}}|\d{{4}})"
    rf"|(?<![^\W\d_])((?:{_MONTHS})[\s_-]+\d{{4}})\b"
    r"|(?<![\d/])(\d{2}[/.-](?:19|20)\d{2})(?![\d/])"
    r"|\b(V\d{2}/\d{2})\b"
    r"|(?<![\d/-])((?:19|20)\d{2}-\d{2})(?![\d/-])",
    re.IGNORECASE,
)
# A company's name as a notice writes it: capitalised words, "de", "et" between them.
_NAME = r"((?:[A-Z][\w&'’.-]*|[A-Z]{2,})(?:[ \t]+(?:[A-Z][\w&'’.-]*|de|du|des|et|d['’]\w+|&|\d+))*)"
# Where the text says which company insures: keywords in any case, the name capitalised.
_DESIGNATED = [
    re.compile(pattern)
    for pattern in (
        rf"(?i:\bl['’]assureur\b[^.:]{{0,50}}?\b(?:est|sont|désigne|désignent)\s+(?:également\s+)?(?:la\s+|le\s+|l['’])?){_NAME}",
        rf"(?i:\b(?:l['’])?assureur\s*(?:/\s*nous\s*)?:\s*(?:désigne\s+(?:également\s+)?)?(?:la\s+|le\s+)?){_NAME}",
        rf"(?i:\bassurée?s?\s+par\s+(?:la\s+société\s+)?){_NAME}",
        rf"\bCompagnie\s*:\s*{_NAME}",
        rf"(?i:\bavec\s+l['’]assureur\s+){_NAME}",
        rf"(?i:\bauprès\s+d(?:e\s+|['’])){_NAME}(?i:[^.]{{0,80}}«\s*l['’]assureur)",
    )
]
# A glossary's entry for the insurer: its whole definition is the name.
_DEFINED = re.compile(r"(?i:\bassureur\s*:\s*désigne\s+(?:également\s+)?(?:la\s+|le\s+)?)([A-Z][^.;,()]{2,50})[.;]")
_LEGAL = re.compile(
    r"r[ée]gie?s? par le code des assurances|\bSA\b[^.]{0,20}au capital|soci[ée]t[ée] anonyme|"
    r"soci[ée]t[ée] d['’]assurance mutuelle|mutuelle d['’]assurance|\bau capital (?:social )?de\b",
    re.IGNORECASE,
)
_NOT_INSURER = re.compile(
    r"courtage|\bORIAS\b|actions simplifi[ée]e|\bSAS\b|distribu[ée]|interm[ée]diaire",
    re.IGNORECASE,
)
_LEGAL_FORM = re.compile(r"[\s,–-]+(?:S\.?A\.?S?\.?|SAS|SASU|SA à [\w ]+)$")
_NOT_NAMES = frozenset(
    fold_alphanumeric(w)
    for w in "Entreprise Société Siège Le La Les Sa Code Assurances Assureur Nous Vous Votre Contrat Compagnie".split()
)


class DocumentIdentity(BaseModel):
    """What names a document, each field read from the document (or given by its sidecar)."""

    model_config = ConfigDict(frozen=True)

    title: str | None = None
    insurer: str | None = None
    distributor: str | None = None
    product: str | None = None
    branch: str | None = None
    document_type: str | None = None
    edition: str | None = None
    # field -> where it was read: "metadata", "title block", "legal notice", "text", "sidecar"…
    sources: dict[str, str] = {}

    def with_sidecar(self, given: dict) -> DocumentIdentity:
        """The sidecar's fields (``title``, ``insurer``, ``product``, ``branch``,
        ``document_type``, ``edition``) over those read from the document."""
        fields = {k: str(v) for k, v in given.items() if k in _OVERRIDABLE and v}
        if not fields:
            return self
        return self.model_copy(update={**fields, "sources": {**self.sources, **dict.fromkeys(fields, "sidecar")}})


_OVERRIDABLE = ("title", "insurer", "product", "branch", "document_type", "edition")


@dataclass(frozen=True)
class _Line:
    text: str
    top: float  # from the page's top, in points
    bottom: float
    size: float  # estimated type size, in points
    layer: ContentLayer
    label: DocItemLabel


def read_identity(
    document: DoclingDocument,
    metadata: dict[str, str] | None = None,
    fallback_title: str | None = None,
) -> DocumentIdentity:
    """The identity of a converted document; ``metadata``: the PDF's (``Title``, ``Author``…);
    ``fallback_title``: the title recorded at conversion, for a document with no cover to read."""
    metadata = metadata or {}
    running = _running_lines(document)
    cover = _page_lines(document, 1)
    first = " \n".join(" ".join(t.text.split()) for t in document.texts if t.prov and t.prov[0].page_no <= FIRST_PAGES)
    sources: dict[str, str] = {}
    block_text = _join(_title_block(cover, running, _body_size(document)))
    labels = [line.text for line in cover if len(line.text) <= LINE_CHARS and not _SENTENCE.search(line.text)]

    insurer, distributor, source = _insurer(document, metadata.get("Author"))
    if insurer:
        sources["insurer"] = source

    document_type = _document_type(block_text) or _cover_type(cover)
    if document_type:
        sources["document_type"] = "cover"
    elif document_type := _document_type(metadata.get("Title") or ""):
        sources["document_type"] = "metadata"
    elif document_type := _document_type(_labels(document, FIRST_PAGES)):
        sources["document_type"] = "headings"

    metadata_title = _metadata_title(metadata.get("Title"), first)
    product = _labelled_product(cover)
    if product:
        sources["product"] = "cover"
    elif metadata_title and (product := _without_type(metadata_title, insurer)):
        sources["product"] = "metadata"
    elif block_text and (product := _without_type(block_text)):
        sources["product"] = "title block"
    elif product := _reference_product(cover):
        sources["product"] = "reference"

    title = metadata_title
    if title:
        sources["title"] = "metadata"
    elif block_text or product:
        # a block that only says what is insured ("Assurance Prévoyance") gives way to the product
        # the cover names ("Produit : Allianz Prévoyance Travailleur Non Salarié")
        named = _without_type(block_text) if block_text else None
        labelled = sources.get("product") in ("cover", "reference")
        if not named or (labelled and product and set(_content(named)) <= set(_content(product))):
            title = product
        else:
            title = block_text
        if document_type and not _document_type(title or ""):
            title = f"{title} – {document_type}"
        sources["title"] = "title block" if title and block_text and title.startswith(block_text) else "product"
    elif (recorded := _metadata_title(fallback_title, first)) and fold_alphanumeric(recorded) not in running:
        title, sources["title"] = recorded, "conversion"  # no cover to read (Word, HTML, Markdown)

    branch = _named_branch(" ".join(filter(None, [title, product])))
    if branch:
        sources["branch"] = "title"
    elif branch := _frequent_branch(document):
        sources["branch"] = "text"

    references = [line.text for line in cover if re.search(r"\bR[ée]f(?:[ée]rence)?\b", line.text, re.IGNORECASE)]
    edition = _edition(" \n".join([*labels, *references, metadata.get("Title") or ""]))
    if edition:
        sources["edition"] = "cover"
    return DocumentIdentity(
        title=title[:TITLE_CHARS] if title else None,
        insurer=insurer,
        distributor=distributor,
        product=product,
        branch=branch,
        document_type=document_type,
        edition=edition,
        sources=sources,
    )


# -- the cover ----------------------------------------------------------------------------------


def _page_lines(document: DoclingDocument, page_no: int) -> list[_Line]:
    """Text items printed on a page (a picture's text too: a cover set as one picture), top first."""
    lines = []
    for item in document.texts:
        if not isinstance(item, TextItem) or not item.prov or item.prov[0].page_no != page_no:
            continue
        text = " ".join(item.text.split())
        if not text:
            continue
        page = document.pages.get(page_no)
        box = item.prov[0].bbox
        height = page.size.height if page else 0.0
        box = box.to_top_left_origin(page_height=height) if height else box
        h, w = abs(box.b - box.t), abs(box.r - box.l)
        size = min(h, math.sqrt(h * w / (EM_WIDTH * 1.2 * len(text)))) if h and w else 0.0
        lines.append(_Line(text, min(box.t, box.b), max(box.t, box.b), size, item.content_layer, item.label))
    return sorted(lines, key=lambda line: line.top)


def _running_lines(document: DoclingDocument) -> set[str]:
    """Lines printed on many pages: running headers and footers."""
    pages: dict[str, set[int]] = {}
    for item in document.texts:
        if item.prov and (folded := fold_alphanumeric(item.text)):
            pages.setdefault(folded, set()).add(item.prov[0].page_no)
    least = max(RUNNING_PAGES, RUNNING_SHARE * len(document.pages))
    return {text for text, on in pages.items() if len(on) >= least}


def _labels(document: DoclingDocument, pages: int) -> str:
    """The short lines of the first pages (headings, labels): not a sentence's "… aux conditions particulières"."""
    return " \n".join(
        text
        for item in document.texts
        if item.prov
        and item.prov[0].page_no <= pages
        and len(text := " ".join(item.text.split())) <= LINE_CHARS
        and not _SENTENCE.search(text)
        and not text.endswith(".")
    )


def _body_size(document: DoclingDocument) -> float:
    """The type the document's paragraphs are set in."""
    sizes = [
        line.size
        for page in document.pages
        for line in _page_lines(document, page)
        if len(line.text) >= PARAGRAPH_CHARS and line.layer == ContentLayer.BODY
    ]
    return statistics.median(sizes) if sizes else 0.0


def _title_block(cover: list[_Line], running: set[str], body: float) -> list[_Line]:
    """The cover's lines in the largest type, set together, top to bottom, when they stand out
    of the document's body type."""
    candidates = [
        line
        for line in cover
        if line.layer == ContentLayer.BODY
        and len(line.text) <= LINE_CHARS
        and sum(c.isalpha() for c in line.text) >= 3
        and not _is_code(_NUMBER.sub("", line.text))
        and not _PAGE.match(line.text)
        and not _SENTENCE.search(line.text)
        and fold_alphanumeric(line.text) not in running
    ]
    if not candidates:
        return []
    largest = max(line.size for line in candidates)
    if largest < max(TITLE_LARGER * body, TITLE_POINTS):
        return []
    large = [line for line in candidates if line.size >= BLOCK_SHARE * largest]
    clusters: list[list[_Line]] = []
    for line in large:  # top to bottom; a slogan at the foot of the cover is no part of the title
        if clusters and line.top - clusters[-1][-1].bottom <= BLOCK_GAP * largest:
            clusters[-1].append(line)
        else:
            clusters.append([line])
    # the largest set together, unless it only says what kind of document it is ("Dispositions
    # Générales" above "Assurance Automobile")
    clusters.sort(key=lambda cluster: -max(line.size for line in cluster))
    return next((c for c in clusters if _without_type(_join(c))), clusters[0])


def _join(block: list[_Line]) -> str:
    """The block's lines as one title: a line right under the previous one continues its
    phrase (after a space), others follow after a dash."""
    text = ""
    previous: _Line | None = None
    for line in block:
        piece = _NUMBER.sub("", line.text).strip(" -–")
        if not piece:
            continue
        if previous is None:
            text = piece
        elif (
            line.top - previous.bottom < 0.8 * previous.size
            and min(line.size, previous.size) >= SAME_TYPE * max(line.size, previous.size)
            and not previous.text.endswith((".", ":"))
        ):
            text += " " + piece
        else:
            text += " – " + piece
        previous = line
    return text


def _is_code(text: str) -> bool:
    """A form code or reference, not a title: "Mod. 5751 - 01/2003", "17601FR - 2023-01 D",
    "CGRCCH_MIC_FX_202504", "Visa DPP13-225"."""
    text = " ".join(text.split())
    tokens = re.findall(r"[\w/.]+", text)
    if not tokens:
        return True
    if _CODE_START.match(text) or "_" in text or _CODE_TOKEN.match(tokens[0]) or tokens[0].isdigit():
        return True
    numbered = [t for t in tokens if any(c.isdigit() for c in t)]
    return len(numbered) >= len(tokens) / 2 or not any(sum(c.isalpha() for c in t) >= 3 for t in tokens)


def _metadata_title(title: str | None, first_pages: str) -> str | None:
    """The PDF's title when it reads like one and its words are printed on the first pages
    (a template's title, another product's, or a reference code written otherwise is not)."""
    if not title:
        return None
    title = " ".join(title.split())
    if len(title.split()) < 2 or _BAD_METADATA.match(title) or _is_code(title):
        return None
    folded = fold_alphanumeric(title).replace(" ", "")
    if any(folded in fold_alphanumeric(token).replace(" ", "") for token in re.findall(r"\S*_\S*", first_pages)):
        return None  # the cover's reference code ("DG_Auto_ACHEEL_STD_Mars_2022") with spaces
    words = set(analyze(title))
    printed = set(analyze(first_pages))
    return title if words and len(words & printed) >= len(words) / 2 else None


def _document_type(text: str) -> str | None:
    for name, pattern in DOCUMENT_TYPES:
        if re.search(pattern, text, re.IGNORECASE):
            return name
    return None


def _without_type(text: str, insurer: str | None = None) -> str | None:
    """A title without its kind of document, the insurer's name, nor what only says it is
    insurance ("Contrat d'assurance")."""
    cut = "\x00"
    for _, pattern in DOCUMENT_TYPES:
        text = re.sub(pattern + r"(?:\s+valant\s+notice\s+d['’]information)?", cut, text, flags=re.IGNORECASE)
    if insurer:
        text = re.sub(rf"(?<!\w){re.escape(insurer)}(?!\w)", cut, text, flags=re.IGNORECASE)
    parts = [p.strip(" -–,") for p in re.split(rf"{cut}|\s+–\s+", text)]
    kept = [p for p in parts if p and _content(p)]
    return " – ".join(kept) or None


_GENERIC = "assurance assurances contrat contrats police produit formule document"


def _content(text: str) -> list[str]:
    """A name's words, without those any insurance document's name writes."""
    generic = set(analyze(_GENERIC))
    return [t for t in analyze(text) if t not in generic and not t.isdigit()]


def _cover_type(cover: list[_Line]) -> str | None:
    """The kind of document a cover line starts with, the line in the largest type first
    ("Document d'information sur le produit d'assurance Compagnie : …", not a sentence's
    "… mentionnés aux conditions particulières")."""
    for line in sorted(cover, key=lambda line: -line.size):
        found = _document_type(line.text[:TYPE_AT])
        if found:
            return found
    return None


def _labelled_product(cover: list[_Line]) -> str | None:
    """An IPID's "Produit : Multirisque Habitation Locataire - contrat individuel"; quotes
    and a leading "Police", "Contrat" are no part of the name."""
    for line in cover:
        match = re.search(r"\bProduit\s*:\s*(.{3,80}?)(?=\s+-\s+|\s+\w+\s*:|$)", line.text)
        if match:
            name = re.sub(r"^(?:police|contrat)\s+", "", match.group(1).strip(), flags=re.IGNORECASE)
            return name.strip(' «»"“”') or None
    return None


def _reference_product(cover: list[_Line]) -> str | None:
    """The product a reference line names among its codes: "Réf. : OF - INDIV - Santé - Barème de
    garanties - API Santé Equilibre - SP23/FCR0100 - 03/2013" names "API Santé Equilibre"."""
    for line in cover:
        match = re.match(r"^.*?\bR[ée]f(?:[ée]rence)?\.?\s*:\s*(.+)$", line.text, re.IGNORECASE)
        if not match:
            continue
        parts = [p.strip() for p in re.split(r"\s+[-–]\s+", match.group(1))]
        names = [
            p
            for p in parts
            if not _is_code(p) and not _document_type(p) and len(p.split()) >= 2 and not _named_branch(p) == p.lower()
        ]
        if names:
            return max(names, key=len)
    return None


def _edition(text: str) -> str | None:
    match = _EDITION.search(text)
    if not match:
        return None
    value = next(g for g in match.groups() if g)
    return re.sub(r"[\s_-]+", " ", value) if not re.match(r"\d", value) else value


# -- the insurer ---------------------------------------------------------------------------------


def _clean_name(name: str) -> str | None:
    name = _LEGAL_FORM.sub("", " ".join(name.split())).strip(" ,.-–")
    name = re.split(r"\.\s", name)[0]  # "Allianz IARD. Entreprise régie…"
    first, _, other = name.partition(" et ")
    if other.split()[:1] == first.split()[:1]:
        name = first  # "Allianz Vie et Allianz IARD": two companies, the first named
    words = name.split()
    while words and (words[-1].islower() or words[-1].isdigit() or fold_alphanumeric(words[-1]) in _NOT_NAMES):
        words.pop()  # "Allianz Vie et" -> "Allianz Vie"; "Acheel Société" -> "Acheel"
    while words and fold_alphanumeric(words[0]) in _NOT_NAMES - {fold_alphanumeric("Société")}:
        words.pop(0)
    name = " ".join(words)
    name = name.strip(" ,.-–")
    return name if len(name) >= 3 and fold_alphanumeric(name) not in _NOT_NAMES else None


def _insurer(document: DoclingDocument, author: str | None) -> tuple[str | None, str | None, str]:
    """(insurer, distributor, where the insurer was read)."""
    texts = [" ".join(t.text.split()) for t in document.texts if t.text.strip()]
    designated: Counter[str] = Counter()
    noticed: Counter[str] = Counter()
    distributors: Counter[str] = Counter()
    spelled: dict[str, str] = {}

    def note(counter: Counter, raw: str) -> None:
        name = _clean_name(raw)
        if name:
            key = fold_alphanumeric(name)
            counter[key] += 1
            # the spelling in mixed case ("Mila", not "MILA SA") when the text has one
            if key not in spelled or (spelled[key].isupper() and not name.isupper()):
                spelled[key] = name

    for i, text in enumerate(texts):
        for match in _DEFINED.finditer(text):  # "ASSUREUR : désigne la Société suisse santé."
            key = fold_alphanumeric(match.group(1))
            designated[key] += 1
            spelled.setdefault(key, match.group(1).strip())
        for pattern in _DESIGNATED:
            for match in pattern.finditer(text):
                note(designated, match.group(1))
        if not _LEGAL.search(text):
            continue
        counter = distributors if _NOT_INSURER.search(text) else noticed
        head = re.match(rf"^{_NAME}\s*[-–,]?\s*(?i:soci[ée]t[ée]|SA\b|entreprise|mutuelle|au capital)", text)
        if head and _clean_name(head.group(1)):
            note(counter, head.group(1))
        elif i and len(texts[i - 1]) <= 80 and (above := re.match(rf"^{_NAME}(?:,|\s*$)", texts[i - 1])):
            note(counter, above.group(1))  # "Allianz Vie, pour les risques qu'elle couvre :" above it
    for counter, source in ((designated, "legal notice"), (noticed, "legal notice")):
        if counter:
            insurer = spelled[counter.most_common(1)[0][0]]
            break
    else:
        insurer, source = None, ""
        if author and _clean_name(author):
            written = sum(fold_alphanumeric(author) in fold_alphanumeric(t) for t in texts)
            if written >= 2:  # the person who saved the file is not written in the text
                insurer, source = author.strip(), "metadata"
    distributor = next(
        (spelled[k] for k, _ in distributors.most_common() if not insurer or k != fold_alphanumeric(insurer)),
        None,
    )
    return insurer, distributor, source


# -- the line of insurance -----------------------------------------------------------------------


def _named_branch(text: str) -> str | None:
    named = set(branches_of_text(text)) | {b for b, p in TITLE_BRANCHES.items() if re.search(p, text, re.IGNORECASE)}
    return next((b for b in BRANCH_ORDER if b in named), None)


def _frequent_branch(document: DoclingDocument) -> str | None:
    items = [set(analyze(t.text)) for t in document.texts if t.content_layer == ContentLayer.BODY and t.text.strip()]
    if not items:
        return None
    shares = {b: sum(bool(words & terms) for terms in items) / len(items) for b, words in branch_terms().items()}
    branch, share = max(shares.items(), key=lambda kv: kv[1])
    return branch if share >= BRANCH_SHARE else None
