"""Wall time of ingesting the sample corpus in-process and on Celery workers, each into a
fresh store with its Dagster instance on one throwaway PostgreSQL server (127.0.0.1), the
workers and Redis started as the tests start them (rag_assets_tests/support/celery_workers.py):

    python -m rag_assets_tests.celery_bench --workers 1 2

Prints one line per configuration; worker start-up is not counted (each worker loads its
embedder on its first step, which is)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from rag_assets.orchestration.ingest_runs import ingest
from rag_assets.orchestration.instance import open_instance
from rag_assets.settings import SAMPLES_DIR
from rag_assets_tests.support.celery_workers import CeleryCluster
from rag_assets_tests.support.postgres_server import PostgresServer
from rag_assets_tests.support.stores import make_settings, settings_env


def _ingest(settings, corpus: Path) -> tuple[float, list[str]]:
    instance = open_instance(settings)
    try:
        started = time.perf_counter()
        outcomes = ingest([corpus], settings, instance)
        return time.perf_counter() - started, sorted(o.status for o in outcomes)
    finally:
        instance.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[2])
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rag-assets-celery-bench-"))
    corpus = root / "samples"
    shutil.copytree(SAMPLES_DIR, corpus, ignore=shutil.ignore_patterns("*.py", "README.md"))
    server = PostgresServer().start()
    try:
        settings = make_settings(root / "in-process").model_copy(
            update={"dagster": "postgres", "postgres_url": server.database()}
        )
        seconds, statuses = _ingest(settings, corpus)
        print(f"in-process: {seconds:.1f} s {statuses}", flush=True)
        for workers in args.workers:
            cluster = CeleryCluster()
            settings = make_settings(root / f"celery-{workers}").model_copy(
                update={
                    "dagster": "postgres",
                    "postgres_url": server.database(),
                    "executor": "celery",
                    "celery_broker": cluster.broker,
                    "celery_runs": workers,
                }
            )
            try:
                cluster.start(workers, settings_env(settings))
                seconds, statuses = _ingest(settings, corpus)
            finally:
                cluster.stop()
            print(f"celery, {workers} worker(s), {workers} run(s) in flight: {seconds:.1f} s {statuses}", flush=True)
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
