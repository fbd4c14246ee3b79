"""Parents/children Parquet (polars): rows and provenance come back as written, and files
written before (pyarrow) and after read the same."""

from __future__ import annotations

import json

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from rag_assets.index.rows import PARENT_JSON_COLUMNS, PROVENANCE_KEY, read_rows, write_rows

PARENTS = [
    {
        "parent_id": "p1",
        "ordinal": 0,
        "heading_path": ["1. Garanties"],
        "text": "Texte",
        "pages": [1, 2],
        "picture_paths": [],
        "record_id": None,
        "blocks": [{"kind": "text", "text": "Texte", "refs": ["#/texts/0"], "caption": None, "header_end": None}],
    },
    {
        "parent_id": "p2",
        "ordinal": 1,
        "heading_path": [],
        "text": "| a | b |",
        "pages": [],
        "picture_paths": [],
        "record_id": None,
        "blocks": [{"kind": "table", "text": "| a | b |", "refs": [], "header_end": 9}],
    },
]
PROVENANCE = {"stage": "parents", "code_version": "3", "source_sha256": "ab" * 32}


def test_rows_and_provenance_round_trip(tmp_path):
    path = tmp_path / "parents.parquet"
    write_rows(path, PARENTS, PROVENANCE, PARENT_JSON_COLUMNS)
    assert read_rows(path, PARENT_JSON_COLUMNS) == PARENTS
    # the provenance is the file's key-value metadata, readable by pyarrow as by polars
    assert json.loads(pq.read_metadata(path).metadata[PROVENANCE_KEY.encode()]) == PROVENANCE
    assert json.loads(pl.read_parquet_metadata(path)[PROVENANCE_KEY]) == PROVENANCE
    # and the rows by pyarrow: the blocks as JSON text
    assert [json.loads(b) for b in pq.read_table(path).column("blocks").to_pylist()] == [p["blocks"] for p in PARENTS]


def test_a_file_written_by_pyarrow_reads_the_same(tmp_path):
    """The writer the stores were built with: pa.Table.from_pylist, provenance in the schema metadata."""
    path = tmp_path / "parents.parquet"
    rows = [{**p, "blocks": json.dumps(p["blocks"], ensure_ascii=False)} for p in PARENTS]
    table = pa.Table.from_pylist(rows).replace_schema_metadata({PROVENANCE_KEY.encode(): json.dumps(PROVENANCE)})
    pq.write_table(table, path)
    assert read_rows(path, PARENT_JSON_COLUMNS) == PARENTS
    assert json.loads(pl.read_parquet_metadata(path)[PROVENANCE_KEY]) == PROVENANCE


def test_no_rows(tmp_path):
    path = tmp_path / "children.parquet"
    write_rows(path, [], PROVENANCE)
    assert read_rows(path) == []
    assert json.loads(pq.read_metadata(path).metadata[PROVENANCE_KEY.encode()]) == PROVENANCE
