"""Golden-file tests of the PDF stages on a handful of hard pages (in the manner of Docling's own tests).

Two tiers. Generated pages, written by fpdf2 at test time (generated_pages.py and below), always
run: look-alikes of the hard layouts (a ruled grid, two columns, a contents page with dotted
leaders, a table continued on the next page) and of the broken text layers (a font whose ToUnicode
map is off by one, a scanned page). Real pages, one (two for a table continued across pages) cut
out of an insurer PDF of ../shared/corpora/fr-insurance-docs with pypdfium2, are marked
`real_pdf` and skip without ../shared. Each case is converted as the product converts a document:
`convert_with_report` (Docling with our layout, table and text-layer/OCR stages, then
`repair_text`), `apply_structure`, then `build_parents` with a word counter and a budget no page
reaches. The result is rendered as a page-by-page view (for each parent: its heading path, then
its blocks, tables as the product's Markdown) and compared with `golden/<case>.txt`; a difference
fails with the document, the page and a unified diff of the first differing lines.

Copyright: the insurers' pages must not be copied into the repository, so for a real page the
golden file holds, per rendered line, a fingerprint (kind, first four words, word count, short
sha1 of the whole line; heading paths in full; tables with their shape). Generated pages are ours:
their golden files hold the full text. See golden/README.md.

After an intended change to the PDF stages, rewrite the golden files and review the diff:

    RAG_ASSETS_UPDATE_GOLDEN=1 .venv/bin/python -m pytest rag_assets_tests/parsing/test_golden_pages.py
    git diff rag_assets_tests/parsing/golden/

A regenerated golden file accepts whatever the product now does, so each case also asserts a few
explicit expectations that no regeneration changes. Defects the product has today are asserted
too, as strict xfails: fixing one makes its test pass, which fails the run until the mark goes.

The scanned page skips without Tesseract and its fra/eng data. Rewriting the golden files is refused
in CI (support/paths.py, from conftest.py): there a rewritten file would pass whatever the product does.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rag_assets.ingest.sections import Block, Parent, build_parents
from rag_assets.parsing.convert import convert_with_report
from rag_assets.parsing.structure import apply_structure
from rag_assets_tests.parsing import generated_pages as generated
from rag_assets_tests.parsing.test_text_layer import FRENCH, _fpdf, _page_image, _require_ocr, _shift_fonts
from rag_assets_tests.support.paths import UPDATE_GOLDEN

pytestmark = pytest.mark.slow  # pages converted one by one (about a minute)

GOLDEN_DIR = Path(__file__).parent / "golden"
CORPUS = "corpora/fr-insurance-docs"
PARENT_BUDGET = 1_000_000  # tokens: a page never fills a parent, so parents follow headings only
DIFF_LINES = 40  # lines of unified diff shown in a failure


def count_words(text: str) -> int:
    return len(text.split())


# ------------------------------------------------------------------------------------- the cases


@dataclass(frozen=True)
class Case:
    key: str  # golden/<key>.txt
    source: str | None  # a file of the shared corpus; None: generated here
    pages: tuple[int, ...]  # page numbers in the source, from 1
    why: str
    pad_to: int = 0  # blank pages around the cut: it keeps its page numbers, the document has this many pages

    @property
    def label(self) -> str:
        return f"{self.source or f'generated {self.key} page'} p.{_pages_label(list(self.pages))}"


CASES = {
    case.key: case
    for case in [
        Case(
            "franchise_grid",
            "areas-marsh_location-saisonniere-notice_2024.pdf",
            (2,),
            "ruled 'tableau des garanties': franchise and plafond per guarantee, cells spanning rows",
        ),
        Case(
            "table_across_pages",
            "allianz-vie_prevoyance-tns-notice_2025.pdf",
            (10, 11),
            "the résiliation table starts at the foot of p.10 and goes on at the top of p.11 (header repeated); "
            "a second table follows on p.11",
        ),
        Case(
            "two_columns",
            "maif_navigation-plaisance-nautis_2021.pdf",
            (4,),
            "justified, hyphenated two-column body with boxed section titles (A, B) and numbered articles",
        ),
        Case(
            "table_of_contents",
            "maif_auto-moto-vam_2016.pdf",
            (6,),
            "'Sommaire' page: chapter titles in large type, entries with page numbers in a coloured column; "
            "padded with blank pages to p.30 (the last page it cites) so that its entries point at pages that exist",
            pad_to=30,
        ),
        Case(
            "ipid",
            "mila_mrh-locataire-ipid_2024.pdf",
            (1, 2),
            "IPID sheet (both pages): boxed two-column prose with check-mark and '!' lists, not a table; its title "
            "and p.2's 'Où suis-je couvert ?' sit where the layout model may call them page headers",
        ),
        Case(
            "rotated_table",
            "apicil_sante-tableau-garanties_nd.pdf",
            (2,),
            "landscape table stored with /Rotate 90: six 'Equilibre' levels, section rows, footnotes",
        ),
        Case(
            "shaded_table",
            "maif_auto-moto-vam_2016.pdf",
            (38,),
            "'véhicule de remplacement' grid on a shaded band, its few words cover 9 % of it: the layout model "
            "calls it a figure, whose lines no parent would index",
        ),
        Case(
            "text_boxes_on_picture",
            "maif_auto-moto-vam_2016.pdf",
            (4,),
            "the formulas summarised in boxes drawn over a picture background (73 lines of text)",
        ),
        Case(
            "borderless_table",
            "maif_habitation-raqvam_2011.pdf",
            (16,),
            "the formulas' comparative table: no cell borders, rules only under its section rows, column "
            "headers wider than the 'oui'/'non' under them",
        ),
        Case(
            "fee_table",
            "maif_navigation-plaisance-nautis_2021.pdf",
            (24,),
            "lawyers' fee ceilings by court: a rule under each group of rows only, two items and their two "
            "amounts under one rule, the amount set on the last line of a wrapped label",
        ),
        Case(
            "shifted_font",
            None,
            (1,),
            "generated: heading, French paragraphs and a ruled table in fonts whose ToUnicode maps each code to code+1",
        ),
        Case(
            "scanned",
            None,
            (1,),
            "generated: a text page with a heading rasterized at 200 dpi, rebuilt as an image-only PDF (OCR)",
        ),
        Case(
            "generated_grid_table",
            None,
            (1,),
            "generated: a ruled grid of guarantees (plafond, franchise), some cells on two lines, between two articles",
        ),
        Case(
            "generated_two_columns",
            None,
            (1,),
            "generated: a chapter heading across the page over two columns whose lines sit side by side",
        ),
        Case(
            "generated_contents",
            None,
            (1, 2, 3),
            "generated: a 'Sommaire' page of entries with dotted leaders and page numbers, then the pages it cites",
        ),
        Case(
            "generated_table_across_pages",
            None,
            (1, 2),
            "generated: a ruled table ending at the foot of p.1 and continued at the top of p.2, header repeated",
        ),
    ]
}
GENERATORS = {
    "generated_grid_table": generated.grid_table_pdf,
    "generated_two_columns": generated.two_columns_pdf,
    "generated_contents": generated.contents_pdf,
    "generated_table_across_pages": generated.table_across_pages_pdf,
}
REAL = [key for key, case in CASES.items() if case.source]
GENERATED = [
    pytest.param(key, marks=pytest.mark.ocr) if key == "scanned" else key
    for key, case in CASES.items()
    if not case.source
]

# The generated pages (ours, stored in full).
SHIFTED_HEADING = "Article 4 - Franchises et plafonds"
SHIFTED_TABLE = [
    ("Garantie", "Plafond", "Franchise"),
    ("Incendie", "100 000 euros", "300 euros"),
    ("Dégât des eaux", "50 000 euros", "150 euros"),
    ("Vol", "20 000 euros", "500 euros"),
]
SCANNED_HEADING = "Article 2 - Défense pénale"


def _generated_page(path: Path, heading: str, table: list[tuple[str, ...]] | None) -> None:
    pdf = _fpdf()
    pdf.add_page()
    pdf.set_y(85)  # below the band where a line reads as a running header
    pdf.set_font("Helvetica", style="B", size=14)
    pdf.multi_cell(0, 18, heading, align="L")
    pdf.ln(10)
    pdf.set_font("Helvetica", size=11)
    for paragraph in FRENCH:
        pdf.multi_cell(0, 14, paragraph, align="L")
        pdf.ln(8)
    if table:
        pdf.ln(10)
        widths = (130, 100, 100)
        for index, row in enumerate(table):
            pdf.set_font("Helvetica", style="B" if index == 0 else "", size=11)
            for width, text in zip(widths, row):
                pdf.cell(width, 22, text, border=1)
            pdf.ln(22)
    pdf.output(str(path))


def _make_pdf(case: Case, root: Path, shared: Path | None) -> Path:
    out = root / f"{case.key}.pdf"
    if case.key in GENERATORS:
        GENERATORS[case.key](out)
    elif case.key == "shifted_font":
        _generated_page(root / "shifted_font.plain.pdf", SHIFTED_HEADING, SHIFTED_TABLE)
        _shift_fonts(root / "shifted_font.plain.pdf", out)
    elif case.key == "scanned":
        from PIL import Image

        _generated_page(root / "scanned.plain.pdf", SCANNED_HEADING, None)
        _page_image(root / "scanned.plain.pdf", root / "scanned.png")
        Image.open(root / "scanned.png").save(out, "PDF", resolution=200)
    else:
        import pypdfium2

        assert shared is not None
        source = pypdfium2.PdfDocument(str(shared / CORPUS / case.source))
        cut = pypdfium2.PdfDocument.new()
        try:
            width, height = source[case.pages[0] - 1].get_size()
            for _ in range(case.pages[0] - 1 if case.pad_to else 0):
                cut.new_page(width, height)
            cut.import_pages(source, [p - 1 for p in case.pages])
            while len(cut) < case.pad_to:
                cut.new_page(width, height)
            cut.save(str(out))
        finally:
            cut.close()
            source.close()
    return out


# ------------------------------------------------------------------------- conversion and views


@dataclass
class Table:
    """A table block as indexed: its Markdown, split into header rows and data rows of cells."""

    block: Block
    caption: str | None
    header: list[list[str]]
    rows: list[list[str]]
    pages: list[int]  # source page numbers

    @property
    def columns(self) -> int:
        return len((self.header or self.rows or [[]])[0])

    def row_with(self, text: str) -> list[str]:
        found = [row for row in self.rows if any(text in cell for cell in row)]
        assert found, f"no row of the table holds {text!r}"
        return found[0]


@dataclass
class Converted:
    case: Case
    parents: list[Parent]
    structure: dict
    text_layer: dict
    view: list[str] = field(default_factory=list)

    def source_page(self, page: int) -> int:
        return page if self.case.pad_to else self.case.pages[page - 1]

    @property
    def headings(self) -> list[str]:
        return [h for p in self.parents for h in p.heading_path]

    @property
    def text(self) -> str:
        """All parents' text, in order, whitespace collapsed (tables included, as Markdown)."""
        return " ".join(" ".join(p.text.split()) for p in self.parents)

    def tables(self) -> list[Table]:
        out = []
        for parent in self.parents:
            for block in parent.blocks:
                if block.kind == "table":
                    caption, header, rows = _split_table(parent, block)
                    out.append(Table(block, caption, header, rows, [self.source_page(p) for p in block.pages]))
        return out

    def parent_with(self, text: str) -> Parent:
        """The parent with a block (paragraph, list item, table…) holding this text whole."""
        found = [p for p in self.parents for b in p.blocks if text in " ".join(p.text[b.start : b.end].split())]
        assert found, f"no block of any parent holds {text!r}"
        return found[0]

    def parent_of(self, table: Table) -> Parent:
        return next(p for p in self.parents if any(b is table.block for b in p.blocks))

    def before(self, *texts: str) -> bool:
        """Whether these texts appear in this order in the parents' text."""
        positions = [self.text.find(t) for t in texts]
        assert all(p >= 0 for p in positions), [t for t, p in zip(texts, positions) if p < 0]
        return positions == sorted(positions)


