"""LanceDB table of child vectors with the metadata the filters need."""

from __future__ import annotations

from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa

from rag_assets.index.filters import SearchFilters

TABLE = "children"


def _schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("child_id", pa.string()),
            ("parent_id", pa.string()),
            ("document_id", pa.string()),
            ("version", pa.string()),
            ("heading_path", pa.string()),
            ("pages", pa.list_(pa.int32())),
            ("language", pa.string()),
            ("document_type", pa.string()),
            ("effective_date", pa.string()),
            ("allowed_groups", pa.list_(pa.string())),
            ("model", pa.string()),
            ("vector", pa.list_(pa.float32(), dim)),
        ]
    )


class DenseIndex:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.db = lancedb.connect(str(self.directory))

    def _table(self, dim: int | None = None):
        if TABLE in self.db.list_tables().tables:
            return self.db.open_table(TABLE)
        if dim is None:
            return None
        return self.db.create_table(TABLE, schema=_schema(dim), exist_ok=True)

    def stage_version(self, document_id: str, version: str, rows: list[dict], dim: int, keep: set[str]) -> int:
        """Write one version of a document's rows beside the versions in `keep` (the
        published one), in one LanceDB commit; rows of any other version of this document
        (e.g. left by a killed run) are deleted in the same commit."""
        table = self._table(dim)
        data = pa.Table.from_pylist(rows, schema=_schema(dim))
        kept = ", ".join(f"'{v}'" for v in sorted(keep | {version}))
        (
            table.merge_insert(["child_id", "version"])
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .when_not_matched_by_source_delete(f"document_id = '{document_id}' AND version NOT IN ({kept})")
            .execute(data)
        )
        return len(rows)

    def drop_versions_except(self, document_id: str, version: str) -> None:
        table = self._table()
        if table is not None:
            table.delete(f"document_id = '{document_id}' AND version != '{version}'")

    def count(self, document_id: str, version: str | None = None) -> int:
        table = self._table()
        if table is None:
            return 0
        condition = f"document_id = '{document_id}'" + (f" AND version = '{version}'" if version else "")
        return table.count_rows(condition)

    def delete_document(self, document_id: str) -> None:
        table = self._table()
        if table is not None:
            table.delete(f"document_id = '{document_id}'")

    def search(self, vector: np.ndarray, filters: SearchFilters, limit: int = 20) -> list[dict]:
        table = self._table()
        if table is None:
            return []
        result = (
            table.search(vector.astype(np.float32), vector_column_name="vector")
            .distance_type("dot")
            .where(filters.lance_where(), prefilter=True)
            .select(["child_id", "parent_id", "document_id", "version", "_distance"])
            .limit(limit)
            .to_list()
        )
        return [
            {
                "child_id": row["child_id"],
                "parent_id": row["parent_id"],
                "document_id": row["document_id"],
                "version": row["version"],
                "score": 1.0 - float(row["_distance"]),
                "rank": rank,
            }
            for rank, row in enumerate(result, start=1)
        ]

    def rows(self, document_id: str | None = None, columns=None) -> pa.Table:
        table = self._table()
        if table is None:
            return pa.table({})
        query = table.search()
        if document_id is not None:
            query = query.where(f"document_id = '{document_id}'")
        if columns:
            query = query.select(columns)
        return query.limit(None).to_arrow()

    def versions(self) -> dict[str, set[str]]:
        rows = self.rows(columns=["document_id", "version"])
        result: dict[str, set[str]] = {}
        if rows.num_rows:
            for doc, version in zip(rows["document_id"].to_pylist(), rows["version"].to_pylist()):
                result.setdefault(doc, set()).add(version)
        return result
