"""Dense index: exact below the ANN threshold, IVF-PQ with refine above it (threshold forced
low here; the real one and its recall are measured by `rag-assets bench`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from rag_assets.index.dense import DenseIndex
from rag_assets.index.filters import SearchFilters

DIM = 32


def _rows(start: int, count: int, vectors: np.ndarray, groups=("public",)) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "child_id": f"c{start + i}",
                "parent_id": f"p{(start + i) // 4}",
                "document_id": f"d{(start + i) // 100}",
                "version": "v1",
                "heading_path": "",
                "pages": [1],
                "language": "fr",
                "document_type": None,
                "effective_date": None,
                "allowed_groups": list(groups),
                "model": "test",
                "vector": v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
    )


def _unit(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_index_built_past_threshold_updated_and_dropped_below(tmp_path):
    rng = np.random.default_rng(0)
    index = DenseIndex(tmp_path / "lancedb", ann_min_rows=600)
    vectors = _unit(rng, 500)
    index.add(_rows(0, 500, vectors), DIM)
    assert index.maintain_ann_index() == "exact" and index.ann_index() is None

    more = _unit(rng, 300)
    index.add(_rows(500, 300, more, groups=("claims",)), DIM)
    assert index.maintain_ann_index() == "index built"
    stats = index.ann_index()
    assert stats.index_type == "IVF_PQ" and stats.num_indexed_rows == 800 and stats.num_unindexed_rows == 0
    # the reader's groups prefilter through the label index: a claims row only for a claims reader
    assert index.search(more[5], SearchFilters.from_dict(None, ["claims"]), 1)[0]["child_id"] == "c505"
    assert "c505" not in {h["child_id"] for h in index.search(more[5], SearchFilters.from_dict(None, None), 10)}
    kinds = {column: i.index_type for i in index._table().list_indices() for column in i.columns}
    assert (kinds["allowed_groups"], kinds["document_id"]) == ("LabelList", "Bitmap")
    # a question's scope prefilters on its documents through the bitmap index
    scoped = SearchFilters.from_dict({"document_ids": ["d6"]}, ["claims"])
    assert {h["child_id"][:2] for h in index.search(more[5], scoped, 20)} == {"c6"}

    filters = SearchFilters.from_dict(None, None)
    queries = np.concatenate([vectors, more])[rng.choice(800, 20, replace=False)]
    recall = np.mean(
        [
            len(
                {h["child_id"] for h in index.search(q, filters, 10)}
                & {h["child_id"] for h in index.search(q, filters, 10, exact=True)}
            )
            / 10
            for q in queries
        ]
    )
    assert recall >= 0.9  # PQ candidates re-scored on the float vectors
    assert index.search(vectors[3], filters, 1)[0]["child_id"] == "c3"

    last = _unit(rng, 100)
    index.add(_rows(800, 100, last), DIM)  # unindexed rows are still searched, by a flat scan
    assert index.ann_index().num_unindexed_rows == 100
    assert index.search(last[50], filters, 1)[0]["child_id"] == "c850"
    assert index.maintain_ann_index() == "index updated"
    assert index.ann_index().num_unindexed_rows == 0

    for document in ("d5", "d6", "d7", "d8"):  # 500 rows left: under the threshold again
        index.delete_document(document)
    assert index.maintain_ann_index() == "index dropped" and index.ann_index() is None
    assert not index._table().list_indices()
    assert len(index.search(vectors[0], filters, 10)) == 10