def _cells(line: str) -> list[str]:
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _split_table(parent: Parent, block: Block) -> tuple[str | None, list[list[str]], list[list[str]]]:
    text = parent.text[block.start : block.end]
    header_end = (block.header_end if block.header_end is not None else block.start) - block.start
    markdown_start = len(block.caption) + 2 if block.caption else 0
    header = [_cells(line) for line in text[markdown_start:header_end].split("\n") if line.strip()]
    header = [row for row in header if not all(set(c) <= {"-"} for c in row)]  # the |---| line
    rows = [_cells(line) for line in text[header_end:].split("\n") if line.strip()]
    return block.caption, header, rows


def _short_hash(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:8]


def _fingerprint(kind: str, line: str, cells: list[str] | None = None) -> str:
    """'text   | "first four words" … (42 words, 3f9a12c0)': which line, without its text."""
    if cells is None:
        words = line.split()
        shown, total = " ".join(words[:4]), len(words)
    else:  # table row: the first four words with the cell boundaries they cross
        taken, parts = 0, []
        for cell in cells:
            if taken >= 4:
                break
            words = cell.split()[: 4 - taken]
            taken += len(words)
            parts.append(" ".join(words))
        while parts and not parts[-1]:
            parts.pop()  # empty cells after the words shown: the shape line gives the columns
        shown, total = " | ".join(parts), sum(len(c.split()) for c in cells)
    more = " …" if total > 4 else ""
    return f'{kind:<7}| "{shown}"{more} ({total} word{"s" if total != 1 else ""}, {_short_hash(line)})'


