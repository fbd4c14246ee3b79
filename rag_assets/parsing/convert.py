"""Docling conversion of one source file into a DoclingDocument saved as JSON."""

from __future__ import annotations

import importlib.metadata
import multiprocessing
import os
import pickle
import re
import shutil
import signal
import threading
import time
import traceback
from dataclasses import dataclass
from functools import lru_cache
from multiprocessing import reduction
from pathlib import Path
from typing import TYPE_CHECKING

from docling_core.types.doc import DoclingDocument, ImageRefMode

from rag_assets.errors import BudgetExceeded, DocumentError
from rag_assets.parsing import budget as budgets
from rag_assets.parsing.structure import apply_structure, document_title
from rag_assets.store import write_json_atomic
from rag_assets.text.language import detect_language

if TYPE_CHECKING:
    from rag_assets.parsing.pdf_ocr import TextLayerReport

DOCUMENT_FILE = "document.json"
MANIFEST_FILE = "manifest.json"


@dataclass
class ConversionResult:
    document: DoclingDocument
    manifest: dict

    @property
    def warnings(self) -> list[str]:
        return list(self.manifest.get("warnings", []))


@lru_cache(maxsize=2)
def _converter(artifacts_path: str | None):
    from docling.datamodel.base_models import InputFormat
    from docling.datamodel.pipeline_options import ConvertPipelineOptions
    from docling.document_converter import (
        DocumentConverter,
        HTMLFormatOption,
        MarkdownFormatOption,
        PowerpointFormatOption,
        WordFormatOption,
    )

    from rag_assets.parsing.pdf_pipeline import pdf_format_option

    # Docling's defaults for the other formats, allowing external plugins as the PDF
    # pipeline does: our plugin adds nothing to them, and Docling would otherwise warn
    # that it is not loaded.
    def simple() -> ConvertPipelineOptions:
        return ConvertPipelineOptions(allow_external_plugins=True)

    return DocumentConverter(
        allowed_formats=[InputFormat.PDF, InputFormat.DOCX, InputFormat.HTML, InputFormat.MD, InputFormat.PPTX],
        format_options={
            InputFormat.PDF: pdf_format_option(artifacts_path),
            InputFormat.DOCX: WordFormatOption(pipeline_options=simple()),
            InputFormat.HTML: HTMLFormatOption(pipeline_options=simple()),
            InputFormat.MD: MarkdownFormatOption(pipeline_options=simple()),
            InputFormat.PPTX: PowerpointFormatOption(pipeline_options=simple()),
        },
    )


def pipeline_description(artifacts_path: str | None = None) -> dict:
    from rag_assets.parsing.pdf_pipeline import pdf_pipeline_description

    return {
        "docling": importlib.metadata.version("docling-slim"),
        "docling_core": importlib.metadata.version("docling-core"),
        "docling_parse": importlib.metadata.version("docling-parse"),
        "pdf": pdf_pipeline_description(artifacts_path),
    }


def convert(source_path: Path, display_name: str, artifacts_path: str | None = None) -> DoclingDocument:
    return convert_with_report(source_path, display_name, artifacts_path)[0]


def convert_with_report(
    source_path: Path, display_name: str, artifacts_path: str | None = None
) -> tuple[DoclingDocument, TextLayerReport]:
    """The converted document and what the PDF OCR stage did to its pages (repairs, OCR, unreadable)."""
    from docling.datamodel.base_models import ConversionStatus

    from rag_assets.parsing.pdf_ocr import TextLayerReport, collect_text_layer_report
    from rag_assets.parsing.text_repair import repair_text

    if Path(source_path).suffix.lower() == ".jsonl":  # record collection (BEIR corpus): not Docling's
        from rag_assets.parsing.records import convert_records

        return convert_records(source_path, display_name), TextLayerReport()
    try:
        result = _converter(artifacts_path).convert(str(source_path), raises_on_error=False)
    except Exception as exc:  # Docling raises many types for unreadable input
        raise DocumentError(display_name, f"Docling could not convert it ({type(exc).__name__}: {exc})") from exc
    if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
        reasons = "; ".join(e.error_message for e in result.errors) or str(result.status)
        defect = office_defect(Path(source_path))  # say what is wrong with the file, not which class refused it
        if defect or _READER_REFUSED.search(reasons):
            raise DocumentError(display_name, defect or unreadable_reason(Path(source_path)))
        raise DocumentError(display_name, f"Docling conversion failed ({reasons})")
    return repair_text(result.document), collect_text_layer_report(result)


