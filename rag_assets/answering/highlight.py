"""The quoted words of an answer on their PDF page: located, drawn, checked.

An answer's paragraph quotes its source verbatim (``Paragraph.quote`` from ``quote_source_id``).
The quote is found in the parent's text (letters compared case-folded, spaces and punctuation
aside, accents kept; fragments around "…" each), its character offsets select the parent's
lines and table cells (ingest/boxes.py), and those boxes are the evidence: page, boxes and page
size, top-left origin, in PDF points. A DOCX, HTML or Markdown source has no page: its
citation keeps its section path and says there is no page image.

``render`` draws each page of the evidence with pypdfium2, the quoted lines highlighted and the
rest dimmed (pages one under the other when the quote runs across a page break). ``check``
reads back, with pypdfium2, the text printed inside the boxes: it must hold the quote's words,
and the boxes may cover at most twice the lines that the quote's words take.
"""

from __future__ import annotations

import re
from pathlib import Path

from rag_assets.index.page_boxes import comparable, page_space_box

PDF = "application/pdf"
_ELLIPSIS = re.compile(r"\s*(?:\[\s*(?:\.\.\.|…)\s*\]|\(\s*(?:\.\.\.|…)\s*\)|\.\.\.|…)\s*")
KINDS = {
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "DOCX",
    "text/html": "HTML",
    "text/markdown": "Markdown",
}
SCALE = 2.0  # pixels per point of the rendered page (144 dpi)
_PAD = 1.5  # points around a highlighted box, as drawn
DIM, HIGHLIGHT = (0, 0, 0, 110), (255, 214, 0, 90)  # RGBA over the page
OUTLINE = (230, 120, 0, 255)


def _keys(text: str) -> list[tuple[int, str]]:
    """(index, letter) of the letters and digits of ``text`` (and %, €, $), as compared."""
    return [(i, k) for i, k in comparable(text) if k.isalnum() or k in "%€$"]


def quote_spans(text: str, quote: str) -> list[tuple[int, int]]:
    """[start, end) in ``text`` of each fragment of ``quote``, in order; [] when one is missing."""
    keys = _keys(text)
    haystack = "".join(k for _, k in keys)
    spans, position = [], 0
    for fragment in _ELLIPSIS.split(quote or ""):
        needle = "".join(k for _, k in _keys(fragment))
        if not needle:
            continue
        found = haystack.find(needle, position)
        if found < 0:
            found = haystack.find(needle)
        if found < 0:
            return []
        spans.append((keys[found][0], keys[found + len(needle) - 1][0] + 1))
        position = found + len(needle)
    return spans


def locate(parent: dict, quote: str) -> list[dict]:
    """The pages of a parent (a row of parents.parquet) printing ``quote``:
    ``[{"page", "width", "height", "boxes": [[l, t, r, b], …]}]`` in reading order; [] when the
    parent has no boxes or does not hold the quote."""
    boxes = parent.get("boxes") or []
    spans = quote_spans(parent.get("text") or "", quote) if boxes else []
    pages: dict[int, list[list[float]]] = {}
    for start, end, page, *box in boxes:
        if any(start < e and end > s for s, e in spans) and box not in pages.setdefault(page, []):
            pages[page].append(box)
    sizes = parent.get("page_sizes") or {}
    return [
        {
            "page": page,
            "width": sizes.get(str(page), [None, None])[0],
            "height": sizes.get(str(page), [None, None])[1],
            "boxes": found,
        }
        for page, found in pages.items()
        if found
    ]


def source_file(kb, document_id: str) -> tuple[Path | None, str]:
    """(the stored source file, its media type) of a published document."""
    record = kb.document(document_id) or {}
    stored = record.get("stored_path")
    path = Path(stored) if stored else None
    if path is not None and not path.is_absolute():
        path = kb.store.root / path
    return path, record.get("media_type") or ""


def attach(answer, kb) -> None:
    """Set each quoting paragraph's ``evidence``: its quote's pages and boxes in a PDF source,
    or why there is no page image (another format, or the quote was not found printed)."""
    for paragraph in answer.paragraphs:
        entry = answer.source(paragraph.quote_source_id) if paragraph.quote and paragraph.quote_source_id else None
        if entry is None:
            continue
        path, media_type = source_file(kb, entry.document_id)
        evidence = {
            "source_id": entry.source_id,
            "document_id": entry.document_id,
            "quote": paragraph.quote,
            "section": " > ".join(entry.heading_path),
            "file": str(path) if path else None,
            "media_type": media_type,
            "pages": [],
        }
        if media_type != PDF:
            evidence["no_page_image"] = f"{KINDS.get(media_type, media_type or 'non-PDF')} source"
        else:
            evidence["pages"] = locate(kb.parent(entry.parent_id) or {}, paragraph.quote)
            if not evidence["pages"]:
                evidence["no_page_image"] = "quote not located on the page"
        paragraph.evidence = evidence