def _line(kind: str, line: str, full: bool, cells: list[str] | None = None) -> str:
    return f"{kind:<7}| {line}" if full else _fingerprint(kind, line, cells)


def _pages_label(pages: list[int]) -> str:
    if not pages:
        return "-"
    if len(pages) == 1:
        return str(pages[0])
    return f"{pages[0]}–{pages[-1]}" if pages == list(range(pages[0], pages[-1] + 1)) else ", ".join(map(str, pages))


def render(converted: Converted) -> list[str]:
    """The page-by-page view: summary lines, then per parent its path and its blocks, with a
    '=== page N ===' line where the reading order enters another page (source page numbers)."""
    full = converted.case.source is None
    sp = converted.source_page
    structure, layer = converted.structure, converted.text_layer
    lines = [
        "structure | tables continued on pages: {}; contents entries: {} on pages {}; "
        "headings confirmed by contents: {}".format(
            [sp(p) for p in structure["tables_continued_on_pages"]],
            structure["toc_entries"],
            [sp(p) for p in structure["toc_pages"]],
            structure["headings_confirmed_by_toc"],
        ),
        "text layer | repaired pages: {}; OCR pages: {}; unreadable pages: {}".format(
            {sp(int(p)): shift for p, shift in layer["repaired_pages"].items()},
            [sp(p) for p in layer["ocr_pages"]],
            [sp(p) for p in layer["unreadable_pages"]],
        ),
    ]
    if not converted.parents:
        lines.append("(no parent: nothing on these pages is indexed)")
    page = None
    for parent in converted.parents:
        for index, block in enumerate(parent.blocks):
            if block.pages and block.pages[0] != page:
                page = block.pages[0]
                lines.append(f"=== page {sp(page)} ===")
            if index == 0:
                lines.append(f"parent {parent.ordinal + 1} · pages {_pages_label([sp(p) for p in parent.pages])}")
                lines.append(f"{'path':<7}| {' > '.join(parent.heading_path) or '(none)'}")
            if block.kind == "table":
                caption, header, rows = _split_table(parent, block)
                columns = len((header or rows or [[]])[0])
                lines.append(
                    f"{'table':<7}| {len(header) + len(rows)} rows × {columns} columns"
                    f" ({len(header)} header), pages {_pages_label([sp(p) for p in block.pages])}"
                )
                if caption:
                    lines.append(_line("caption", caption, full))
                for kind, table_rows in (("header", header), ("row", rows)):
                    for cells in table_rows:
                        row = "| " + " | ".join(cells) + " |"
                        lines.append(_line(kind, row, full, cells))
            else:
                text = parent.text[block.start : block.end]
                for text_line in text.split("\n"):
                    if text_line.strip():
                        lines.append(_line(block.kind, text_line, full))
    return lines


