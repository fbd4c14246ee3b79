"""Record collections (BEIR ``corpus.jsonl`` layout) as one DoclingDocument.

Each line is a JSON record ``{"_id": ..., "title": ..., "text": ...}``. Every record
becomes its own section: a group named ``record:<_id>`` holding the title as a title item
(the id when there is no title) and the text as a paragraph, so the parents stage makes
exactly one parent per record and carries the record id (``Parent.record_id``). A
benchmark corpus of thousands of short records is thus one document (or a few shards),
not thousands of partitions.
"""

from __future__ import annotations

import json
from pathlib import Path

from docling_core.types.doc import DocItemLabel, DoclingDocument, GroupLabel

from rag_assets.errors import DocumentError

RECORD_GROUP_PREFIX = "record:"
CONVERTER_VERSION = "records-1"


def convert_records(source_path: Path, display_name: str) -> DoclingDocument:
    document = DoclingDocument(name=Path(display_name).stem)
    seen: set[str] = set()
    with open(source_path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DocumentError(display_name, f"line {number} is not JSON ({exc.msg})") from exc
            if not isinstance(record, dict) or "_id" not in record:
                raise DocumentError(display_name, f"line {number} is not a record with an `_id`")
            record_id = str(record["_id"])
            if record_id in seen:
                raise DocumentError(display_name, f"line {number}: duplicate record id {record_id!r}")
            seen.add(record_id)
            title = " ".join(str(record.get("title") or "").split())
            text = str(record.get("text") or "").strip() or title
            group = document.add_group(label=GroupLabel.SECTION, name=f"{RECORD_GROUP_PREFIX}{record_id}")
            # a title item (not a section header): always starts a new section, whatever its words
            document.add_title(text=title or record_id, parent=group)
            if text:
                document.add_text(label=DocItemLabel.TEXT, text=text, parent=group)
    if not seen:
        raise DocumentError(display_name, "no record in the file")
    return document
