"""LanceDB table of child vectors with the metadata the filters need.

Dense search is exact (a flat scan) below `ANN_MIN_ROWS` rows; past it an IVF-PQ index
answers and its candidates are re-scored on the float vectors (refine), which keeps recall@10
against exact search at or above 0.99. The threshold and the search parameters come from
`rag-assets bench` (BENCHMARKS.md): the scan's p95 stays under a few milliseconds below it.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import Bitmap, IvfPq, LabelList

from rag_assets.index.filters import SearchFilters
from rag_assets.store import LANCEDB_NAME, KnowledgeStore

TABLE = "children"
ANN_MIN_ROWS = 50_000
ROWS_PER_PARTITION = 1_000  # IVF partitions: about one per thousand rows
# probes and refinement that keep recall@10 at 1.0 on a 100k-children store (evaluations/tuning.md)
NPROBES = 50  # partitions searched per query
REFINE_FACTOR = 10  # PQ candidates re-scored on float vectors: limit x this, each a random read
# beside the IVF-PQ index, scalar indexes on what every search is prefiltered on, each of which
# would otherwise read its column in every row: the reader's groups (`array_has_any`), and the
# documents of a question's scope (`document_id IN (…)`: an insurer named, its policies only)
GROUPS_COLUMN = "allowed_groups"
SCALAR_INDEXES = {GROUPS_COLUMN: LabelList, "document_id": Bitmap}
REINDEX_SHARE = 0.1  # unindexed rows (scanned flat) above this share of the table: fold them in


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
    def __init__(
        self, location: Path | str, ann_min_rows: int = ANN_MIN_ROWS, storage_options: dict[str, str] | None = None
    ):
        """`location`: a folder, or an object-store URI (s3://…) reached with `storage_options`."""
        self.location = str(location)
        # The table stays open; each read still sees the latest commit (another process's).
        self.db = lancedb.connect(
            self.location, read_consistency_interval=dt.timedelta(0), storage_options=storage_options
        )
        self.ann_min_rows = ann_min_rows
        self._open: lancedb.table.Table | None = None

    @classmethod
    def of(cls, store: KnowledgeStore, **options) -> DenseIndex:
        """The store's dense index: under its folder, or on its object store."""
        if store.objects is None:
            return cls(store.lancedb_dir, **options)
        return cls(store.objects.uri_of(LANCEDB_NAME), storage_options=store.objects.storage_options(), **options)

    def _table(self, dim: int | None = None):
        if self._open is None:
            if TABLE in self.db.list_tables().tables:
                self._open = self.db.open_table(TABLE)
            elif dim is not None:
                self._open = self.db.create_table(TABLE, schema=_schema(dim), exist_ok=True)
        return self._open

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

    def counts(self) -> dict[tuple[str, str], int]:
        """Rows per (document id, version), in one scan of those two columns."""
        rows = self.rows(columns=["document_id", "version"])
        if not rows.num_rows:
            return {}
        grouped = rows.group_by(["document_id", "version"]).aggregate([([], "count_all")])
        return dict(
            zip(
                zip(grouped["document_id"].to_pylist(), grouped["version"].to_pylist()),
                grouped["count_all"].to_pylist(),
            )
        )

    def delete_document(self, document_id: str) -> None:
        table = self._table()
        if table is not None:
            table.delete(f"document_id = '{document_id}'")

    def add(self, rows: pa.Table, dim: int) -> None:
        """Append rows (the table's columns) in one commit: bulk loads, as the benchmark's."""
        schema = _schema(dim)
        self._table(dim).add(rows.select(schema.names).cast(schema))

    def ann_index(self):
        """The IVF-PQ index's statistics, None while search is exact."""
        table = self._table()
        if table is None:
            return None
        names = [i.name for i in table.list_indices() if "vector" in i.columns]
        return table.index_stats(names[0]) if names else None

    def maintain_ann_index(self) -> str:
        """Exact search below `ann_min_rows` rows (any index dropped), an IVF-PQ index above
        (built once, unindexed rows folded in when they pass REINDEX_SHARE) and the filters'
        scalar indexes beside it. Returns what it did to the IVF-PQ index."""
        table = self._table()
        if table is None:
            return "empty"
        rows, stats = table.count_rows(), self.ann_index()
        if rows < self.ann_min_rows:
            if not table.list_indices():
                return "exact"
            for index in table.list_indices():
                table.drop_index(index.name)
            return "index dropped"
        done = "index current"
        if stats is None:
            dim = table.schema.field("vector").type.list_size
            table.create_index(
                "vector",
                replace=True,
                config=IvfPq(
                    distance_type="dot", num_partitions=max(1, rows // ROWS_PER_PARTITION), num_sub_vectors=dim // 8
                ),
            )
            done = "index built"
        elif stats.num_unindexed_rows > REINDEX_SHARE * rows:
            table.optimize()
            done = "index updated"
        indexed = {column for index in table.list_indices() for column in index.columns}
        for column, kind in SCALAR_INDEXES.items():
            if column not in indexed:
                table.create_index(column, config=kind())
        return done

    def search(self, vector: np.ndarray, filters: SearchFilters, limit: int = 20, exact: bool = False) -> list[dict]:
        """Children nearest to `vector` (dot product of unit vectors); `exact` scans every
        row even when the ANN index exists (the reference for recall)."""
        table = self._table()
        if table is None:
            return []
        query = (
            table.search(vector.astype(np.float32), vector_column_name="vector")
            .distance_type("dot")
            .where(filters.lance_where(), prefilter=True)
            .select(["child_id", "parent_id", "document_id", "version", "_distance"])
            .limit(limit)
        )
        query = query.bypass_vector_index() if exact else query.nprobes(NPROBES).refine_factor(REFINE_FACTOR)
        result = query.to_list()
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