def golden_text(converted: Converted) -> str:
    case = converted.case
    how = (
        "Generated page (ours): full text."
        if case.source is None
        else "Real insurer page (copyright): per line its kind, first four words, word count and sha1 "
        "prefix; heading paths in full."
    )
    header = [
        f"# Golden view of {case.label} for rag_assets_tests/parsing/test_golden_pages.py.",
        f"# Why this page: {case.why}.",
        f"# {how}",
        f"# Rewrite: {UPDATE_GOLDEN}=1 pytest rag_assets_tests/parsing/test_golden_pages.py",
    ]
    return "\n".join([*header, *converted.view]) + "\n"


def _body(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("# ")]


class Conversions:
    """Each case converted once per module, on first use."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.done: dict[str, Converted | BaseException] = {}

    def get(self, key: str, shared: Path | None = None) -> Converted:
        """This case converted; `shared` is ../shared for a real page (the `shared_dir` fixture)."""
        case = CASES[key]
        assert (shared is not None) == bool(case.source), key
        if shared is not None and not (shared / CORPUS / case.source).exists():
            pytest.skip(f"{shared / CORPUS / case.source} is absent")
        if key == "scanned":
            _require_ocr()
        if key not in self.done:
            try:
                self.done[key] = self._convert(case, shared)
            except Exception as exc:  # noqa: BLE001 - raised again for every test of the case
                self.done[key] = exc
        result = self.done[key]
        if isinstance(result, BaseException):
            raise result
        return result

    def _convert(self, case: Case, shared: Path | None) -> Converted:
        path = _make_pdf(case, self.root, shared)
        document, report = convert_with_report(path, path.name)
        structure = apply_structure(document)
        parents = build_parents(document, case.key, count_words, max_tokens=PARENT_BUDGET)
        converted = Converted(case, parents, structure, report.to_manifest())
        converted.view = render(converted)
        return converted


@pytest.fixture(scope="module")
def conversions(tmp_path_factory: pytest.TempPathFactory) -> Conversions:
    return Conversions(tmp_path_factory.mktemp("golden-pages"))


# ------------------------------------------------------------------------------ golden comparison


@pytest.mark.parametrize("key", GENERATED)
def test_generated_page_matches_golden_view(key: str, conversions: Conversions) -> None:
    _compare_with_golden(conversions.get(key))


@pytest.mark.parametrize("key", REAL)
def test_real_page_matches_golden_view(key: str, conversions: Conversions, shared_dir: Path) -> None:
    _compare_with_golden(conversions.get(key, shared_dir))


def _compare_with_golden(converted: Converted) -> None:
    key = converted.case.key
    path = GOLDEN_DIR / f"{key}.txt"
    actual = golden_text(converted)
    if os.environ.get(UPDATE_GOLDEN) == "1":
        GOLDEN_DIR.mkdir(exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != actual:
            path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(
            f"{converted.case.label}: no golden file golden/{path.name}; write it with {UPDATE_GOLDEN}=1 and review it",
            pytrace=False,
        )
    expected = _body(path.read_text(encoding="utf-8"))
    got = _body(actual)
    if got != expected:
        pytest.fail(_difference_message(converted.case, path, expected, got), pytrace=False)


def _difference_message(case: Case, path: Path, expected: list[str], got: list[str]) -> str:
    first = next(i for i, (a, b) in enumerate(zip([*expected, None], [*got, None])) if a != b)
    page = next(
        (line for lines in (expected, got) for line in reversed(lines[: first + 1]) if line.startswith("=== page ")),
        None,
    )
    where = f"first difference on {page.strip('= ')}" if page else "first difference in the summary lines"
    diff = list(difflib.unified_diff(expected, got, f"golden/{path.name}", "now", n=2, lineterm=""))
    shown = diff[:DIFF_LINES] + ([f"… {len(diff) - DIFF_LINES} more diff lines"] if len(diff) > DIFF_LINES else [])
    return (
        f"{case.label}: the converted page no longer matches golden/{path.name} ({where}).\n"
        + "\n".join(shown)
        + f"\nIf the change is intended, rewrite the golden files with {UPDATE_GOLDEN}=1 and review the diff."
    )


# ------------------------------------------------------------------------- explicit expectations


@pytest.fixture
def franchise_grid(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("franchise_grid", shared_dir)


@pytest.fixture
def table_across_pages(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("table_across_pages", shared_dir)


@pytest.fixture
def two_columns(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("two_columns", shared_dir)


@pytest.fixture
def table_of_contents(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("table_of_contents", shared_dir)


@pytest.fixture
def ipid(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("ipid", shared_dir)


@pytest.fixture
def rotated_table(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("rotated_table", shared_dir)


@pytest.fixture
def shaded_table(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("shaded_table", shared_dir)


@pytest.fixture
def text_boxes_on_picture(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("text_boxes_on_picture", shared_dir)


@pytest.fixture
def borderless_table(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("borderless_table", shared_dir)


@pytest.fixture
def shifted_font(conversions: Conversions) -> Converted:
    return conversions.get("shifted_font")


@pytest.fixture
def scanned(conversions: Conversions) -> Converted:
    return conversions.get("scanned")


@pytest.fixture
def fee_table(conversions: Conversions, shared_dir: Path) -> Converted:
    return conversions.get("fee_table", shared_dir)


def known_defect(reason: str):
    """A defect of the product today: the assertion stays, expected to fail until it is fixed."""
    return pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)


def _ends_in_page_number(heading: str) -> bool:
    return re.search(r"(?:[.·…_\-–—]{2,}|\s)\s*(?:p(?:age|\.)?\s*)?\d{1,3}$", heading, re.IGNORECASE) is not None


# 1. areas-marsh p.2: the tableau des garanties


def test_franchise_grid_keeps_each_guarantee_with_its_franchise_and_plafond(franchise_grid: Converted) -> None:
    [table] = franchise_grid.tables()
    assert table.columns == 5
    header = table.header[0]
    assert header[2:] == ["GARANTIES", "FRANCHISE", "PLAFOND / RESERVATION"]
    franchise, plafond = header.index("FRANCHISE"), header.index("PLAFOND / RESERVATION")
    for guarantee, expected_franchise, expected_plafond in [
        ("Annulation et Modification toutes causes justifiées", "20% (Min. 50€)", "25 000 €"),
        ("Bonne arrivée", "10% (Min. 50€)", "300 €"),
        ("Indisponibilité de la Location saisonnière", "10% (Min. 50€)", "25 000 €"),
        ("Effets personnels", "10% (Min. 50€)", "Avec facture : 2 000 € Sans facture : 200 €"),
        ("- Dont Responsabilité locative", "10% (Min. 50€)", "750 000 €"),  # a franchise cell spanning rows
    ]:
        row = table.row_with(guarantee)
        assert (row[franchise], row[plafond]) == (expected_franchise, expected_plafond), row
    assert franchise_grid.parent_with("limité à 300 000 € par Sinistre").heading_path[-1] == (
        "ARTICLE 3. LIMITE CONTRACTUELLE D'INDEMNISATION"
    )


@known_defect(
    "areas p.2: the ruled grid gives the 2.1.1 group three rows instead of two (an empty row after "
    "'- Accident de santé et décès'), so '- Tout autre Evénement garanti' falls outside the "
    "'Incluse | 2.1.1' cells spanning rows and its Markdown row has no key"
)
def test_franchise_grid_sub_rows_keep_their_article(franchise_grid: Converted) -> None:
    [table] = franchise_grid.tables()
    row = table.row_with("- Tout autre Evénement garanti")
    assert row[:2] == ["Incluse", "2.1.1"], row
    assert not any(all(not c for c in r[2:]) and any(r[:2]) for r in table.rows), "a row holding only its key"


@known_defect(
    "areas p.2: the page title 'CONDITIONS PARTICULIERES' (centred, top of the page) comes last in "
    "the reading order, after the page's last paragraph, so it heads no section"
)
def test_franchise_grid_page_title_heads_the_page(franchise_grid: Converted) -> None:
    assert franchise_grid.parents[0].heading_path[0] == "CONDITIONS PARTICULIERES"


# 2. allianz TNS notice p.10–11: the résiliation table continued on the next page


def test_table_continued_across_pages_is_one_table(table_across_pages: Converted) -> None:
    assert table_across_pages.structure["tables_continued_on_pages"] == [2]  # page 2 of the cut: p.11
    tables = table_across_pages.tables()
    joined = [t for t in tables if t.pages == [10, 11]]
    assert len(joined) == 1, [t.pages for t in tables]
    cells = " ".join(c for row in joined[0].rows for c in row)
    assert "À l'échéance (annuelle)" in cells and "Article L113-12" in cells  # p.10
    assert "Modification du Contrat" in cells and "Article L141-4" in cells  # p.11
    # The next table on p.11 (the insurer's own reasons to cancel) stays a table of its own.
    [other] = [t for t in tables if t is not joined[0]]
    assert other.pages == [11]
    assert "Non-paiement des cotisations" in " ".join(c for row in other.rows for c in row)
    assert "Modification du Contrat" not in " ".join(c for row in other.rows for c in row)


def test_table_across_pages_keeps_the_prose_at_the_top_of_the_page(table_across_pages: Converted) -> None:
    table_across_pages.parent_with("Nous prenons en charge les frais occasionnés par les formalités médicales")


def test_table_across_pages_keeps_lettered_headings_apart(table_across_pages: Converted) -> None:
    assert "a. Prise d'effet de votre adhésion" in table_across_pages.headings
    assert "2. Le début et la fin de votre adhésion et de vos garanties et options" in table_across_pages.headings


@known_defect(
    "allianz TNS p.10–11: the p.10 table's first row is the sentence above it ('Vous avez la possibilité "
    "de résilier votre adhésion selon les modalités ci-après :', also kept as a paragraph), so the "
    "column header repeated at the top of p.11 is not recognised and stays in the joined table"
)
def test_table_across_pages_has_its_column_header_once(table_across_pages: Converted) -> None:
    [joined] = [t for t in table_across_pages.tables() if t.pages == [10, 11]]
    rows = [" ".join(row) for row in [*joined.header, *joined.rows]]
    assert not any("Vous avez la possibilité de résilier" in row for row in rows)
    assert sum("Quand et comment faire" in row for row in rows) == 1, rows


def test_table_across_pages_keeps_multi_line_cells_whole(table_across_pages: Converted) -> None:
    [joined] = [t for t in table_across_pages.tables() if t.pages == [10, 11]]
    row = joined.row_with("Perte de votre statut de TNS")
    assert row[0] == (
        "Perte de votre statut de TNS non agricole (chapitre « Les conditions d'adhésion », paragraphe III)"
    ), row


@known_defect(
    "allianz TNS p.10: the heading 'd. Résiliation de l'adhésion' above the table is kept as a table "
    "caption (layout.clusters.build_clusters: heading_rank knows no lowercase 'a.'–'e.' enumerator), is linked "
    "to no table and ends up a paragraph, so the résiliation table is indexed under the previous "
    "heading 'c. Durée de l'adhésion'"
)
def test_table_across_pages_sits_under_its_heading(table_across_pages: Converted) -> None:
    [joined] = [t for t in table_across_pages.tables() if t.pages == [10, 11]]
    assert table_across_pages.parent_of(joined).heading_path[-1] == "d. Résiliation de l'adhésion"


# 3. MAIF Nautis p.4: two columns


def test_two_columns_are_read_one_after_the_other(two_columns: Converted) -> None:
    assert two_columns.tables() == []
    assert two_columns.before(
        "Préambule",
        "En ce qui concerne chaque bateau assuré",  # left column
        "Son montant est calculé",
        "Le sociétaire doit notamment donner connaissance",  # foot of the left column
        "fausse, toute réponse inexacte",  # top of the right column
        "Pour chaque bateau assuré",
        "En cours de contrat, le sociétaire peut à tout moment demander",  # foot of the right column
    )
    # A column's lines are not interleaved with the other column's, and its hyphenations are closed.
    two_columns.parent_with(
        "Le décompte de cotisation s'effectue à la journée pour les opérations d'assurance "
        "de souscription, modification ou suppression de risque"
    )
    two_columns.parent_with("Il est fixé chaque année par le conseil d'administration et est rappelé")
    assert "adminis-" not in two_columns.text


def test_two_columns_keeps_section_and_article_headings_apart(two_columns: Converted) -> None:
    assert "La formation de votre contrat" in two_columns.headings
    assert "article 1 : date d'effet" in two_columns.headings


def test_two_columns_keeps_numbered_paragraphs_whole(two_columns: Converted) -> None:
    first_lines = ("3.2 - ", "5.2 - ", "5.3 - ", "La cotisation est exigible")
    assert not [h for h in two_columns.headings if h.startswith(first_lines)]
    two_columns.parent_with("3.2 - Toute réticence ou déclaration intentionnellement fausse, toute réponse inexacte")


@known_defect(
    "Nautis p.4: the titles 'article 3 : déclarations concernant les risques lors de la souscription' "
    "and 'article 5 : déclarations concernant les risques' are not headings: the layout stage groups "
    "each title with the first line of the numbered paragraph under it ('… 3.1 - Le présent contrat et "
    "ses avenants sont établis d'après'), and that block ends up body text"
)
def test_two_columns_article_titles_are_headings(two_columns: Converted) -> None:
    assert any(h.startswith("article 3 : déclarations concernant les risques") for h in two_columns.headings)
    assert any(h.startswith("article 5 : déclarations concernant les risques") for h in two_columns.headings)


# 4. MAIF VAM p.6: table of contents


def test_table_of_contents_lines_are_not_headings_nor_indexed(table_of_contents: Converted) -> None:
    assert table_of_contents.structure["toc_pages"] == [6]
    assert table_of_contents.structure["toc_entries"] >= 20
    assert not [h for h in table_of_contents.headings if _ends_in_page_number(h)]
    assert all(len(p.heading_path) <= 3 for p in table_of_contents.parents)
    for entry in ["Les exclusions générales", "L'indemnisation en cas de décès", "La protection de votre véhicule"]:
        assert entry not in table_of_contents.text and entry not in table_of_contents.headings
    assert not [p.text for p in table_of_contents.parents if re.fullmatch(r"[\d\s]+", p.text)]  # stray page numbers


# 5. Mila IPID


def test_ipid_boxes_read_as_text(ipid: Converted) -> None:
    assert ipid.tables() == []
    assert ipid.parent_with("Les espèces, titres et valeurs").heading_path[-1] == "Qu'est ce qui n'est pas assuré ?"
    assert ipid.before(
        "Les évènements assurés sont soumis",  # left box
        "Les garanties précédées d'une coche",
        "Les espèces, titres et valeurs",  # right boxes
        "Les exclusions spécifiques aux garanties",
        "Ne peut donner lieu à remboursement",
    )
    ipid.parent_with(
        "Les évènements assurés sont soumis à des plafonds de garantie mentionnés aux conditions particulières."
    )
    assert all(len(p.heading_path) <= 3 for p in ipid.parents)


def test_ipid_top_lines_are_headings_whatever_the_layout_calls_them(ipid: Converted) -> None:
    # "MULTIRISQUE HABITATION" and "Où suis-je couvert ?" are headings on one CPU and page
    # headers on another (the layout model's close call): either way they head their sections
    assert (
        ipid.parent_with("Document d'information sur le produit d'assurance").heading_path[-1]
        == "MULTIRISQUE HABITATION"
    )
    assert (
        ipid.parent_with("Garantie d'assistance : France métropolitaine, hors Corses").heading_path[-1]
        == "Où suis-je couvert ?"
    )


def test_ipid_list_items_are_whole(ipid: Converted) -> None:
    # the item's second line, cut off by the layout, is joined again (ingest/sections.py)
    ipid.parent_with("Les bâtiments classés ou inscrits aux monuments historiques")


@known_defect(
    "Mila IPID p.1: in 'Qu'est ce qui n'est pas assuré ?' the list item 'Les bâtiments classés ou inscrits "
    "aux monuments historiques' is joined to the item before it ('X Les espèces, titres et valeurs X Les "
    "bâtiments…')"
)
def test_ipid_list_items_are_apart(ipid: Converted) -> None:
    parent = ipid.parent_with("Les bâtiments classés ou inscrits aux monuments historiques")
    assert not any(
        "Les espèces" in parent.text[b.start : b.end] and "Les bâtiments classés" in parent.text[b.start : b.end]
        for b in parent.blocks
    )


# 6. APICIL p.2: landscape table stored rotated


def test_rotated_table_has_its_six_levels(rotated_table: Converted) -> None:
    [table] = rotated_table.tables()
    assert table.columns >= 6
    assert table.header[0][0] == "PRESTATIONS GARANTIES"
    assert [c for c in table.header[0] if c.startswith("Equilibre")] == [f"Equilibre {n}" for n in range(1, 7)]
    row = table.row_with("Praticiens conventionnés signataires OPTAM/OPTAM-CO")
    assert row[-6:] == [f"{rate} % BR - SS" for rate in (100, 150, 200, 250, 300, 400)]
    assert table.row_with("Participation forfaitaire aux frais d'hébergement")[-6:] == ["100 % FR"] * 6
    rotated_table.parent_with("(6) Limité à 15 jours par hospitalisation.")


@known_defect(
    "APICIL p.2: the label 'Frais de séjour en maisons d'accueil hospitalières (5)' is put in the row "
    "above ('Chambre particulière - hospitalisation ambulatoire (4) Frais de séjour…') and its amounts "
    "(20, 20, 30, 30, 30 €/jour) make a row with no label"
)
def test_rotated_table_rows_keep_their_label(rotated_table: Converted) -> None:
    [table] = rotated_table.tables()
    row = table.row_with("Frais de séjour en maisons d'accueil hospitalières")
    assert row[0] == "Frais de séjour en maisons d'accueil hospitalières (5)", row
    assert row[-5:] == ["20 €/jour", "20 €/jour", "30 €/jour", "30 €/jour", "30 €/jour"], row


# 7. MAIF VAM p.38: a shaded table the layout model calls a figure


def test_shaded_table_is_a_table_with_its_durations(shaded_table: Converted) -> None:
    [table] = shaded_table.tables()
    assert table.row_with("Vol du véhicule avec disparition")[1:] == ["-", "20 jours", "-", "20 jours"]
    assert table.row_with("Panne")[1:] == ["-", "7 jours", "-", "7 jours"]
    assert (
        shaded_table.parent_of(table).heading_path[-1] == "LES DISPOSITIONS COMMUNES AU SERVICE VÉHICULE DE "
        "REMPLACEMENT"
    )


@known_defect(
    "VAM p.38: the two-level column header (Initiale / Essentiel over 'sans option | avec option') is "
    "read as a first row 'Initiale Essentiel' in one cell and a row 'sans option | | avec option sans "
    "option | | avec option'"
)
def test_shaded_table_header_names_each_column(shaded_table: Converted) -> None:
    [table] = shaded_table.tables()
    assert [" ".join(row[c] for row in table.header).strip() for c in range(1, 5)] == [
        "Initiale sans option",
        "Initiale avec option",
        "Essentiel sans option",
        "Essentiel avec option",
    ]


# 8. MAIF VAM p.4: boxes of text over a picture


def test_text_on_a_picture_background_is_indexed(text_boxes_on_picture: Converted) -> None:
    text_boxes_on_picture.parent_with(
        "Essentiel, l'assurance au tiers enrichie de la prise en charge du vol, de l'incendie et du bris de glace."
    )
    text_boxes_on_picture.parent_with(
        "prêt d'un véhicule jusqu'à 7 jours en cas d'accident, 20 jours en cas de vol, 7 jours en cas de panne."
    )
    assert text_boxes_on_picture.before(
        "Initiale, la formule au tiers économique",
        "Essentiel, l'assurance au tiers",
        "Plénitude, la tous risques tout confort",
    )


# 9. MAIF Raqvam p.16: a borderless table whose rules only underline its sections


def test_borderless_table_is_one_table_with_a_column_per_formula(borderless_table: Converted) -> None:
    [table] = borderless_table.tables()
    assert table.columns == 4
    assert [c.split(" ")[:2] for c in table.header[0][1:]] == [
        ["RAQVAM", "arbitrage"],
        ["RAQVAM", "équilibre"],
        ["RAQVAM", "sérénité"],
    ]
    assert table.row_with("■ garantie des dommages corporels")[1:] == ["oui", "oui", "oui"]  # above the first rule
    assert table.row_with("■ garantie autres dommages accidentels")[1:] == ["non", "oui", "oui"]  # below the last
    assert table.row_with("■ pertes de loyer")[1:] == ["non", "non", "oui"]


# 10. Generated: a font whose ToUnicode map is off by one


def test_shifted_font_reads_as_french(shifted_font: Converted) -> None:
    assert shifted_font.text_layer["repaired_pages"] == {"1": 1}
    for paragraph in FRENCH:
        assert paragraph in shifted_font.text
    assert "Wpvt" not in shifted_font.text and "qpvstvjwj" not in shifted_font.text
    [table] = shifted_font.tables()
    assert table.rows == [list(row) for row in SHIFTED_TABLE[1:]]


def test_shifted_font_bold_text_is_repaired(shifted_font: Converted) -> None:
    assert SHIFTED_HEADING in shifted_font.headings
    [table] = shifted_font.tables()
    assert table.header == [list(SHIFTED_TABLE[0])]


# 11. Generated: a scanned page


@pytest.mark.ocr
def test_scanned_page_is_read_by_ocr(scanned: Converted) -> None:
    assert scanned.text_layer["ocr_pages"] == [1]
    assert [p.heading_path for p in scanned.parents] == [[SCANNED_HEADING]]
    for words in ("Vous êtes poursuivi devant une juridiction pénale", "frais de votre défense", "trente jours"):
        assert words in scanned.text


# 12. Generated look-alikes of the hard layouts (always run: no ../shared needed)


@pytest.fixture
def generated_grid_table(conversions: Conversions) -> Converted:
    return conversions.get("generated_grid_table")


@pytest.fixture
def generated_two_columns(conversions: Conversions) -> Converted:
    return conversions.get("generated_two_columns")


@pytest.fixture
def generated_contents(conversions: Conversions) -> Converted:
    return conversions.get("generated_contents")


@pytest.fixture
def generated_table_across_pages(conversions: Conversions) -> Converted:
    return conversions.get("generated_table_across_pages")


def test_generated_grid_keeps_wrapped_cells_whole_in_their_row(generated_grid_table: Converted) -> None:
    [table] = generated_grid_table.tables()
    assert table.header == [list(generated.GRID_TABLE[0])]
    assert table.rows == [list(row) for row in generated.GRID_TABLE[1:]]
    assert generated_grid_table.parent_of(table).heading_path == [generated.GRID_HEADING]
    assert generated_grid_table.parent_with(generated.GRID_AFTER).heading_path == [generated.GRID_AFTER_HEADING]


def test_generated_columns_are_read_one_after_the_other(generated_two_columns: Converted) -> None:
    assert generated_two_columns.tables() == []
    assert generated_two_columns.before(*generated.LEFT, *generated.RIGHT)
    for heading, paragraphs in ((generated.LEFT_HEADING, generated.LEFT), (generated.RIGHT_HEADING, generated.RIGHT)):
        for paragraph in paragraphs:  # whole: no line of the other column in it
            assert generated_two_columns.parent_with(paragraph).heading_path == [generated.COLUMNS_HEADING, heading]


def test_generated_contents_page_confirms_headings_and_stays_out_of_the_body(generated_contents: Converted) -> None:
    entries = generated.CONTENTS
    assert generated_contents.structure["toc_pages"] == [1]
    assert generated_contents.structure["toc_entries"] == len(entries)
    assert generated_contents.structure["headings_confirmed_by_toc"] == len(entries)
    assert [p.heading_path for p in generated_contents.parents] == [[title] for title, _ in entries]
    assert [p.pages for p in generated_contents.parents] == [[page] for _, page in entries]
    assert generated.CONTENTS_HEADING not in generated_contents.text and "...." not in generated_contents.text


def test_generated_table_across_pages_is_one_table_with_its_header_once(
    generated_table_across_pages: Converted,
) -> None:
    assert generated_table_across_pages.structure["tables_continued_on_pages"] == [2]
    [table] = generated_table_across_pages.tables()
    assert table.pages == [1, 2]
    assert table.header == [list(generated.ACROSS_HEADER)]
    assert table.rows == [list(row) for row in [*generated.ACROSS_PAGE_1, *generated.ACROSS_PAGE_2]]
    assert generated_table_across_pages.parent_of(table).heading_path == [generated.ACROSS_HEADING]
    after = generated_table_across_pages.parent_with(generated.ACROSS_AFTER)
    assert after.heading_path == [generated.ACROSS_AFTER_HEADING]


# Nautis p.24: the lawyers' fee ceilings


def test_fee_table_gives_each_item_under_one_rule_its_own_amount(fee_table: Converted) -> None:
    # one rule over two items and their two amounts read as one row ("482 € 2 358 € 2") gave
    # each court's ceiling to no court
    [table] = [t for t in fee_table.tables() if any("Tribunal de police" in c for row in t.rows for c in row)]
    for item, amount in [
        ("- comparution devant le procureur", "411 €"),
        ("- accord du prévenu et comparution immédiate devant le juge du siège", "351 €"),
        ("Tribunal de police", "482 € 2"),
        ("Jugement en liquidation sur intérêts civils (après renvoi)", "358 € 2"),
        ("Chambre des appels correctionnels", "843 €"),
    ]:
        row = table.row_with(item)
        assert row[0] == item and row[-1] == amount, row
    # a heading over its list's items stays a row of its own
    assert table.row_with("CIVI")[0] == "CIVI"