# a reader's refusal said as the problem with the file
_READER_REFUSED = re.compile(r"could not load document|could not initialize \w+ backend", re.IGNORECASE)
_MAIN_XML = {".docx": ("DOCX", "word/document.xml"), ".pptx": ("PPTX", "ppt/presentation.xml")}


def office_defect(source_path: Path) -> str | None:
    """What is wrong with an Office archive's parts: a missing part, malformed XML (its error,
    line and column), or a DTD (Office documents never declare entities: one is an XXE or
    entity-expansion attempt, its entities never expanded). None: not an Office file, or
    nothing found."""
    suffix = source_path.suffix.lower()
    if suffix not in _MAIN_XML:
        return None
    import zipfile

    from lxml import etree

    kind, main = _MAIN_XML[suffix]
    try:
        with zipfile.ZipFile(source_path) as archive:
            parts = [main] + sorted(n for n in archive.namelist() if n.endswith(".xml") and n != main)
            for part in parts:
                try:
                    with archive.open(part) as handle:
                        tree = etree.parse(
                            handle,
                            etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False),
                        )
                except KeyError:
                    return f"{kind} is incomplete: its archive has no {part}"
                except etree.XMLSyntaxError as exc:
                    return f"{kind} is malformed: {part} is not well-formed XML ({exc})"
                if tree.docinfo.internalDTD is not None or tree.docinfo.doctype:
                    return (
                        f"{kind} declares entities: {part} has a DTD (<!DOCTYPE …>), which Office documents "
                        "never hold; not read"
                    )
    except (zipfile.BadZipFile, OSError) as exc:
        return f"{kind} is corrupt or truncated ({exc})"
    return None


def unreadable_reason(source_path: Path) -> str:
    """Why a reader refused the file: the defect of an Office archive, else the kind of file
    that could not be read."""
    defect = office_defect(source_path)
    if defect:
        return defect
    suffix = source_path.suffix.lower()
    if suffix in _MAIN_XML:
        return (
            f"{_MAIN_XML[suffix][0]} could not be read: its parts are well-formed XML but not a document the "
            "reader understands"
        )
    kind = {".html": "HTML", ".htm": "HTML", ".md": "Markdown", ".markdown": "Markdown"}.get(
        suffix, suffix.lstrip(".").upper()
    )
    return f"{kind} could not be read (malformed, or a structure the reader cannot handle)"


def body_text(document: DoclingDocument) -> str:
    return "\n".join(getattr(item, "text", "") for item, _ in document.iterate_items())


