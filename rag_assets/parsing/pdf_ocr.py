"""Docling OCR stage that checks each page's text layer and only OCRs what cannot be trusted.

Per page, text a reader cannot see (``invisible_text``: white on white, under 2 pt,
off the crop box, not drawn) is first dropped from the cells the PDF parser produced and
counted; then, from the cells left (``text_layer.assess_page`` on the text of each font):

- a text layer that reads is left untouched (no OCR cost);
- a font whose ToUnicode map is shifted by a constant is repaired in place
  (word, character and line cells: the layout stage reads ``page.cells`` and
  ``page.parsed_page.word_cells``);
- a garbled page, an empty page with a picture on it, or a page whose few
  words sit on a full-page picture (a stamped scan) is OCR'd with Docling's
  own Tesseract CLI engine over the full page (rendered by pdfium, which draws
  the fonts' glyphs, not their broken Unicode), and its cells are replaced by
  the OCR words and lines;
- when Tesseract or one of its languages is missing, such pages are dropped
  (a garbled text layer is not indexed) and reported "unreadable, OCR
  unavailable"; the conversion goes on.

What happened to each page is a ``PageTextReport`` left on Docling's ``Page``
(kept in ``ConversionResult.pages``); ``collect_text_layer_report`` gathers
them after conversion.

Docling runs its OCR stage after layout (layout regions tell it where to OCR);
this engine needs no layout and the layout stage must see the repaired or
OCR'd cells, so ``RagPdfPipeline`` wires it before layout.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from io import BytesIO
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from docling.backend.pypdfium2_backend import PyPdfiumPageBackend
from docling.datamodel.accelerator_options import AcceleratorOptions
from docling.datamodel.base_models import Page
from docling.datamodel.document import ConversionResult
from docling.datamodel.pipeline_options import OcrMode, OcrOptions, TesseractCliOcrOptions
from docling.models.base_ocr_model import BaseOcrModel
from docling.models.stages.ocr.tesseract_ocr_cli_model import TesseractOcrCliModel
from docling.utils.locks import pypdfium2_lock
from docling.utils.profiling import TimeRecorder
from docling_core.types.doc import BoundingBox
from docling_core.types.doc.page import BoundingRectangle, SegmentedPdfPage, TextCell

from rag_assets.parsing import text_layer
from rag_assets.parsing.invisible_text import PdfChar, hidden_summary, page_chars
from rag_assets.parsing.text_layer import assess_page, unshift

ENGINE = "rag_assets_text_layer"
EMPTY_PAGE_PICTURE_SHARE = 0.02  # an empty page with pictures bigger than specks may be a scan
SCAN_PICTURE_SHARE = 0.8  # one picture this big under a few words is a scan (stamped page number)
OUTLINED_TEXT_SHAPES = 20  # glyph-like vector shapes on an empty page: text drawn as outlines
OCR_LINE_GAP = 2.0  # word gap, in line heights, that splits an OCR'd line (columns, table cells)

PageStatus = Literal["repaired", "ocr", "unreadable", "no_text"]
_REPORT_ATTR = "_rag_text_layer"  # on Docling's Page
_SHIFTS_ATTR = "_rag_font_shifts"  # on Docling's ConversionResult: fonts found shifted so far
_HIDDEN_ATTR = "_rag_hidden_text"  # on Docling's Page: characters of invisible text dropped, by reason
_PDFIUM_ATTR = "_rag_pdfium"  # on Docling's ConversionResult: the document as pdfium reads it


class TextLayerOcrOptions(OcrOptions):
    """Options of the text-layer check with Tesseract for the pages that need it."""

    kind: ClassVar[str] = ENGINE
    # Tesseract language data names, handed to it as written.
    canonicalize_lang: ClassVar[bool] = False
    lang: list[str] = ["fra", "eng"]
    tesseract_cmd: str = "tesseract"
    tessdata_path: str | None = None
    psm: int | None = None


@dataclass
class PageTextReport:
    page_no: int
    status: PageStatus
    reason: str  # what was wrong with the text layer
    shifts: dict[str, int] = field(default_factory=dict)  # font -> code points its text layer was off by
    ocr_words: int = 0
    ocr_unavailable: str | None = None  # why OCR could not run


_PROBE_TTL = 60.0  # seconds: installing tesseract or a language is seen without a restart
_probes: dict[tuple[str, str | None], tuple[float, str | None, tuple[str, ...]]] = {}


def _tesseract_probe(cmd: str, tessdata: str | None) -> tuple[str | None, tuple[str, ...]]:
    """(version, installed languages) of the tesseract ``cmd`` resolves to on PATH now."""
    binary = shutil.which(cmd)
    if binary is None:
        return None, ()
    key = (binary, tessdata)
    cached = _probes.get(key)
    if cached is not None and time.monotonic() - cached[0] < _PROBE_TTL:
        return cached[1], cached[2]
    try:
        version = subprocess.run([binary, "--version"], capture_output=True, timeout=30, check=True)
        langs = subprocess.run(
            [binary, "--list-langs", *(["--tessdata-dir", tessdata] if tessdata else [])],
            capture_output=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None, ()
    first = (version.stdout.decode() or version.stderr.decode()).strip().splitlines()
    number = first[0].split()[-1] if first else "unknown"
    installed = tuple(line.strip() for line in langs.stdout.decode().splitlines()[1:] if line.strip())
    _probes[key] = (time.monotonic(), number, installed)
    return number, installed


def tesseract_status(options: TextLayerOcrOptions | None = None) -> tuple[str | None, str | None]:
    """(Tesseract version, why OCR is unavailable); the reason is None when OCR can run."""
    options = options or TextLayerOcrOptions()
    version, langs = _tesseract_probe(options.tesseract_cmd, options.tessdata_path)
    if version is None:
        default = options.tesseract_cmd == TextLayerOcrOptions().tesseract_cmd
        return None, "tesseract not found" + ("" if default else f" (command {options.tesseract_cmd!r})")
    missing = [lang for lang in options.lang if lang not in langs]
    if missing:
        return version, f"tesseract has no language data for {', '.join(missing)}"
    return version, None


def install_hint(languages: Sequence[str]) -> str:
    return "install " + " ".join(["tesseract-ocr", *(f"tesseract-ocr-{lang}" for lang in languages)])


def _clean(text: str) -> str:
    return " ".join(text.split())


def _center_inside(cell: TextCell, box: BoundingBox) -> bool:
    b = cell.rect.to_bounding_box()
    x, y = (b.l + b.r) / 2, (b.t + b.b) / 2
    return min(box.l, box.r) <= x <= max(box.l, box.r) and min(box.t, box.b) <= y <= max(box.t, box.b)


def _font(cell: TextCell) -> str:
    return getattr(cell, "font_name", None) or ""


def _texts_by_font(parsed: SegmentedPdfPage) -> dict[str, str]:
    cells = parsed.word_cells or parsed.textline_cells
    texts: dict[str, list[str]] = {}
    for cell in cells:
        texts.setdefault(_font(cell), []).append(cell.text)
    return {font: " ".join(parts) for font, parts in texts.items()} or {"": ""}


def _set_text(cell: TextCell, text: str) -> None:
    cell.text = text
    cell.orig = text


def repair_shifted_cells(parsed: SegmentedPdfPage, shifts: dict[str, int]) -> None:
    """Undo each font's code-point shift in the character, word and line cells, in place."""
    words = list(parsed.word_cells)
    # Lines mix fonts: each line is repaired word by word from its own words.
    line_words = [
        [w for w in words if _center_inside(w, line.rect.to_bounding_box())] for line in parsed.textline_cells
    ]
    raw_words = {id(w): w.text for w in words}
    for cell in parsed.char_cells:
        if _font(cell) in shifts:
            _set_text(cell, unshift(cell.text, shifts[_font(cell)]))
    for cell in words:
        if _font(cell) in shifts:
            _set_text(cell, _clean(unshift(cell.text, shifts[_font(cell)])))
    parsed.word_cells = [w for w in words if w.text]
    for line, members in zip(parsed.textline_cells, line_words):
        ks = {shifts.get(_font(w), 0) for w in members} or {shifts.get(_font(line), 0)}
        if ks == {0}:
            continue
        if len(ks) == 1:
            _set_text(line, _clean(unshift(line.text, ks.pop())))
            continue
        _set_text(line, _line_with_words(line.text, members, raw_words))
    parsed.textline_cells = [line for line in parsed.textline_cells if line.text]


