"""Dagster instance benchmark (not a test): what many document partitions cost on SQLite
and on PostgreSQL, through the same open_instance the CLI uses.

    python -m rag_assets.benchmarking.dagster_instance [--partitions 10000] [--materialized 2000]
                                                       [--postgres-url postgresql://user@127.0.0.1:5432/empty_db]

Per backend, in a new instance (SQLite in a temporary DAGSTER_HOME; PostgreSQL in the
database named, which must be empty): adding the partitions in one call (as `ingest`
does), adding 200 more one call each (a sensor's request per file), listing them, checking
one, recording a materialization for some of them, reading which are materialized, and
the UI's own GraphQL query for a partitioned asset (partition keys, counts, statuses)
against a code server started for the purpose, with the webserver's connection pool (the
CLI and run workers open a connection per operation on PostgreSQL: dagster-postgres's NullPool).
Prints milliseconds (median of repeats).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable, TypeVar

from dagster import AssetMaterialization, Definitions, DynamicPartitionsDefinition, asset

from rag_assets.orchestration.instance import open_instance
from rag_assets.settings import load_settings

documents = DynamicPartitionsDefinition(name="bench_documents")


@asset(partitions_def=documents)
def bench_page(context) -> None:
    """Never run: the asset whose partitions the benchmark lists."""


defs = Definitions(assets=[bench_page])  # the code location the GraphQL query reads

PARTITION_QUERY = """
query ($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    ... on AssetNode {
      partitionKeys
      partitionStats { numMaterialized numPartitions numFailed }
      assetPartitionStatuses { ... on DefaultPartitionStatuses { materializedPartitions } }
    }
  }
}"""


T = TypeVar("T")


def _ms(call: Callable[[], T], repeats: int) -> tuple[float, T]:
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), result


def _graphql_ms(instance, repeats: int) -> float:
    from dagster_graphql.test.utils import define_out_of_process_context, execute_dagster_graphql

    # as `dagster-webserver` does with its defaults: PostgreSQL storage then keeps a pooled
    # connection instead of opening one per operation
    instance.optimize_for_webserver(statement_timeout=15_000, pool_recycle=3600, max_overflow=20)
    with define_out_of_process_context(__file__, None, instance) as context:

        def query():
            result = execute_dagster_graphql(context, PARTITION_QUERY, {"key": {"path": ["bench_page"]}})
            return len(result.data["assetNodeOrError"]["partitionKeys"])

        ms, count = _ms(query, repeats)
    return ms


def bench(label: str, settings, partitions: int, materialized: int, repeats: int) -> None:
    keys = [f"doc-{uuid.uuid4().hex}" for _ in range(partitions)]
    with open_instance(settings) as instance:
        start = time.perf_counter()
        instance.add_dynamic_partitions(documents.name, keys)
        bulk_ms = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        for n in range(200):
            instance.add_dynamic_partitions(documents.name, [f"one-{n}"])
        one_ms = (time.perf_counter() - start) * 1000 / 200
        list_ms, listed = _ms(lambda: instance.get_dynamic_partitions(documents.name), repeats)
        has_ms, _ = _ms(lambda: instance.has_dynamic_partition(documents.name, keys[-1]), repeats * 20)
        start = time.perf_counter()
        for key in keys[:materialized]:
            instance.report_runless_asset_event(AssetMaterialization(asset_key=bench_page.key, partition=key))
        event_ms = (time.perf_counter() - start) * 1000 / max(materialized, 1)
        done_ms, done = _ms(lambda: instance.get_materialized_partitions(bench_page.key), repeats)
        assert len(listed) == partitions + 200 and len(done) == materialized
        graphql_ms = _graphql_ms(instance, repeats)
    print(
        f"{label:10s} add {partitions} in one call {bulk_ms:8.0f} ms | add one {one_ms:6.1f} ms | "
        f"list {len(listed)} {list_ms:6.1f} ms | has one {has_ms:5.2f} ms | "
        f"record a materialization {event_ms:5.1f} ms | materialized partitions ({materialized}) "
        f"{done_ms:6.1f} ms | UI GraphQL partition query {graphql_ms:7.0f} ms",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--materialized", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--postgres-url", help="an empty PostgreSQL database to measure too")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="rag-assets-instance-bench-") as root:
        base = load_settings().model_copy(
            update={"store": Path(root) / "knowledge", "dagster": "sqlite", "postgres_url": None}
        )
        bench(
            "sqlite",
            base.model_copy(update={"dagster_home": Path(root) / "sqlite"}),
            args.partitions,
            args.materialized,
            args.repeats,
        )
        if args.postgres_url:
            bench(
                "postgres",
                base.model_copy(
                    update={
                        "dagster_home": Path(root) / "postgres",
                        "dagster": "postgres",
                        "postgres_url": args.postgres_url,
                    }
                ),
                args.partitions,
                args.materialized,
                args.repeats,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
