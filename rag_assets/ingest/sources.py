"""Source documents: validation, sidecar metadata and content-addressed copies."""

from __future__ import annotations

import mimetypes
import uuid
import zipfile
from collections.abc import Sequence
from pathlib import Path

from rag_assets.errors import DocumentError
from rag_assets.hashing import copy_hashed, sha256_text
from rag_assets.index.records import PUBLIC_GROUP, SourceRecord
from rag_assets.ingest.sidecars import EXTRA_KEYS, metadata_version, read_metadata
from rag_assets.settings import Settings
from rag_assets.store import MAX_NAME_BYTES, KnowledgeStore, safe_file_name, write_json_atomic

MEDIA_TYPES = {
    ".pdf": "application/pdf",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".html": "text/html",
    ".htm": "text/html",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    # a collection of records, one JSON object a line (BEIR corpus.jsonl): one section per record
    ".jsonl": "application/x-ndjson",
}


def _check_pdf(path: Path) -> None:
    with open(path, "rb") as handle:
        head = handle.read(1024)
    if b"%PDF-" not in head:
        kind = "HTML" if b"<html" in head.lower() or b"<!doctype" in head.lower() else "not a PDF"
        raise DocumentError(path, f"has a .pdf extension but its content is {kind} (no %PDF header)")
    import pypdfium2

    try:
        pdf = pypdfium2.PdfDocument(str(path))
    except pypdfium2.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            raise DocumentError(path, "PDF is encrypted (password protected)") from exc
        raise DocumentError(path, f"PDF is corrupt or truncated ({message})") from exc
    try:
        # A PDF with no text layer is a scan: the conversion OCRs it (or refuses it then, saying why).
        if len(pdf) == 0:
            raise DocumentError(path, "PDF has no pages")
    finally:
        pdf.close()


# Office archives and HTML checked for what they are, before any reader opens them
OFFICE_MAIN_PARTS = {
    ".docx": ("DOCX", "Word", "word/document.xml"),
    ".pptx": ("PPTX", "PowerPoint", "ppt/presentation.xml"),
}


def _check_office(path: Path) -> None:
    kind, program, main_part = OFFICE_MAIN_PARTS[path.suffix.lower()]
    try:
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
    except zipfile.BadZipFile as exc:
        raise DocumentError(path, f"{kind} is corrupt or truncated (not a readable ZIP archive: {exc})") from exc
    if main_part not in names:
        raise DocumentError(path, f"is not a {program} document: its archive has no {main_part}")


def _check_html(path: Path) -> None:
    with open(path, "rb") as handle:
        head = handle.read(65536)
    if b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 has NULs, with a BOM
        raise DocumentError(path, "HTML file holds binary data (NUL bytes), not text")


def _human(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{size:,} bytes"


def validate(path: Path, max_bytes: int) -> str:
    """Return the media type of a readable, supported file, or raise DocumentError."""
    if path.is_symlink():  # a link is refused by its own name, never followed here
        raise DocumentError(path, "is a symbolic link; links are not followed")
    if not path.exists():
        raise DocumentError(path, "file does not exist")
    if not path.is_file():
        raise DocumentError(path, "is not a regular file")
    media_type = MEDIA_TYPES.get(path.suffix.lower())
    if media_type is None:
        supported = ", ".join(sorted(MEDIA_TYPES))
        raise DocumentError(path, f"unsupported file type '{path.suffix or '(none)'}' (supported: {supported})")
    size = path.stat().st_size
    if size == 0:
        raise DocumentError(path, "file is empty (0 bytes)")
    if size > max_bytes:
        raise DocumentError(
            path, f"file is {_human(size)}, over the {_human(max_bytes)} limit (RAG_ASSETS_MAX_FILE_MB)"
        )
    if media_type == "application/pdf":
        _check_pdf(path)
    if path.suffix.lower() in OFFICE_MAIN_PARTS:
        _check_office(path)
    if media_type == "text/html":
        _check_html(path)
    return media_type


def metadata_top(settings: Settings, path: Path) -> Path | None:
    """Where a document's ``_defaults.meta.yaml`` lookup stops: the watched inbox, for the
    documents in it (a folder given to ``ingest`` is not recorded)."""
    return settings.inbox if Path(path).is_relative_to(settings.inbox) else None


def document_version(settings: Settings, path: Path, sha: str) -> str:
    """The document's data version: the sha256 of its bytes, with what its metadata and the
    store's default groups make of it, so that editing a sidecar re-runs the document (its
    groups are written into both indexes)."""
    metadata, groups = metadata_version(path, metadata_top(settings, path)), sorted(settings.default_groups)
    return sha if not metadata and groups == [PUBLIC_GROUP] else sha256_text(sha, metadata, groups)


def store_copy(store: KnowledgeStore, path: Path, stored_name: str) -> tuple[Path, str, int]:
    """Copy the file into the store, named by the sha256 of the bytes copied (read once):
    (stored path, sha256, size)."""
    store.sources_dir.mkdir(parents=True, exist_ok=True)
    part = store.sources_dir / f".{uuid.uuid4().hex}.part"  # named once its bytes are known
    try:
        with open(part, "xb") as sink:
            sha, size = copy_hashed(path, sink)
    except BaseException:
        part.unlink(missing_ok=True)
        raise
    if size == 0:  # emptied since it was validated
        part.unlink()
        raise DocumentError(path, "file is empty (0 bytes)")
    target = store.source_dir(sha) / stored_name
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():  # the same bytes, already stored: a reader of that copy keeps it
        part.unlink()
    else:
        part.replace(target)
    return target, sha, size


def ingest_source(
    store: KnowledgeStore,
    document_id: str,
    path: Path,
    max_bytes: int,
    default_groups: Sequence[str] = (PUBLIC_GROUP,),
    top: Path | None = None,
) -> SourceRecord:
    """Validate the file and its metadata (sidecars read no higher than ``top``; groups
    ``default_groups`` when none is named), copy it under its content hash and record what it is."""
    path = Path(path)
    media_type = validate(path, max_bytes)
    meta = read_metadata(path, top)
    warnings = []
    stored_name = safe_file_name(path.name)
    if stored_name != path.name:
        what = "too long" if len(path.name.encode(errors="replace")) > MAX_NAME_BYTES else "unsafe"
        warnings.append(f"file name {path.name!r} is {what}; stored as {stored_name!r}")
    target, sha, size = store_copy(store, path, stored_name)
    record = SourceRecord(
        document_id=document_id,
        original_path=str(path.resolve()),
        file_name=path.name,
        stored_path=str(target),
        sha256=sha,
        size_bytes=size,
        media_type=media_type or mimetypes.guess_type(path.name)[0] or "application/octet-stream",
        title_given=meta.title is not None,
        title=meta.title or path.stem,
        language=meta.language,
        document_type=meta.document_type,
        effective_date=meta.effective_date.isoformat() if meta.effective_date else None,
        allowed_groups=list(meta.allowed_groups or default_groups),
        extra=meta.model_dump(include=set(EXTRA_KEYS), exclude_none=True),
        warnings=warnings,
    )
    write_json_atomic(store.document_dir(document_id) / "source.json", record.to_dict())
    return record
