"""What the store records about each source document (``documents/<id>/source.json``),
read by both sides: the ingestion writes it, readers take titles, groups and dates from it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from rag_assets.store import IDENTITY_FILE, KnowledgeStore, read_json

PUBLIC_GROUP = "public"


@dataclass
class SourceRecord:
    document_id: str
    original_path: str
    file_name: str
    stored_path: str
    sha256: str
    size_bytes: int
    media_type: str
    title: str
    language: str | None
    document_type: str | None
    effective_date: str | None
    allowed_groups: list[str] = field(default_factory=lambda: [PUBLIC_GROUP])
    title_given: bool = False  # the sidecar named it; otherwise the converted document's own title wins
    extra: dict = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def load_source_record(store: KnowledgeStore, document_id: str) -> SourceRecord:
    return SourceRecord(**read_json(store.document_dir(document_id) / "source.json"))


def document_identity(store: KnowledgeStore, record: SourceRecord, folder: Path | None = None) -> dict:
    """What names the document (title, insurer, product, branch, document_type, edition; see
    parsing/identity.py), as the parents stage read it: from a published version's ``folder``,
    else the latest one; {} before that stage ran."""
    path = folder / IDENTITY_FILE if folder is not None else store.identity_path(record.document_id)
    return read_json(path)["identity"] if path.exists() else {}


def document_title(store: KnowledgeStore, record: SourceRecord, folder: Path | None = None) -> str:
    """The sidecar's title, else the title read from the document itself (its identity, else
    the one recorded at conversion), else the file name."""
    if record.title_given:
        return record.title
    if title := document_identity(store, record, folder).get("title"):
        return title
    manifest = store.docling_dir(record.document_id) / "manifest.json"
    return (read_json(manifest).get("title") if manifest.exists() else None) or record.title