def _line_with_words(text: str, members: Sequence[TextCell], raw_words: dict[int, str]) -> str:
    """A line's text with each member word's raw text (``raw_words``) replaced by its text now."""
    pos, out = 0, []
    for w in members:
        raw = raw_words[id(w)]
        at = text.find(raw, pos) if raw else -1
        if at < 0:
            continue
        out += [text[pos:at], w.text]
        pos = at + len(raw)
    return _clean("".join(out) + text[pos:])


def _union(boxes: Sequence[BoundingBox]) -> BoundingBox:
    return BoundingBox(
        l=min(b.l for b in boxes),
        t=min(b.t for b in boxes),
        r=max(b.r for b in boxes),
        b=max(b.b for b in boxes),
        coord_origin=boxes[0].coord_origin,
    )


def _boxes(cells: Sequence[TextCell]) -> np.ndarray:
    return np.array(
        [[b.l, min(b.t, b.b), b.r, max(b.t, b.b)] for b in (c.rect.to_bounding_box() for c in cells)], dtype=float
    ).reshape(-1, 4)


def _owners(cells: Sequence[TextCell], chars: Sequence[PdfChar]) -> np.ndarray:
    """For each pdfium character, the index of the cell whose box holds its centre (the nearest
    centre when boxes overlap), or -1."""
    boxes = _boxes(cells)
    if not len(boxes) or not chars:
        return np.full(len(chars), -1)
    xy = np.array([[c.x, c.y] for c in chars])
    x, y = xy[:, :1], xy[:, 1:]
    inside = (boxes[:, 0] <= x) & (x <= boxes[:, 2]) & (boxes[:, 1] <= y) & (y <= boxes[:, 3])
    centres = (boxes[:, :2] + boxes[:, 2:]) / 2
    distance = np.hypot(centres[:, 0] - x, centres[:, 1] - y)
    owner = np.where(inside, distance, np.inf).argmin(axis=1)
    return np.where(inside.any(axis=1), owner, -1)


