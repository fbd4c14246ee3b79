"""Parquet read/write for parents and children, with provenance in the file metadata."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

PROVENANCE_KEY = b"rag_assets.provenance"
PARENT_JSON_COLUMNS = ("blocks",)  # parents keep their blocks as JSON text


def write_rows(path: Path, rows: list[dict], provenance: dict, json_columns: tuple[str, ...] = ()) -> None:
    rows = [{k: (json.dumps(v, ensure_ascii=False) if k in json_columns else v) for k, v in r.items()} for r in rows]
    table = pa.Table.from_pylist(rows) if rows else pa.table({})
    table = table.replace_schema_metadata({PROVENANCE_KEY: json.dumps(provenance, sort_keys=True, default=str)})
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def read_rows(path: Path, json_columns: tuple[str, ...] = ()) -> list[dict]:
    rows = pq.read_table(path).to_pylist()
    for row in rows:
        for column in json_columns:
            if column in row:
                row[column] = json.loads(row[column])
    return rows


def read_provenance(path: Path) -> dict:
    metadata = pq.read_schema(path).metadata or {}
    return json.loads(metadata.get(PROVENANCE_KEY, b"{}"))