def render(pdf_path: Path, pages: list[dict], out_path: Path, scale: float = SCALE) -> Path:
    """A PNG of the evidence's pages (one under the other), quoted boxes highlighted, the rest dimmed."""
    import pypdfium2 as pdfium
    from PIL import Image, ImageDraw

    images = []
    pdf = pdfium.PdfDocument(str(pdf_path))
    try:
        for entry in pages:
            page = pdf[entry["page"] - 1]
            image = page.render(scale=scale).to_pil().convert("RGBA")
            page.close()
            shade = Image.new("RGBA", image.size, DIM)
            mask = ImageDraw.Draw(shade)
            rects = [[(v + d) * scale for v, d in zip(box, (-_PAD, -_PAD, _PAD, _PAD))] for box in entry["boxes"]]
            for rect in rects:
                mask.rectangle(rect, fill=HIGHLIGHT)
            image = Image.alpha_composite(image, shade)
            draw = ImageDraw.Draw(image)
            for rect in rects:
                draw.rectangle(rect, outline=OUTLINE, width=max(1, round(scale)))
            images.append(image.convert("RGB"))
    finally:
        pdf.close()
    width, height = max(i.width for i in images), sum(i.height for i in images)
    sheet = Image.new("RGB", (width, height), "white")
    y = 0
    for image in images:
        sheet.paste(image, (0, y))
        y += image.height
    out_path.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out_path)
    return out_path


def image_name(prefix: str, number: int, evidence: dict) -> str:
    pages = "-".join(str(p["page"]) for p in evidence["pages"])
    return f"{prefix}-{number}-{evidence['source_id']}-p{pages}.png"


def evidence_images(answer, folder: Path, prefix: str | None = None) -> list[dict]:
    """One PNG per quoting paragraph whose source is a PDF, written in ``folder``:
    ``[{"paragraph", "source_id", "path" | None, "note" | None}]`` (a note says why no image)."""
    out = []
    for number, paragraph in enumerate(answer.paragraphs, start=1):
        evidence = getattr(paragraph, "evidence", None)
        if not evidence:
            continue
        item = {
            "paragraph": number,
            "source_id": evidence["source_id"],
            "path": None,
            "note": evidence.get("no_page_image"),
        }
        if evidence["pages"] and evidence.get("file"):
            item["path"] = str(
                render(
                    Path(evidence["file"]),
                    evidence["pages"],
                    Path(folder) / image_name(prefix or answer.answer_id, number, evidence),
                )
            )
        out.append(item)
    return out


# ------------------------------------------------------------------------- measure


def checked_paragraphs(answer) -> list[dict]:
    """``check`` of each shown paragraph quoting a PDF source (a quote not located counts as failed):
    ``[{"source_id", "quote", "ok", "contains", "boxes", "quote_lines"}]``."""
    out = []
    for paragraph in answer.paragraphs:
        evidence = paragraph.evidence or {}
        if evidence.get("media_type") != PDF:
            continue
        result = {"contains": False, "boxes": 0, "quote_lines": 0, "ok": False}
        if evidence["pages"] and evidence.get("file"):
            result = check(Path(evidence["file"]), evidence["pages"], evidence["quote"])
        out.append({"source_id": evidence["source_id"], "quote": evidence["quote"], **result})
    return out


def _printed(text: str) -> str:
    """Text as compared by ``check``: its words (letters, digits, %, €, $) case-folded, with
    hyphenation at a line end undone and accents kept. Punctuation and bullets are no words:
    a list item's marker is written by the parents stage, not printed as such."""
    return "".join(k for _, k in _keys(re.sub(r"[-‐‑]\s*[\r\n]+\s*", "", text)))


def check(pdf_path: Path, pages: list[dict], quote: str) -> dict:
    """Does the text pypdfium2 reads inside the boxes hold the quote, and do the boxes cover at
    most twice the lines the quote takes? ``{"contains", "boxes", "quote_lines", "ok"}``."""
    import pypdfium2 as pdfium

    pieces: list[str] = []
    pdf = pdfium.PdfDocument(str(pdf_path))
    try:
        for entry in pages:
            page = pdf[entry["page"] - 1]
            textpage = page.get_textpage()
            for left, top, right, bottom in entry["boxes"]:
                # the box as it is: padded, it would take letters of the lines above and below
                x0, y0, x1, y1 = page_space_box(page, (left, top, right, bottom))
                pieces.append(_printed(textpage.get_text_bounded(x0, y0, x1, y1)))
            textpage.close()
            page.close()
    finally:
        pdf.close()
    joined = "".join(pieces)
    fragments = [_printed(f) for f in _ELLIPSIS.split(quote or "") if _printed(f)]
    contains = bool(fragments) and all(f in joined for f in fragments)
    # the boxes whose text the quote's words fall in: the lines the quote takes
    used: set[int] = set()
    ends = [sum(len(p) for p in pieces[: i + 1]) for i in range(len(pieces))]
    for fragment in fragments:
        found = joined.find(fragment)
        if found >= 0:
            first = next(i for i, end in enumerate(ends) if end > found)
            last = next(i for i, end in enumerate(ends) if end >= found + len(fragment))
            used.update(range(first, last + 1))
    quote_lines = max(1, len(used))
    return {
        "contains": contains,
        "boxes": len(pieces),
        "quote_lines": quote_lines,
        "ok": contains and len(pieces) <= 2 * quote_lines,
    }
