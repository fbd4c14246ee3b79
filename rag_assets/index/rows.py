"""Parquet read/write for parents and children (polars), with provenance in the file's
key-value metadata under ``rag_assets.provenance``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl

PROVENANCE_KEY = "rag_assets.provenance"
PARENT_JSON_COLUMNS = ("blocks", "boxes", "page_sizes")  # parents keep these as JSON text
CHILD_JSON_COLUMNS = ("boxes",)


def write_rows(path: Path, rows: list[dict], provenance: dict, json_columns: tuple[str, ...] = ()) -> None:
    if json_columns:
        rows = [
            {k: (json.dumps(v, ensure_ascii=False) if k in json_columns else v) for k, v in r.items()} for r in rows
        ]
    frame = pl.DataFrame(rows, infer_schema_length=None)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    frame.write_parquet(tmp, metadata={PROVENANCE_KEY: json.dumps(provenance, sort_keys=True, default=str)})
    os.replace(tmp, path)


def read_rows(path: Path, json_columns: tuple[str, ...] = ()) -> list[dict]:
    rows = pl.read_parquet(path).to_dicts()
    for row in rows:
        for column in json_columns:
            if column in row:
                row[column] = json.loads(row[column])
    return rows