def convert_and_save(
    source_path: Path,
    display_name: str,
    out_dir: Path,
    provenance: dict,
    artifacts_path: str | None = None,
    budget: budgets.Budget | None = None,
) -> ConversionResult:
    """Convert, save document.json with pictures under artifacts/, and a manifest of what produced it.
    With a `budget`, what can be counted before converting is, and the text after (BudgetExceeded)."""
    started = time.perf_counter()
    if budget is not None:
        budgets.check_before_conversion(source_path, display_name, budget)
    # before the reader, not only when it fails: a DTD it can parse is still refused, never read
    if defect := office_defect(source_path):
        raise DocumentError(display_name, defect)
    document, text_layer = convert_with_report(source_path, display_name, artifacts_path)
    if budget is not None:
        budgets.check_characters(len(body_text(document)), display_name, budget)
    records = source_path.suffix.lower() == ".jsonl"
    structure = {} if records else apply_structure(document)
    text = body_text(document)
    if not text.strip() and not document.tables:
        raise DocumentError(display_name, f"document converted to nothing: {_why_nothing(source_path, text_layer)}")
    staging = out_dir.with_name(out_dir.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    document.save_as_json(staging / DOCUMENT_FILE, artifacts_dir=Path("artifacts"), image_mode=ImageRefMode.REFERENCED)
    pages = len(document.pages) if document.pages else None
    manifest = {
        **provenance,
        "pipeline": pipeline_description(artifacts_path),
        "pages": pages,
        "tables": len(document.tables),
        "pictures": len(document.pictures),
        "detected_language": detect_language(text),
        "title": None if records else document_title(document, pdf_metadata(source_path).get("Title") or None),
        **structure,
        **text_layer.to_manifest(),
        "warnings": text_layer.warnings(),
        "seconds": round(time.perf_counter() - started, 3),
    }
    write_json_atomic(staging / MANIFEST_FILE, manifest)
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.replace(out_dir)
    return ConversionResult(document=document, manifest=manifest)


def pdf_metadata(source_path: Path) -> dict[str, str]:
    """A PDF's document information (Title, Author…); {} for any other file."""
    if source_path.suffix.lower() != ".pdf":
        return {}
    import pypdfium2

    pdf = pypdfium2.PdfDocument(str(source_path))
    try:
        return {key: value for key, value in pdf.get_metadata_dict().items() if value}
    finally:
        pdf.close()


def _why_nothing(source_path: Path, text_layer: TextLayerReport) -> str:
    from rag_assets.parsing.pdf_ocr import install_hint

    if source_path.suffix.lower() != ".pdf":
        return "no text"
    if text_layer.ocr_unavailable:
        return (
            f"no readable page: no text layer and OCR unavailable ({text_layer.ocr_unavailable}: "
            f"{install_hint(text_layer.languages)})"
        )
    if text_layer.ocr_pages or text_layer.pages:
        return "no readable page: no text layer, and OCR (Tesseract) found no text"
    return "no readable page: no text on any page"


def load_document(out_dir: Path) -> DoclingDocument:
    return DoclingDocument.load_from_json(out_dir / DOCUMENT_FILE)


# --- One conversion per child process, stopped at a time limit --------------------------------
#
# A Python thread cannot be stopped, and Docling's `document_timeout` is only checked between PDF
# pages (never for DOCX/HTML), so each conversion runs in a process of its own, which can be
# killed. Processes come from a multiprocessing fork server that imports Docling and builds the
# converter once (`conversion_server`) and has no thread of Dagster's, so forking it is safe and a
# conversion starts warm. Written on Process + Pipe rather than concurrent.futures: a
# ProcessPoolExecutor cannot stop a running task, does not say which signal killed a worker, and
# cannot return an exception whose __init__ pickle cannot replay (DocumentError(path, reason)).

SERVER_PRELOAD = [
    "docling.document_converter",
    "rag_assets.parsing.pdf_pipeline",
    "rag_assets.parsing.conversion_server",
]
TIMEOUT_SETTING = "RAG_ASSETS_CONVERT_TIMEOUT_S"
EXIT_GRACE_S = 10.0  # a child that has replied (or closed its end) gets this long to exit


class ConversionProcessTraceback(Exception):
    """Set as __cause__ of an exception re-raised from the conversion process: its traceback there."""


@lru_cache(maxsize=1)
def _process_context():
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(SERVER_PRELOAD)  # read once, when the server starts
    return context


def start_conversion_server() -> None:
    """Start the fork server now (it imports Docling: seconds) instead of at the first conversion;
    returns once it is ready."""
    process = _process_context().Process(target=int, name="conversion server check")
    process.start()  # returns when the server, past its imports, has forked the process
    process.join()


def convert_and_save_with_limit(
    source_path: Path,
    display_name: str,
    out_dir: Path,
    provenance: dict,
    timeout_s: float,
    artifacts_path: str | None = None,
    budget: budgets.Budget | None = None,
) -> dict:
    """`convert_and_save` in a child process given `timeout_s` seconds; returns the manifest (the
    child saved the document). A record collection (.jsonl) never reaches Docling: converted here.
    With a `budget`, the child is checked against it and stopped past its memory limit.

    As with any non-fork start method, the child imports the caller's main script (as
    `__mp_main__`): a script calling this must keep its work under `if __name__ == "__main__":`."""
    if Path(source_path).suffix.lower() == ".jsonl":
        return convert_and_save(source_path, display_name, out_dir, provenance, artifacts_path).manifest
    context = _process_context()
    conn, child_conn = context.Pipe()  # duplex: a socket pair, which can also carry file descriptors
    process = context.Process(
        target=_convert_in_child,
        name=f"convert {display_name}",
        args=(child_conn, Path(source_path), display_name, Path(out_dir), provenance, artifacts_path, budget),
    )
    process.start()  # the first time, returns once the fork server has imported Docling
    child_conn.close()
    settled = False  # the child replied or closed its end: it is exiting by itself
    try:
        _send_stdio(conn)
        over_budget = _wait(conn, process, timeout_s, budget)  # time and memory
        if over_budget is not None:
            _kill(process)
            shutil.rmtree(out_dir.with_name(out_dir.name + ".staging"), ignore_errors=True)  # convert_and_save's
            raise over_budget(display_name)
        settled = True
        try:
            kind, payload, child_traceback = conn.recv()
        except EOFError:
            process.join(EXIT_GRACE_S)
            code = process.exitcode
            if code is not None and code < 0:
                if budget is not None and getattr(process, "peak_data_mb", 0) >= 0.9 * budget.max_memory_mb:
                    raise budgets.over_memory(display_name, budget, process.peak_data_mb) from None
                raise DocumentError(display_name, f"conversion process died (signal {-code})") from None
            raise DocumentError(display_name, f"conversion process exited (code {code}) without a result") from None
    finally:
        conn.close()
        if settled:
            process.join(EXIT_GRACE_S)
        if process.is_alive():  # interrupted while waiting (run terminated, Ctrl-C), or stuck on its way out
            _kill(process)
        process.join()
    if kind == "error":
        raise _rebuilt_exception(payload) from ConversionProcessTraceback(child_traceback)
    if budget is not None:  # sampled every MEMORY_POLL_S: what the memory limit is measured against
        payload["peak_memory_mb"] = round(process.peak_data_mb)
    return payload


MEMORY_POLL_S = 0.1  # how often the parent reads the conversion process's memory


def _wait(conn, process, timeout_s: float, budget: budgets.Budget | None):
    """Wait for the child's reply (or its end); None when it came, else a function of the file
    name giving the error to raise (time limit, memory limit) once the child is stopped."""
    deadline = time.monotonic() + timeout_s
    process.peak_data_mb = 0.0
    high_since, held = None, 0.0  # since when, and at least how much, memory has stayed near its limit
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return lambda name: BudgetExceeded(
                name,
                f"conversion took longer than the {timeout_s:g} s limit ({TIMEOUT_SETTING}); stopped",
                setting=TIMEOUT_SETTING,
                limit=timeout_s,
                value=timeout_s,
            )
        if conn.poll(remaining if budget is None else min(remaining, MEMORY_POLL_S)):
            return None  # True on a reply, and on EOF when the child dies
        used = budgets.data_memory_mb(process.pid) if budget is not None else None
        if used is not None:
            process.peak_data_mb = max(process.peak_data_mb, used)
            if used > budget.max_memory_mb:
                return lambda name: budgets.over_memory(name, budget, used)
            if used <= budget.memory_plateau_fraction * budget.max_memory_mb:
                high_since = None
            else:
                now = time.monotonic()
                high_since, held = (now, used) if high_since is None else (high_since, min(held, used))
                if now - high_since >= budget.memory_plateau_s:
                    return lambda name: budgets.memory_plateau(name, budget, held, now - high_since)


def _convert_in_child(conn, source_path, display_name, out_dir, provenance, artifacts_path, budget=None) -> None:
    os.setpgid(0, 0)  # a group of its own, so a stop also reaches the tesseract processes it runs
    threading.Thread(target=_exit_with_parent, daemon=True).start()
    for fd in (1, 2):  # write where the parent writes now (a Dagster run's captured logs, a terminal)
        received = reduction.recv_handle(conn)
        os.dup2(received, fd)
        os.close(received)
    if budget is not None:
        budgets.limit_memory(budget)  # a sudden huge allocation fails here, not on the machine
    try:
        reply = (
            "manifest",
            convert_and_save(source_path, display_name, out_dir, provenance, artifacts_path, budget).manifest,
            "",
        )
    except Exception as exc:  # noqa: BLE001 - every error goes back to the parent
        if budget is not None and not isinstance(exc, BudgetExceeded) and budgets.is_memory_failure(exc):
            exc = budgets.over_memory(display_name, budget)
        reply = ("error", _portable_exception(exc), traceback.format_exc())
    conn.send(reply)
    conn.close()


def _exit_with_parent() -> None:
    """A parent killed outright (SIGKILL) cannot stop its conversion: the conversion stops itself."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        parent.join()  # returns when the process that asked for the conversion is gone
        os.killpg(0, signal.SIGKILL)


def _send_stdio(conn) -> None:
    for fd in (1, 2):
        try:
            reduction.send_handle(conn, fd, None)  # the destination pid is only used on Windows
        except OSError:  # the parent has no such stream
            with open(os.devnull, "wb") as null:
                reduction.send_handle(conn, null.fileno(), None)


def _kill(process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:  # the child has not made its group yet
        process.kill()
    process.join()


def _portable_exception(exc: BaseException):
    """The exception when it survives pickling, else (type, args, attributes): unpickling calls
    type(*args), which fails for an __init__ taking other arguments, e.g. DocumentError(path, reason)."""
    candidates: tuple[object, ...]
    try:
        candidates = (exc, (type(exc), exc.args, dict(vars(exc))))
    except TypeError:  # no __dict__
        candidates = (exc,)
    for payload in candidates:
        try:
            pickle.loads(pickle.dumps(payload))
            return payload
        except Exception:  # noqa: BLE001 - any pickling failure: try the next form
            continue
    return RuntimeError(f"{type(exc).__name__}: {exc}")


def _rebuilt_exception(payload) -> BaseException:
    if isinstance(payload, BaseException):
        return payload
    cls, args, attributes = payload
    exc = cls.__new__(cls, *args)  # what unpickling does, without calling __init__
    exc.args = args
    exc.__dict__.update(attributes)
    return exc
