"""The dense index and the publication pointer on a local folder and on moto's S3 server
(127.0.0.1, HTTP), same rows and queries:

    python -m rag_assets_tests.object_store_bench --rows 10000 --queries 20 --flips 20

Prints one line per operation: local ms, S3 ms (medians where repeated). moto keeps objects in
memory, in the same process: the S3 figures are the protocol's cost, not a network's."""

from __future__ import annotations

import argparse
import logging
import socket
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from moto.server import ThreadedMotoServer

from rag_assets.index.dense import DenseIndex
from rag_assets.index.filters import SearchFilters
from rag_assets.index.publication import pointer
from rag_assets.object_store import ObjectStore
from rag_assets.store import KnowledgeStore

DIM = 384


def _rows(count: int, rng: np.random.Generator) -> pa.Table:
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return pa.Table.from_pylist(
        [
            {
                "child_id": f"c{i}",
                "parent_id": f"p{i // 5}",
                "document_id": f"d{i // 200}",
                "version": "v1",
                "heading_path": "",
                "pages": [1],
                "language": "fr",
                "document_type": None,
                "effective_date": None,
                "allowed_groups": ["public"],
                "model": "bench",
                "vector": v.tolist(),
            }
            for i, v in enumerate(vectors)
        ]
    )


def _ms(action) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def measure(store: KnowledgeStore, rows: pa.Table, queries: np.ndarray, flips: int) -> dict[str, float]:
    index = DenseIndex.of(store)
    figures = {"add rows (one commit)": _ms(lambda: index.add(rows, DIM))}
    reader = DenseIndex.of(store)
    filters = SearchFilters.from_dict(None, None)
    figures["first search (opens the table)"] = _ms(lambda: reader.search(queries[0], filters, 20))
    figures["search, top 20 (median)"] = statistics.median(
        _ms(lambda q=q: reader.search(q, filters, 20)) for q in queries
    )
    target = pointer(store)
    figures["publication flip (median)"] = statistics.median(
        _ms(lambda n=n: target.edit(lambda p, n=n: p.update({f"doc-{n}": {"version": "v1"}}) or True))
        for n in range(flips)
    )
    figures["publication stamp, per search (median)"] = statistics.median(_ms(target.stamp) for _ in range(flips))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--flips", type=int, default=20)
    args = parser.parse_args()
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's server logs every request
    rng = np.random.default_rng(0)
    rows, queries = _rows(args.rows, rng), _rows(args.queries, rng)["vector"].to_numpy(zero_copy_only=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    try:
        objects = ObjectStore(
            "s3://bench/kb", f"http://127.0.0.1:{port}", access_key_id="bench", secret_access_key="bench"
        )
        objects.client.create_bucket(Bucket="bench")
        with tempfile.TemporaryDirectory() as folder:
            local = measure(KnowledgeStore(Path(folder)), rows, queries, args.flips)
            remote = measure(KnowledgeStore(Path(folder) / "s3", objects), rows, queries, args.flips)
    finally:
        server.stop()
    print(f"{args.rows} rows of {DIM}-d vectors, {args.queries} queries, {args.flips} flips: local ms / S3 (moto) ms")
    for name in local:
        print(f"  {name}: {local[name]:.1f} / {remote[name]:.1f}")


if __name__ == "__main__":
    main()
