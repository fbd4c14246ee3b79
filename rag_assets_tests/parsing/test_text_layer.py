"""Text layers that are not text: shifted ToUnicode maps, scans, garbage; real conversions.

Fixtures are built here: fpdf2 writes the PDFs, pikepdf breaks their ToUnicode
maps, pypdfium2 renders pages to images for the scans.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rag_assets.errors import DocumentError
from rag_assets.parsing.convert import MANIFEST_FILE, body_text, convert_and_save
from rag_assets.parsing.pdf_ocr import TextLayerOcrOptions, tesseract_status
from rag_assets.parsing.text_layer import assess_page, assess_text, shift_text, unshift

FRENCH = [
    "Le présent contrat a pour objet de garantir l'assuré contre les conséquences financières d'un litige. "
    "Vous êtes poursuivi devant une juridiction pénale : nous prenons en charge les frais de votre défense.",
    "Les garanties sont acquises pour les litiges dont le fait générateur est postérieur à la date de prise "
    "d'effet du contrat. La déclaration doit être faite dans un délai de trente jours.",
]
ENGLISH = (
    "The insurer shall pay the claim within thirty days of the agreement, and the policyholder must report "
    "any loss to the company as soon as it is known. The cover does not apply to damage caused on purpose."
)
BOLD = (
    "Sont exclus de la garantie les litiges qui relèvent de votre vie professionnelle et ceux dont vous "
    "aviez connaissance avant la souscription du contrat."
)
# A ToUnicode CMap mapping every one-byte code to the code point one above it.
SHIFTED_CMAP = b"""/CIDInit /ProcSet findresource begin
12 dict begin
begincmap
/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def
/CMapName /Shifted def
/CMapType 2 def
1 begincodespacerange
<00> <FF>
endcodespacerange
1 beginbfrange
<20> <FE> <0021>
endbfrange
endcmap
CMapName currentdict /CMap defineresource pop
end
end
"""
PAGE = (420, 595)  # A5 in points: small pages keep OCR fast


def _fpdf():
    from fpdf import FPDF

    pdf = FPDF(format=PAGE, unit="pt")
    pdf.set_auto_page_break(False)
    return pdf


def _text_pdf(path: Path, paragraphs: list[str]) -> None:
    pdf = _fpdf()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    for paragraph in paragraphs:
        pdf.multi_cell(0, 14, paragraph, align="L")
        pdf.ln(8)
    pdf.output(str(path))


def _shift_fonts(path: Path, out: Path, base_fonts: set[str] | None = None) -> None:
    """Give the fonts (all, or those with these base names) a ToUnicode map off by +1."""
    import pikepdf

    with pikepdf.open(path) as pdf:
        for page in pdf.pages:
            for font in page.Resources.Font.values():
                if base_fonts is None or str(font.BaseFont).lstrip("/") in base_fonts:
                    font.ToUnicode = pdf.make_stream(SHIFTED_CMAP)
        pdf.save(out)


def _private_use_pdf(path: Path, paragraphs: list[str]) -> None:
    """Text in an embedded font whose ToUnicode map sends every glyph to a private-use code point.

    The glyphs still draw right (the font is embedded), so OCR can read the page.
    """
    import re

    import matplotlib
    import pikepdf

    ttf = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / "DejaVuSans.ttf"
    pdf = _fpdf()
    pdf.add_page()
    pdf.add_font("DejaVu", fname=str(ttf))
    pdf.set_font("DejaVu", size=11)
    for paragraph in paragraphs:
        pdf.multi_cell(0, 14, paragraph, align="L")
        pdf.ln(8)
    pdf.output(str(path.with_suffix(".orig.pdf")))
    with pikepdf.open(path.with_suffix(".orig.pdf")) as doc:
        for font in doc.pages[0].Resources.Font.values():
            cmap = font.ToUnicode.read_bytes().decode()
            cmap = re.sub(r"^(<[0-9A-F]{4}>) <00(?!20|00)([0-9A-F]{2})>$", r"\1 <E0\2>", cmap, flags=re.M)
            font.ToUnicode = doc.make_stream(cmap.encode())
        doc.save(path)


def _raw_text(path: Path) -> list[str]:
    import pypdfium2

    pdf = pypdfium2.PdfDocument(str(path))
    try:
        return [pdf[i].get_textpage().get_text_range() for i in range(len(pdf))]
    finally:
        pdf.close()


def _page_image(path: Path, out: Path) -> None:
    """Render page 1 to a grayscale PNG at 200 dpi (what a scanner would give)."""
    import pypdfium2

    pdf = pypdfium2.PdfDocument(str(path))
    try:
        pdf[0].render(scale=200 / 72).to_pil().convert("L").save(out)
    finally:
        pdf.close()


def _require_ocr() -> None:
    _, unavailable = tesseract_status()
    if unavailable is not None:
        pytest.skip(f"OCR unavailable ({unavailable}); install tesseract-ocr tesseract-ocr-fra tesseract-ocr-eng")


def _convert(path: Path, tmp_path: Path) -> tuple[str, dict]:
    result = convert_and_save(path, path.name, tmp_path / f"{path.stem}-docling", {"document_id": path.stem})
    manifest = json.loads((tmp_path / f"{path.stem}-docling" / MANIFEST_FILE).read_text())
    assert manifest["warnings"] == result.warnings
    return " ".join(body_text(result.document).split()), manifest


# ---------------------------------------------------------------- real conversions


def test_shifted_font_is_repaired(tmp_path: Path) -> None:
    _text_pdf(tmp_path / "plain.pdf", FRENCH)
    _shift_fonts(tmp_path / "plain.pdf", tmp_path / "decale.pdf")
    [raw] = _raw_text(tmp_path / "decale.pdf")
    assert "Wpvt!ëuft!qpvstvjwj" in raw  # "Vous êtes poursuivi", each code point one too high
    assert str(assess_text(raw)) == "shifted(+1)"

    text, manifest = _convert(tmp_path / "decale.pdf", tmp_path)
    assert "Vous êtes poursuivi devant une juridiction pénale" in text
    assert "La déclaration doit être faite dans un délai de trente jours." in text
    assert "qpvs" not in text
    assert manifest["repaired_pages"] == {"1": 1}
    assert manifest["ocr_pages"] == [] and manifest["unreadable_pages"] == []
    assert manifest["warnings"] == ["page 1: text layer shifted by +1 code point (broken ToUnicode map), repaired"]


def test_only_the_broken_font_is_repaired(tmp_path: Path) -> None:
    pdf = _fpdf()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 14, FRENCH[1], align="L")
    pdf.ln(8)
    pdf.set_font("Helvetica", style="B", size=11)
    pdf.multi_cell(0, 14, BOLD, align="L")
    pdf.ln(8)
    # One line mixing both fonts: repaired word by word.
    pdf.set_font("Helvetica", size=11)
    pdf.write(14, "Voir aussi ")
    pdf.set_font("Helvetica", style="B", size=11)
    pdf.write(14, "les exclusions")
    pdf.set_font("Helvetica", size=11)
    pdf.write(14, " page 4 (article 12).")
    pdf.output(str(tmp_path / "mixte.pdf"))
    _shift_fonts(tmp_path / "mixte.pdf", tmp_path / "gras-decale.pdf", base_fonts={"Helvetica-Bold"})

    text, manifest = _convert(tmp_path / "gras-decale.pdf", tmp_path)
    assert FRENCH[1] in text  # the regular font is untouched
    assert BOLD in text
    assert "Voir aussi les exclusions page 4 (article 12)." in text
    assert manifest["repaired_pages"] == {"1": 1}
    assert manifest["text_layer_pages"]["1"]["shifts"] == {"/Helvetica-Bold": 1}


@pytest.mark.ocr
def test_private_use_text_layer_is_ocrd(tmp_path: Path) -> None:
    _require_ocr()
    _private_use_pdf(tmp_path / "prive.pdf", FRENCH)
    assert "private-use" in assess_text(_raw_text(tmp_path / "prive.pdf")[0]).reason

    text, manifest = _convert(tmp_path / "prive.pdf", tmp_path)
    assert "Vous êtes poursuivi" in text and "juridiction pénale" in text
    assert manifest["ocr_pages"] == [1]
    assert manifest["warnings"][0].startswith("page 1: garbled text layer (")


@pytest.mark.ocr
def test_scanned_pdf_is_ocrd(tmp_path: Path) -> None:
    _require_ocr()
    from PIL import Image

    _text_pdf(tmp_path / "plain.pdf", FRENCH)
    _page_image(tmp_path / "plain.pdf", tmp_path / "page.png")
    Image.open(tmp_path / "page.png").save(tmp_path / "scan.pdf", "PDF", resolution=200)
    assert _raw_text(tmp_path / "scan.pdf") == [""]

    text, manifest = _convert(tmp_path / "scan.pdf", tmp_path)
    for words in ("Vous êtes poursuivi", "juridiction pénale", "trente jours"):
        assert words in text
    assert manifest["ocr_pages"] == [1]
    assert manifest["warnings"] == ["page 1: scanned, OCR'd with Tesseract (fra+eng)"]
    assert manifest["pipeline"]["pdf"]["ocr"]["languages"] == ["fra", "eng"]


@pytest.mark.ocr
def test_stamped_scan_is_ocrd(tmp_path: Path) -> None:
    """A scan whose only text layer is a stamped page number is still a scan."""
    _require_ocr()
    _text_pdf(tmp_path / "plain.pdf", FRENCH)
    _page_image(tmp_path / "plain.pdf", tmp_path / "page.png")
    pdf = _fpdf()
    pdf.add_page()
    pdf.image(str(tmp_path / "page.png"), x=0, y=0, w=PAGE[0], h=PAGE[1])
    pdf.set_font("Helvetica", size=8)
    pdf.set_xy(PAGE[0] - 80, PAGE[1] - 30)
    pdf.cell(60, 10, "Page 1/1")
    pdf.output(str(tmp_path / "tampon.pdf"))

    text, manifest = _convert(tmp_path / "tampon.pdf", tmp_path)
    assert "juridiction pénale" in text
    assert manifest["ocr_pages"] == [1]
    assert manifest["text_layer_pages"]["1"]["reason"] == "scanned (a few words of text over a full-page picture)"


def _mixed_pdf(tmp_path: Path) -> Path:
    """Page 1 has a text layer, page 2 is a scan of another page."""
    _text_pdf(tmp_path / "plain.pdf", FRENCH)
    _page_image(tmp_path / "plain.pdf", tmp_path / "page.png")
    pdf = _fpdf()
    pdf.add_page()
    pdf.set_font("Helvetica", size=11)
    pdf.multi_cell(0, 14, ENGLISH, align="L")
    pdf.add_page()
    pdf.image(str(tmp_path / "page.png"), x=0, y=0, w=PAGE[0], h=PAGE[1])
    pdf.output(str(tmp_path / "mixed.pdf"))
    return tmp_path / "mixed.pdf"


def test_without_tesseract_the_scanned_page_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _mixed_pdf(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tesseract-here"))
    assert tesseract_status()[1] == "tesseract not found"

    text, manifest = _convert(path, tmp_path)
    assert ENGLISH in text
    assert "poursuivi" not in text
    assert manifest["unreadable_pages"] == [2] and manifest["ocr_pages"] == []
    assert manifest["text_layer_pages"]["2"]["ocr_unavailable"] == "tesseract not found"
    assert manifest["warnings"] == [
        "page 2: no readable text and OCR unavailable (tesseract not found: install tesseract-ocr "
        "tesseract-ocr-fra tesseract-ocr-eng); kept without it"
    ]
    assert manifest["pipeline"]["pdf"]["ocr"]["available"] is False


def test_a_scan_without_tesseract_is_refused_by_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    _text_pdf(tmp_path / "plain.pdf", FRENCH)
    _page_image(tmp_path / "plain.pdf", tmp_path / "page.png")
    Image.open(tmp_path / "page.png").save(tmp_path / "scan.pdf", "PDF", resolution=200)
    monkeypatch.setenv("PATH", str(tmp_path / "no-tesseract-here"))
    with pytest.raises(DocumentError) as error:
        _convert(tmp_path / "scan.pdf", tmp_path)
    assert "scan.pdf" in str(error.value) and "OCR unavailable (tesseract not found" in str(error.value)


def test_missing_language_makes_ocr_unavailable() -> None:
    _, unavailable = tesseract_status(TextLayerOcrOptions(lang=["fra", "xyz_not_a_language"]))
    assert unavailable is not None
    assert unavailable in ("tesseract not found", "tesseract has no language data for xyz_not_a_language")


# ---------------------------------------------------------------- verdicts on short strings


@pytest.mark.parametrize("shift", [-3, -2, -1, 1, 2, 3])
def test_shift_is_found_in_both_directions(shift: int) -> None:
    for text in (FRENCH[0], ENGLISH):
        broken = shift_text(text, shift)
        verdict = assess_text(broken)
        assert (verdict.kind, verdict.shift) == ("shifted", shift)
        assert unshift(broken, verdict.shift) == text


def test_uppercased_shifted_text_is_found() -> None:
    # As seen in a real insurer's PDF: "VOUS ÊTES POURSUIVI" extracted as "WPVT ËUFT QPVSTVJWJ".
    assert str(assess_text(shift_text(FRENCH[0], 1).upper())) == "shifted(+1)"


def test_normal_french_and_english_are_untouched() -> None:
    for text in (*FRENCH, ENGLISH, BOLD):
        assert assess_text(text).kind == "ok" and assess_text(text).reason == ""


def test_short_and_tabular_text_is_not_judged() -> None:
    assert str(assess_text("CONDITIONS GÉNÉRALES")) == "ok (too short to judge)"
    assert assess_text("Garantie Plafond Franchise Incendie 100 000 € 300 € Vol 20 000 € 500 €").kind == "ok"
    assert assess_text("31").kind == "ok"


def test_empty_text() -> None:
    assert assess_text("").kind == "empty"
    assert assess_text(" \n\t ").kind == "empty"


def test_private_use_code_points_are_garbled() -> None:
    private = "".join(c if c == " " else chr(0xE000 + ord(c) % 0x100) for c in FRENCH[0])
    verdict = assess_text(private)
    assert verdict.kind == "garbled" and "private-use" in verdict.reason
    assert assess_text("GLYPH<1a>GLYPH<2b>GLYPH<3c> " * 10).kind == "garbled"


def test_words_run_together_are_garbled() -> None:
    verdict = assess_text(FRENCH[0].replace(" ", ""))
    assert verdict.kind == "garbled" and "run together" in verdict.reason


def test_page_with_one_shifted_font() -> None:
    page = assess_page({"/Regular": FRENCH[1], "/Bold": shift_text(BOLD, 2), "/Numbers": "12"})
    assert page.verdict.kind == "shifted" and page.font_shifts == {"/Bold": 2}
    # A font too short to judge is repaired when the same font was found shifted on another page.
    later = assess_page({"/Regular": FRENCH[0], "/Bold": shift_text("Article 12", 2)}, known_shifts={"/Bold": 2})
    assert later.font_shifts == {"/Bold": 2}
    # Shifted text no font explains (too short each) makes the page untrustworthy, not "repaired".
    pieces = {f"/F{i}": shift_text(w, 1) for i, w in enumerate(FRENCH[0].split(" "))}
    assert assess_page(pieces).verdict.kind == "garbled"
