"""Docling conversion of one source file into a DoclingDocument saved as JSON."""

from __future__ import annotations

import importlib.metadata
import shutil
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from docling_core.types.doc import DoclingDocument, ImageRefMode

from rag_assets.errors import DocumentError
from rag_assets.language import detect_language
from rag_assets.store import write_json_atomic

DOCUMENT_FILE = "document.json"
MANIFEST_FILE = "manifest.json"


@dataclass
class ConversionResult:
    document: DoclingDocument
    manifest: dict


@lru_cache(maxsize=2)
def _converter(artifacts_path: str | None):
    from docling.datamodel.base_models import InputFormat
    from docling.document_converter import DocumentConverter

    from rag_assets.parsing.pdf_pipeline import pdf_format_option

    return DocumentConverter(
        allowed_formats=[InputFormat.PDF, InputFormat.DOCX, InputFormat.HTML, InputFormat.MD, InputFormat.PPTX],
        format_options={InputFormat.PDF: pdf_format_option(artifacts_path)},
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
    from docling.datamodel.base_models import ConversionStatus

    from rag_assets.parsing.text_repair import repair_text

    if Path(source_path).suffix.lower() == ".jsonl":  # record collection (BEIR corpus): not Docling's
        from rag_assets.parsing.records import convert_records

        return convert_records(source_path, display_name)
    try:
        result = _converter(artifacts_path).convert(str(source_path), raises_on_error=False)
    except Exception as exc:  # Docling raises many types for unreadable input
        raise DocumentError(display_name, f"Docling could not convert it ({type(exc).__name__}: {exc})") from exc
    if result.status not in (ConversionStatus.SUCCESS, ConversionStatus.PARTIAL_SUCCESS):
        reasons = "; ".join(e.error_message for e in result.errors) or str(result.status)
        raise DocumentError(display_name, f"Docling conversion failed ({reasons})")
    return repair_text(result.document)


def body_text(document: DoclingDocument) -> str:
    return "\n".join(getattr(item, "text", "") for item, _ in document.iterate_items())


def convert_and_save(
    source_path: Path,
    display_name: str,
    out_dir: Path,
    provenance: dict,
    artifacts_path: str | None = None,
) -> ConversionResult:
    """Convert, save document.json with pictures under artifacts/, and a manifest of what produced it."""
    started = time.perf_counter()
    document = convert(source_path, display_name, artifacts_path)
    text = body_text(document)
    if not text.strip() and not document.tables:
        reason = "no text layer (scanned PDF? OCR is not enabled)" if source_path.suffix.lower() == ".pdf" else "no text"
        raise DocumentError(display_name, f"document converted to nothing: {reason}")
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
        "seconds": round(time.perf_counter() - started, 3),
    }
    write_json_atomic(staging / MANIFEST_FILE, manifest)
    shutil.rmtree(out_dir, ignore_errors=True)
    staging.replace(out_dir)
    return ConversionResult(document=document, manifest=manifest)


def load_document(out_dir: Path) -> DoclingDocument:
    return DoclingDocument.load_from_json(out_dir / DOCUMENT_FILE)
