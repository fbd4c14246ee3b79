"""Real conversions through Docling's standard PDF pipeline with our layout and table stages."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from docling.datamodel.base_models import InputFormat
from docling.document_converter import DocumentConverter
from docling_core.types.doc import DoclingDocument
from docling_core.types.doc.document import ContentLayer, SectionHeaderItem

from rag_assets.parsing.pdf_pipeline import (
    accelerator_options,
    pdf_format_option,
    pdf_pipeline_description,
    repair_text,
)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SOLVENCY_PDF = (
    PROJECT_ROOT.parent / "shared" / "corpora" / "eu-regulation-pdf" / "solvency2_directive_2009-138-EC_EN.pdf"
)

# Lines are placed one by one so the PDF has the exact line breaks under test.
PAGE_1_LINES = [
    "Le présent contrat a pour objet de garantir l'assuré contre les dommages",
    "causés à son habitation principale. Les garanties de l'assu-",
    "rance habitation couvrent le bâtiment et son contenu dans la limite",
    "d'un plafond de $5,",
    "000 par sinistre et d'une franchise annuelle de 5",
    "000 € par an.",
]
PAGE_2_LINES = [
    "Ne sont pas couverts les dommages résultant d'une faute intentionnelle",
    "de l'assuré ni ceux causés par un défaut d'entretien manifeste du",
    "logement assuré.",
]
TABLE_ROWS = [
    ("Garantie", "Plafond", "Franchise"),
    ("Incendie", "100 000 €", "300 €"),
    ("Dégât des eaux", "50 000 €", "150 €"),
    ("Vol", "20 000 €", "500 €"),
]


def _make_sample_pdf(path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF(format="A4", unit="pt")
    pdf.core_fonts_encoding = "windows-1252"  # core fonts with the euro sign
    pdf.set_auto_page_break(False)
    pages = [
        ("Article 1 - Objet du contrat", PAGE_1_LINES, True),
        ("Article 3 - Exclusions", PAGE_2_LINES, False),
    ]
    for number, (heading, lines, with_table) in enumerate(pages, start=1):
        pdf.add_page()
        pdf.set_font("Helvetica", size=9)
        pdf.set_xy(450, 30)
        pdf.cell(100, 12, f"Page {number} sur {len(pages)}", align="R")
        y = 90
        if number == 1:
            pdf.set_font("Helvetica", style="B", size=16)
            pdf.set_xy(60, y)
            pdf.cell(480, 20, "Conditions générales d'assurance habitation")
            y += 50
        pdf.set_font("Helvetica", style="B", size=12)
        pdf.set_xy(60, y)
        pdf.cell(480, 16, heading)
        y += 30
        pdf.set_font("Helvetica", size=11)
        for line in lines:
            pdf.set_xy(60, y)
            pdf.cell(480, 14, line)
            y += 14
        if with_table:
            y += 30
            pdf.set_font("Helvetica", style="B", size=12)
            pdf.set_xy(60, y)
            pdf.cell(480, 16, "Article 2 - Tableau des garanties")
            y += 30
            widths = (200, 140, 140)
            for row_index, row in enumerate(TABLE_ROWS):
                pdf.set_font("Helvetica", style="B" if row_index == 0 else "", size=11)
                x = 60
                for width, text in zip(widths, row):
                    pdf.set_xy(x, y)
                    pdf.cell(width, 22, text, border=1)
                    x += width
                y += 22
            y += 30
            pdf.set_font("Helvetica", size=11)
            pdf.set_xy(60, y)
            pdf.cell(480, 14, "Les montants du tableau sont exprimés toutes taxes comprises.")
    pdf.output(str(path))


@pytest.fixture(scope="module")
def converter() -> DocumentConverter:
    return DocumentConverter(format_options={InputFormat.PDF: pdf_format_option()})


@pytest.fixture(scope="module")
def sample_doc(converter: DocumentConverter, tmp_path_factory: pytest.TempPathFactory) -> DoclingDocument:
    path = tmp_path_factory.mktemp("pdf") / "contrat.pdf"
    _make_sample_pdf(path)
    return repair_text(converter.convert(path).document)


def test_ruled_table_has_real_cells(sample_doc: DoclingDocument) -> None:
    assert len(sample_doc.tables) == 1
    table = sample_doc.tables[0]
    assert (table.data.num_rows, table.data.num_cols) == (4, 3)
    grid = [[cell.text for cell in row] for row in table.data.grid]
    assert grid == [list(row) for row in TABLE_ROWS]
    assert all(cell.column_header for cell in table.data.grid[0])
    markdown = sample_doc.export_to_markdown()
    assert "| Dégât des eaux | 50 000 € | 150 €" in markdown.replace("  ", " ").replace("  ", " ")


def test_page_headers_are_furniture(sample_doc: DoclingDocument) -> None:
    markdown = sample_doc.export_to_markdown()
    assert "sur 2" not in markdown
    furniture = [item.text for item in sample_doc.texts if item.content_layer == ContentLayer.FURNITURE]
    assert "Page 1 sur 2" in furniture and "Page 2 sur 2" in furniture


def test_line_breaks_are_repaired(sample_doc: DoclingDocument) -> None:
    markdown = sample_doc.export_to_markdown()
    assert "l'assurance habitation" in markdown
    assert "assu-" not in markdown
    assert "$5,000 par sinistre" in markdown
    assert "franchise annuelle de 5 000 € par an" in markdown
    # Paragraph lines are grouped into one item, not one item per line.
    assert any(
        item.text.startswith("Le présent contrat") and item.text.endswith("par an.") for item in sample_doc.texts
    )


def test_headings_have_levels(sample_doc: DoclingDocument) -> None:
    headings = {item.text: item.level for item in sample_doc.texts if isinstance(item, SectionHeaderItem)}
    assert {"Article 1 - Objet du contrat", "Article 2 - Tableau des garanties", "Article 3 - Exclusions"} <= set(
        headings
    )
    assert headings["Conditions générales d'assurance habitation"] < headings["Article 1 - Objet du contrat"]


def test_description_names_the_engines() -> None:
    description = pdf_pipeline_description()
    assert description["layout"]["engine"] == "rag_assets_onnx_cdla"
    assert description["layout"]["model_file"] == "layout_cdla.onnx"
    assert len(description["layout"]["model_sha256"]) == 64
    assert description["table_structure"]["engine"] == "rag_assets_ruling_lines"


def test_docling_models_use_no_more_threads_than_cores_unless_told(monkeypatch) -> None:
    import os

    monkeypatch.delenv("DOCLING_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert accelerator_options().num_threads == min(4, cores)  # Docling's 4, capped by the cores
    monkeypatch.setenv("DOCLING_NUM_THREADS", "3")
    assert accelerator_options().num_threads == 3  # what the reader sets is kept


def test_our_stages_reach_docling_through_its_plugin_entry_point() -> None:
    from importlib.metadata import entry_points

    from docling.models.factories import get_layout_factory, get_ocr_factory, get_table_structure_factory

    from rag_assets.parsing.layout.docling_stage import OnnxLayoutOptions
    from rag_assets.parsing.pdf_ocr import TextLayerOcrOptions
    from rag_assets.parsing.pdf_tables import RulingTableOptions

    assert [e.value for e in entry_points(group="docling") if e.name == "rag_assets"] == [
        "rag_assets.parsing.docling_plugin"
    ]
    assert pdf_format_option().pipeline_options.allow_external_plugins
    for get_factory, options in (
        (get_layout_factory, OnnxLayoutOptions),
        (get_table_structure_factory, RulingTableOptions),
        (get_ocr_factory, TextLayerOcrOptions),
    ):
        meta = get_factory(allow_external_plugins=True).registered_meta[options]
        assert (meta.plugin_name, meta.module) == ("rag_assets", "rag_assets.parsing.docling_plugin")
    # only where external plugins are allowed (Docling's table factory without them is left unbuilt here:
    # its built-in plugin cannot import TableFormer v2 without torchvision, see pdf_pipeline._table_factory)
    assert OnnxLayoutOptions not in get_layout_factory(allow_external_plugins=False).classes


@pytest.mark.slow  # a real PDF
@pytest.mark.real_pdf
def test_solvency_ii_excerpt(converter: DocumentConverter, tmp_path: Path) -> None:
    if not SOLVENCY_PDF.exists():
        pytest.skip(f"shared corpus not available: {SOLVENCY_PDF} (expected ../shared beside the repository)")
    import pypdfium2 as pdfium

    source = pdfium.PdfDocument(SOLVENCY_PDF)
    excerpt = pdfium.PdfDocument.new()
    excerpt.import_pages(source, list(range(30)))
    path = tmp_path / "solvency2_first30.pdf"
    excerpt.save(path)
    excerpt.close()
    source.close()

    start = time.perf_counter()
    doc = repair_text(converter.convert(path).document)
    seconds_per_page = (time.perf_counter() - start) / 30

    assert len(doc.pages) == 30
    assert len(doc.tables) >= 1
    levels = {item.level for item in doc.texts if isinstance(item, SectionHeaderItem)}
    assert len(levels) >= 2
    headings = [(item.level, item.text) for item in doc.texts if isinstance(item, SectionHeaderItem)]
    title = next(level for level, text in headings if text.startswith("TITLE I"))
    chapter = next(level for level, text in headings if text.startswith("CHAPTER I "))
    section = next(level for level, text in headings if text.startswith("Section 1"))
    article = next(level for level, text in headings if text.startswith("Article 1 "))
    assert title < chapter < section < article
    # The table of contents comes out as a table with its article ranges.
    cells = {cell.text for table in doc.tables for cell in table.data.table_cells}
    assert "Articles 1 and 2" in cells
    body = {item.text for item in doc.texts if item.content_layer == ContentLayer.BODY}
    assert "Official Journal of the European Union" not in body
    print(f"Solvency II excerpt: {seconds_per_page:.2f} s/page, {len(doc.tables)} tables, levels {sorted(levels)}")