def drop_hidden_cells(parsed: SegmentedPdfPage, chars: Sequence[PdfChar]) -> Counter[str]:
    """Take out of the character, word and line cells the text pdfium found hidden, in place;
    returns the number of characters dropped from the words, by reason.

    Each pdfium character goes to the cell holding its centre. A cell all of whose
    characters are hidden is dropped; a word mixing both keeps its seen characters; a
    line loses the text of its dropped words and shrinks to the words it keeps.
    """
    if not any(c.hidden for c in chars):
        return Counter()
    if parsed.char_cells:
        owner = _owners(parsed.char_cells, chars)
        hidden = {
            i
            for i in set(owner[[c.hidden is not None for c in chars]]) - {-1}
            if all(chars[j].hidden for j in np.flatnonzero(owner == i).tolist())
        }
        parsed.char_cells = [c for i, c in enumerate(parsed.char_cells) if i not in hidden]
    words = list(parsed.word_cells)
    owner = _owners(words, chars)
    dropped: Counter[str] = Counter()
    raw_words = {id(w): w.text for w in words}
    changed: set[int] = set()
    for i in sorted(set(owner[[c.hidden is not None for c in chars]]) - {-1}):
        members = sorted((chars[j] for j in np.flatnonzero(owner == i).tolist()), key=lambda c: c.x)
        _set_text(words[i], "".join(c.text for c in members if not c.hidden))
        dropped.update(c.hidden for c in members if c.hidden)
        changed.add(id(words[i]))
    parsed.word_cells = [w for w in words if w.text]
    for line in parsed.textline_cells:
        line_words = [w for w in words if _center_inside(w, line.rect.to_bounding_box())]
        if not any(id(w) in changed for w in line_words):
            continue
        _set_text(line, _line_with_words(line.text, line_words, raw_words))
        kept = [w for w in line_words if w.text]
        if kept:
            line.rect = BoundingRectangle.from_bounding_box(_union([w.rect.to_bounding_box() for w in kept]))
    parsed.textline_cells = [line for line in parsed.textline_cells if line.text]
    parsed.has_chars, parsed.has_words = bool(parsed.char_cells), bool(parsed.word_cells)
    parsed.has_lines = bool(parsed.textline_cells)
    return dropped


