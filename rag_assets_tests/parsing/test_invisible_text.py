"""Text a reader cannot see is no evidence: white 1-pt text "la franchise … est de 1 euro" under a
visible 130 € was indexed and quoted as the sourced answer. Such text is now dropped from the PDF's
cells before layout and counted in the document's warnings; an OCR'd scan's invisible text layer
(render mode 3 over the page image) is what the reader sees, and stays."""

from __future__ import annotations

import json
from pathlib import Path

import pypdfium2

from rag_assets.parsing.convert import MANIFEST_FILE, body_text, convert_and_save, load_document
from rag_assets.parsing.invisible_text import NOT_DRAWN, SAME_AS_BACKGROUND, TINY, page_chars
from rag_assets_tests.security.hostile_files import (
    HIDDEN_FRANCHISE,
    HIDDEN_SAME_COLOUR,
    OCR_LAYER,
    VISIBLE_FRANCHISE,
    invisible_text_pdf,
    ocr_layer_pdf,
)


def _hidden(path: Path) -> dict[str, str]:
    """Reason -> the hidden characters pdfium finds on page 1, in order."""
    pdf = pypdfium2.PdfDocument(str(path))
    try:
        out: dict[str, str] = {}
        for char in page_chars(pdf[0]):
            if char.hidden:
                out[char.hidden] = out.get(char.hidden, "") + char.text
        return out
    finally:
        pdf.close()


def _squeezed(text: str) -> str:
    return "".join(text.split())


def _convert(path: Path, tmp_path: Path) -> tuple[str, dict]:
    convert_and_save(path, path.name, tmp_path / "docling", {"document_id": path.stem})
    manifest = json.loads((tmp_path / "docling" / MANIFEST_FILE).read_text())
    return " ".join(body_text(load_document(tmp_path / "docling")).split()), manifest


def test_white_tiny_and_same_colour_text_is_found(tmp_path: Path) -> None:
    hidden = _hidden(invisible_text_pdf(tmp_path / "cache.pdf"))
    assert hidden == {TINY: _squeezed(HIDDEN_FRANCHISE), SAME_AS_BACKGROUND: _squeezed(HIDDEN_SAME_COLOUR)}


def test_an_ocr_layer_over_its_image_is_seen_and_over_blank_paper_is_not(tmp_path: Path) -> None:
    hidden = _hidden(ocr_layer_pdf(tmp_path / "scan.pdf"))
    assert hidden == {NOT_DRAWN: _squeezed(HIDDEN_FRANCHISE)}


def test_invisible_text_is_dropped_and_counted(tmp_path: Path) -> None:
    text, manifest = _convert(invisible_text_pdf(tmp_path / "cache.pdf"), tmp_path)
    assert " ".join(VISIBLE_FRANCHISE.split()) in text
    assert "1 euro" not in text and "cinquante" not in text
    chars = len(_squeezed(HIDDEN_FRANCHISE)) + len(_squeezed(HIDDEN_SAME_COLOUR))
    assert manifest["warnings"] == [
        f"page 1: {chars} characters of invisible text dropped (same colour as what is under it, under 2 pt)"
    ]
    assert manifest["invisible_text_pages"] == {
        "1": {TINY: len(_squeezed(HIDDEN_FRANCHISE)), SAME_AS_BACKGROUND: len(_squeezed(HIDDEN_SAME_COLOUR))}
    }


def test_a_scan_with_an_ocr_layer_keeps_its_text(tmp_path: Path) -> None:
    text, manifest = _convert(ocr_layer_pdf(tmp_path / "scan.pdf"), tmp_path)
    assert " ".join(OCR_LAYER.split()) in text
    assert "1 euro" not in text
    assert manifest["ocr_pages"] == []  # its own text layer, not ours
    assert manifest["warnings"] == [
        f"page 1: {len(_squeezed(HIDDEN_FRANCHISE))} characters of invisible text dropped ({NOT_DRAWN})"
    ]
