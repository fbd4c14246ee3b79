"""Boxes of PDF text on a generated PDF converted by the real pipeline: two columns, a ruled table
and a sentence broken across a page; each box checked against the text pypdfium2 reads under it,
and quotes located, checked and drawn (answering/highlight.py)."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
import pytest

from rag_assets.answering.highlight import check, locate, render
from rag_assets.index.page_boxes import comparable, page_space_box
from rag_assets.ingest.boxes import PdfText
from rag_assets.ingest.chunking import ParentChunker
from rag_assets.ingest.sections import build_parents
from rag_assets.parsing.convert import convert_and_save, load_document

pytestmark = pytest.mark.slow  # a real Docling conversion (half a minute here)

LEFT = [
    "La garantie dégât des eaux couvre les",
    "dommages causés par les fuites et les",
    "ruptures de canalisations intérieures.",
    "Elle s'applique aux biens mobiliers et",
    "immobiliers du logement assuré.",
]
RIGHT = [
    "Le vol est garanti après effraction",
    "dûment constatée par les autorités.",
    "Les bijoux ne sont couverts que s'ils",
    "sont rangés dans un coffre-fort scellé",
    "au mur ou au sol du logement.",
]
TABLE = [("Événement", "Zone", "Franchise"), ("Inondation", "Zone A", "5 000 €"), ("Tempête", "Zone B", "1 500 €")]
BEFORE_BREAK = [
    "Le sociétaire doit déclarer le sinistre dans les cinq jours ouvrés qui suivent",
    "la date à laquelle il en a eu connaissance, par lettre recommandée adressée",
]
AFTER_BREAK = [
    "au siège de la société ou par tout autre moyen prévu au contrat. Passé ce",
    "délai, l'indemnité peut être réduite du préjudice subi par l'assureur.",
]
MIDDLE = 300  # points: the gutter between the two columns


def _write_lines(pdf, x: float, y: float, lines: list[str]) -> None:
    for line in lines:
        pdf.set_xy(x, y)
        pdf.cell(220 if len(line) < 45 else 480, 13, line)
        y += 13


def make_pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF(format="A4", unit="pt")
    pdf.core_fonts_encoding = "windows-1252"
    pdf.set_auto_page_break(False)
    pdf.add_page()
    headings = ((60, "Article 1 - Garanties"), (220, "Article 2 - Franchises"), (700, "Article 3 - Déclaration"))
    for y, heading in headings:
        pdf.set_font("Helvetica", style="B", size=14)
        pdf.set_xy(60, y)
        pdf.cell(480, 18, heading)
    pdf.set_font("Helvetica", size=10)
    _write_lines(pdf, 60, 100, LEFT)
    _write_lines(pdf, 320, 100, RIGHT)
    y = 260
    for number, row in enumerate(TABLE):
        pdf.set_font("Helvetica", style="B" if number == 0 else "", size=10)
        x = 60
        for width, text in zip((200, 140, 140), row):
            pdf.set_xy(x, y)
            pdf.cell(width, 20, text, border=1)
            x += width
        y += 20
    pdf.set_font("Helvetica", size=10)
    _write_lines(pdf, 60, 780, BEFORE_BREAK)  # the sentence runs on at the top of page 2
    pdf.add_page()
    pdf.set_font("Helvetica", size=10)
    _write_lines(pdf, 60, 60, AFTER_BREAK)
    pdf.output(str(path))


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    folder = tmp_path_factory.mktemp("boxes")
    path = folder / "garanties.pdf"
    make_pdf(path)
    convert_and_save(path, path.name, folder / "docling", {"document_id": "garanties"})
    document = load_document(folder / "docling")
    with PdfText(path, document) as layout:
        parents = build_parents(document, "garanties", lambda text: len(text.split()), layout=layout)
    return path, parents


def _letters(text: str) -> str:
    return "".join(k for _, k in comparable(text) if k not in "|")


def _text_under(pdf_path: Path, page_no: int, box) -> str:
    pdf = pdfium.PdfDocument(str(pdf_path))
    page = pdf[page_no - 1]
    text = page.get_textpage().get_text_bounded(*page_space_box(page, (box[0] - 1, box[1] - 1, box[2] + 1, box[3] + 1)))
    pdf.close()
    return text


def _parent(parents, words: str):
    return next(p for p in parents if words in p.text)


def test_every_box_holds_the_text_it_stands_for(converted):
    path, parents = converted
    boxed = [p for p in parents if p.boxes]
    assert boxed and all(p.page_sizes for p in boxed)
    for parent in boxed:
        for start, end, page, *box in parent.boxes:
            written = parent.text[start:end]
            assert _letters(written) in _letters(_text_under(path, page, box)), (written, box)
        assert parent.page_sizes["1"] == [595.3, 841.9]  # A4 in points; boxes have a top-left origin


def test_each_column_line_is_boxed_in_its_own_column(converted):
    _, parents = converted
    parent = _parent(parents, "Le vol est garanti")
    right = parent.text.index("Le vol est garanti")
    left_lines = [b for b in parent.boxes if b[1] <= right]
    right_lines = [b for b in parent.boxes if b[0] >= right]
    assert len(left_lines) == len(LEFT) and len(right_lines) == len(RIGHT)
    assert all(b[5] < MIDDLE for b in left_lines) and all(b[3] > MIDDLE for b in right_lines)
    # a sentence of the right column over two lines: its two lines, nothing of the left column
    quote = "Les bijoux ne sont couverts que s'ils sont rangés dans un coffre-fort scellé au mur"
    pages = locate(parent.to_row(), quote)
    assert [p["page"] for p in pages] == [1] and len(pages[0]["boxes"]) == 3
    assert all(box[0] > MIDDLE for box in pages[0]["boxes"])


def test_a_table_row_is_highlighted_cell_by_cell(converted):
    path, parents = converted
    parent = _parent(parents, "| Inondation |")
    quote = "| Inondation | Zone A | 5 000 € |"
    pages = locate(parent.to_row(), quote)
    assert len(pages) == 1 and len(pages[0]["boxes"]) == 3
    assert [_text_under(path, 1, box).strip() for box in pages[0]["boxes"]] == ["Inondation", "Zone A", "5 000 €"]
    assert check(path, pages, quote)["ok"]


def test_a_sentence_broken_across_a_page_is_highlighted_on_both_pages(converted, tmp_path):
    path, parents = converted
    parent = _parent(parents, "Le sociétaire doit déclarer")
    quote = (
        "Le sociétaire doit déclarer le sinistre dans les cinq jours ouvrés qui suivent la date à laquelle il en "
        "a eu connaissance, par lettre recommandée adressée au siège de la société ou par tout autre moyen "
        "prévu au contrat."
    )
    pages = locate(parent.to_row(), quote)
    assert [p["page"] for p in pages] == [1, 2] and [len(p["boxes"]) for p in pages] == [2, 1]
    result = check(path, pages, quote)
    assert result["ok"] and result["boxes"] == 3 and result["quote_lines"] == 3
    image = render(path, pages, tmp_path / "evidence.png")
    from PIL import Image

    with Image.open(image) as drawn:  # both pages, one under the other, at 2 pixels per point
        assert drawn.size == (round(595.3 * 2), 2 * round(841.9 * 2))


def test_a_quote_the_boxes_do_not_hold_fails_the_check(converted):
    path, parents = converted
    parent = _parent(parents, "Le vol est garanti")
    pages = locate(parent.to_row(), "Le vol est garanti après effraction")
    assert check(path, pages, "Le vol est garanti après effraction")["ok"]
    assert not check(path, pages, "Les bijoux ne sont couverts")["contains"]
    # every line of the passage for a one-line quote: more than twice its lines
    wide = [{**pages[0], "boxes": [b[3:] for b in parent.boxes if b[0] >= parent.text.index("Le vol")]}]
    assert not check(path, wide, "Le vol est garanti après effraction")["ok"]


def test_children_keep_the_boxes_of_their_own_text(converted):
    _, parents = converted
    parent = _parent(parents, "Le vol est garanti")
    children = ParentChunker(lambda text: len(text.split()), max_tokens=30).chunk(parent)
    assert len(children) > 1
    for child in children:
        assert child.boxes and all(0 <= s < e <= len(child.text) for s, e, *_ in child.boxes)
        assert {tuple(b[2:]) for b in child.boxes} <= {tuple(b[2:]) for b in parent.boxes}