def ocr_lines(words: Sequence[TextCell]) -> list[TextCell]:
    """Group Tesseract's word cells into line cells, as the PDF parser gives them.

    Docling's Tesseract engine returns words; the layout stage reads
    ``page.cells`` as lines (and splits paragraphs on them), so words sharing
    a row are joined until a gap wider than ``OCR_LINE_GAP`` line heights.
    """
    boxes = [(w, w.rect.to_bounding_box()) for w in words]
    rows: list[list[tuple[TextCell, BoundingBox]]] = []
    for word, box in sorted(boxes, key=lambda wb: (wb[1].t + wb[1].b) / 2):
        best, best_overlap = None, 0.0
        for row in rows[-3:]:
            t, b = min(bx.t for _, bx in row), max(bx.b for _, bx in row)
            overlap = min(b, box.b) - max(t, box.t)
            if overlap >= 0.5 * min(b - t, box.b - box.t) and overlap > best_overlap:
                best, best_overlap = row, overlap
        if best is None:
            rows.append([(word, box)])
        else:
            best.append((word, box))
    lines: list[TextCell] = []
    for row in rows:
        row.sort(key=lambda wb: wb[1].l)
        height = sorted(bx.b - bx.t for _, bx in row)[len(row) // 2]
        pieces: list[list[tuple[TextCell, BoundingBox]]] = [[row[0]]]
        for word, box in row[1:]:
            if box.l - pieces[-1][-1][1].r > OCR_LINE_GAP * height:
                pieces.append([])
            pieces[-1].append((word, box))
        for piece in pieces:
            text = " ".join(w.text for w, _ in piece)
            union = _union([bx for _, bx in piece])
            lines.append(
                TextCell(
                    index=len(lines),
                    text=text,
                    orig=text,
                    from_ocr=True,
                    confidence=sum(w.confidence for w, _ in piece) / len(piece),
                    rect=BoundingRectangle.from_bounding_box(union),
                )
            )
    return lines


@contextmanager
def pdfium_rendering(conv_res: ConversionResult, page: Page) -> Iterator[None]:
    """Have ``page`` rendered by pdfium while the OCR engine reads it.

    docling-parse renders text from the text layer's Unicode with a stock
    font, so a page whose text layer is broken renders broken; pdfium draws
    the glyphs the font holds, as a viewer does. Falls back to the pipeline's
    renderer when pdfium cannot open the file.
    """
    import pypdfium2

    source = getattr(conv_res.input._backend, "path_or_stream", None)
    backend, document = page._backend, None
    try:
        with pypdfium2_lock:
            document = pypdfium2.PdfDocument(source)
            page._backend = PyPdfiumPageBackend(document, conv_res.input.document_hash, page.page_no - 1)
    except Exception:  # noqa: BLE001 - any failure: keep the pipeline's renderer
        page._backend = backend
    try:
        yield
    finally:
        if page._backend is not backend:
            page._backend.unload()
            page._backend = backend
        if document is not None:
            with pypdfium2_lock:
                document.close()


def _pdfium_chars(conv_res: ConversionResult, page: Page) -> list[PdfChar] | None:
    """The page's characters as pdfium reads and renders them, or None when pdfium cannot
    open the file (the parser's cells are then kept as they are). The document is opened
    once per conversion."""
    import pypdfium2

    with pypdfium2_lock:
        document = getattr(conv_res, _PDFIUM_ATTR, None)
        try:
            if document is None:
                source = getattr(conv_res.input._backend, "path_or_stream", None)
                # bytes, not the stream the parser reads: two readers would move one file position
                document = pypdfium2.PdfDocument(source.getvalue() if isinstance(source, BytesIO) else source)
                setattr(conv_res, _PDFIUM_ATTR, document)  # closed by collect_text_layer_report
            pdf_page = document[page.page_no - 1]
            try:
                return page_chars(pdf_page)
            finally:
                pdf_page.close()
        except Exception:  # noqa: BLE001 - any failure: the parser's cells stand
            return None


def _drop_text(parsed: SegmentedPdfPage) -> None:
    parsed.textline_cells, parsed.word_cells, parsed.char_cells = [], [], []
    parsed.has_lines = parsed.has_words = parsed.has_chars = False


def set_page_report(page: Page, report: PageTextReport) -> None:
    setattr(page, _REPORT_ATTR, report)


def page_report(page: Page) -> PageTextReport | None:
    return getattr(page, _REPORT_ATTR, None)


class TextLayerOcrModel(BaseOcrModel):
    """Docling OCR stage: trust, repair or OCR each page's text layer."""

    def __init__(
        self,
        enabled: bool,
        artifacts_path: Path | None,
        options: TextLayerOcrOptions,
        accelerator_options: AcceleratorOptions,
    ) -> None:
        super().__init__(
            enabled=enabled, artifacts_path=artifacts_path, options=options, accelerator_options=accelerator_options
        )
        self.options: TextLayerOcrOptions
        self.accelerator_options = accelerator_options
        self._tesseract: TesseractOcrCliModel | None = None
        self._lock = threading.Lock()

    @classmethod
    def get_options_type(cls) -> type[TextLayerOcrOptions]:
        return TextLayerOcrOptions

    def __call__(self, conv_res: ConversionResult, page_batch: Iterable[Page]) -> Iterable[Page]:
        if not self.enabled:
            yield from page_batch
            return
        for page in page_batch:
            if page._backend is not None and page._backend.is_valid() and page.parsed_page is not None:
                with TimeRecorder(conv_res, "ocr"):
                    report = self._check_page(conv_res, page)
                if report is not None:
                    set_page_report(page, report)
            yield page

    # ------------------------------------------------------------------ per page
    def _check_page(self, conv_res: ConversionResult, page: Page) -> PageTextReport | None:
        parsed = page.parsed_page
        assert parsed is not None
        chars = _pdfium_chars(conv_res, page)
        if chars:
            hidden = drop_hidden_cells(parsed, chars)
            if hidden:
                setattr(page, _HIDDEN_ATTR, hidden)
        known: dict[str, int] = getattr(conv_res, _SHIFTS_ATTR, None) or {}
        assessment = assess_page(_texts_by_font(parsed), known)
        verdict = assessment.verdict
        if verdict.kind == "shifted":
            repair_shifted_cells(parsed, assessment.font_shifts)
            setattr(conv_res, _SHIFTS_ATTR, {**known, **assessment.font_shifts})
            return PageTextReport(page.page_no, "repaired", "text layer shifted", shifts=dict(assessment.font_shifts))
        if verdict.kind == "garbled":
            reason = f"garbled text layer ({verdict.reason})"
        elif verdict.kind == "empty":
            reason = self._why_read_empty_page(page)
            if reason is None:
                return None  # blank page: nothing to read
        elif verdict.words < text_layer.MIN_WORDS and self._largest_picture_share(page) >= SCAN_PICTURE_SHARE:
            reason = "scanned (a few words of text over a full-page picture)"
        else:
            return None
        return self._ocr_page(conv_res, page, reason, garbled=verdict.kind == "garbled")

    def _largest_picture_share(self, page: Page) -> float:
        assert page._backend is not None and page.size is not None
        area = page.size.width * page.size.height
        return max((b.area() / area for b in page._backend.get_bitmap_rects()), default=0.0) if area else 0.0

    def _why_read_empty_page(self, page: Page) -> str | None:
        """Why a page with no text layer may still hold text, or None for a blank page."""
        assert page._backend is not None and page.size is not None
        area = page.size.width * page.size.height
        pictures = sum(b.area() for b in page._backend.get_bitmap_rects())
        if area and pictures / area >= EMPTY_PAGE_PICTURE_SHARE:
            return "scanned"
        shapes = page._backend.get_connected_shape_bounding_boxes() or []
        if sum(not self._is_rule_like(s) for s in shapes) >= OUTLINED_TEXT_SHAPES:
            return "no text layer (text drawn as outlines?)"
        return None

    # ------------------------------------------------------------------ OCR
    def _engine(self) -> tuple[TesseractOcrCliModel | None, str | None]:
        _, unavailable = tesseract_status(self.options)
        if unavailable is not None:
            return None, unavailable
        with self._lock:
            if self._tesseract is None:
                try:
                    self._tesseract = TesseractOcrCliModel(
                        enabled=True,
                        artifacts_path=None,
                        options=TesseractCliOcrOptions(
                            lang=list(self.options.lang),
                            tesseract_cmd=self.options.tesseract_cmd,
                            path=self.options.tessdata_path,
                            psm=self.options.psm,
                            scale=self.options.scale,
                            mode=OcrMode.FULL_PAGE,
                        ),
                        accelerator_options=self.accelerator_options,
                    )
                except Exception as exc:  # noqa: BLE001 - any failure means "no OCR here"
                    return None, f"tesseract could not start ({exc})"
            return self._tesseract, None

    def _ocr_page(self, conv_res: ConversionResult, page: Page, reason: str, garbled: bool) -> PageTextReport:
        parsed = page.parsed_page
        assert parsed is not None
        engine, unavailable = self._engine()
        if engine is not None:
            try:
                with pdfium_rendering(conv_res, page):
                    list(engine(conv_res, [page]))
            except (OSError, subprocess.SubprocessError) as exc:
                with self._lock:
                    self._tesseract = None
                engine, unavailable = None, f"tesseract failed to run ({exc})"
        if engine is None:
            _drop_text(parsed)
            return PageTextReport(page.page_no, "unreadable", reason, ocr_unavailable=unavailable)
        ocr_cells = [c for c in parsed.textline_cells if c.text.strip()]
        # Tesseract's cells are words: lines for page.cells, the words as word cells.
        parsed.textline_cells = ocr_lines(ocr_cells)
        parsed.word_cells = ocr_cells
        parsed.has_lines = parsed.has_words = bool(ocr_cells)
        if not ocr_cells:
            return PageTextReport(page.page_no, "unreadable" if garbled else "no_text", reason)
        return PageTextReport(page.page_no, "ocr", reason, ocr_words=len(ocr_cells))


# ---------------------------------------------------------------------- report


def _page_ranges(pages: Sequence[int]) -> str:
    """'page 3', 'pages 3, 7', 'pages 1–4, 9'."""
    pages = sorted(pages)
    runs: list[list[int]] = []
    for p in pages:
        if runs and p == runs[-1][-1] + 1:
            runs[-1].append(p)
        else:
            runs.append([p])
    parts = [f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs]
    return ("page " if len(pages) == 1 else "pages ") + ", ".join(parts)


def _them(pages: Sequence[int]) -> str:
    return "it" if len(pages) == 1 else "them"


@dataclass
class TextLayerReport:
    """What the OCR stage did to a document's pages (only pages it changed or could not read)."""

    pages: list[PageTextReport] = field(default_factory=list)
    languages: list[str] = field(default_factory=lambda: list(TextLayerOcrOptions().lang))
    hidden: dict[int, dict[str, int]] = field(default_factory=dict)  # page -> invisible characters dropped, by reason

    def _with(self, status: PageStatus) -> list[PageTextReport]:
        return [p for p in self.pages if p.status == status]

    @property
    def repaired_pages(self) -> dict[int, int | dict[str, int]]:
        out: dict[int, int | dict[str, int]] = {}
        for p in self._with("repaired"):
            distinct = set(p.shifts.values())
            out[p.page_no] = distinct.pop() if len(distinct) == 1 else dict(p.shifts)
        return out

    @property
    def ocr_pages(self) -> list[int]:
        return [p.page_no for p in self._with("ocr")]

    @property
    def unreadable_pages(self) -> list[int]:
        return [p.page_no for p in self._with("unreadable")]

    @property
    def ocr_unavailable(self) -> str | None:
        return next((p.ocr_unavailable for p in self.pages if p.ocr_unavailable), None)

    def to_manifest(self) -> dict:
        return {
            "ocr_pages": self.ocr_pages,
            "repaired_pages": {str(k): v for k, v in self.repaired_pages.items()},
            "unreadable_pages": self.unreadable_pages,
            "text_layer_pages": {
                str(p.page_no): {k: v for k, v in asdict(p).items() if k != "page_no" and v} for p in self.pages
            },
            "invisible_text_pages": {str(page): reasons for page, reasons in self.hidden.items()},
        }

    def warnings(self) -> list[str]:
        out = []
        by_shift: dict[str, list[int]] = {}
        for page, shift in self.repaired_pages.items():
            key = (
                f"{shift:+d} code point{'s' if abs(shift) > 1 else ''}"
                if isinstance(shift, int)
                else ", ".join(f"{k:+d} in font {f}" for f, k in shift.items())
            )
            by_shift.setdefault(key, []).append(page)
        for key, pages in by_shift.items():
            out.append(f"{_page_ranges(pages)}: text layer shifted by {key} (broken ToUnicode map), repaired")
        langs = "+".join(self.languages)
        by_reason: dict[str, list[int]] = {}
        for p in self._with("ocr"):
            by_reason.setdefault(p.reason, []).append(p.page_no)
        for reason, pages in by_reason.items():
            out.append(f"{_page_ranges(pages)}: {reason}, OCR'd with Tesseract ({langs})")
        unavailable = [p.page_no for p in self._with("unreadable") if p.ocr_unavailable]
        if unavailable:
            why = self.ocr_unavailable
            out.append(
                f"{_page_ranges(unavailable)}: no readable text and OCR unavailable ({why}: "
                f"{install_hint(self.languages)}); kept without {_them(unavailable)}"
            )
        failed = [p.page_no for p in self._with("unreadable") if not p.ocr_unavailable]
        if failed:
            out.append(
                f"{_page_ranges(failed)}: garbled text layer and OCR found no text; kept without {_them(failed)}"
            )
        out += [f"page {page}: {hidden_summary(Counter(reasons))}" for page, reasons in self.hidden.items()]
        return out


def collect_text_layer_report(conv_res: ConversionResult, languages: Sequence[str] | None = None) -> TextLayerReport:
    """The per-page reports the OCR stage left on the pages of a finished conversion."""
    reports = [r for r in (page_report(p) for p in conv_res.pages) if r is not None]
    document = getattr(conv_res, _PDFIUM_ATTR, None)
    if document is not None:
        with pypdfium2_lock:
            document.close()
        delattr(conv_res, _PDFIUM_ATTR)
    hidden = {p.page_no: dict(getattr(p, _HIDDEN_ATTR)) for p in conv_res.pages if getattr(p, _HIDDEN_ATTR, None)}
    return TextLayerReport(
        pages=sorted(reports, key=lambda r: r.page_no),
        languages=list(languages or TextLayerOcrOptions().lang),
        hidden=dict(sorted(hidden.items())),
    )


__all__ = [
    "ENGINE",
    "PageTextReport",
    "TextLayerOcrModel",
    "TextLayerOcrOptions",
    "TextLayerReport",
    "collect_text_layer_report",
    "drop_hidden_cells",
    "install_hint",
    "repair_shifted_cells",
    "tesseract_status",
]
