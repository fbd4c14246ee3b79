"""A throwaway Redis server (Debian's `redis-server`, which .ci/run installs) on 127.0.0.1
and Celery workers of dagster-celery's app using it as broker and result backend, for the
distributed-ingest tests. Each worker is its own process group, stopped by its id."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rag_assets_tests.support.paths import PROJECT_ROOT


def unavailable_reason() -> str | None:
    if shutil.which("redis-server") is None:
        return "no redis-server: apt-get install redis-server"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop(process: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM to the process group (a Celery warm shutdown), SIGKILL if it lingers."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)


class CeleryCluster:
    """`start(workers, env)`: Redis, then `workers` Celery workers (one task at a time each)
    with `env` (the store's settings) and this project importable; `stop()` ends them."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.root = Path(tempfile.mkdtemp(prefix="rag-assets-celery-"))
        self.processes: list[subprocess.Popen] = []
        self.names: list[str] = []

    @property
    def broker(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _spawn(self, args: list[str], log: str, env: dict | None = None) -> subprocess.Popen:
        with open(self.root / log, "wb") as out:
            process = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=self.root, start_new_session=True
            )
        self.processes.append(process)
        return process

    def start(self, workers: int, env: dict[str, str]) -> CeleryCluster:
        self._spawn(
            [
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.root),
            ],
            "redis.log",
        )
        # the module dagster-celery's app reads its broker from (what `dagster-celery worker start -y` writes)
        (self.root / "dagster_celery_config.py").write_text(
            f"broker_url = {self.broker!r}\nresult_backend = {self.broker!r}\n"
        )
        worker_env = {**env, "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), str(self.root)])}
        for number in range(1, workers + 1):
            name = f"rag-worker-{number}@127.0.0.1"
            self.names.append(name)
            self._spawn(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "dagster_celery.app",
                    "worker",
                    "--pool=solo",
                    "--prefetch-multiplier=1",
                    "--without-gossip",
                    "--without-mingle",
                    "-n",
                    name,
                    "--loglevel=INFO",
                ],
                f"worker-{number}.log",
                worker_env,
            )
        self._wait_for_workers()
        return self

    def _wait_for_workers(self, timeout: float = 120) -> None:
        from dagster_celery.make_app import make_app

        app = make_app({"broker": self.broker, "backend": self.broker})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if dead := [p.args[0] for p in self.processes if p.poll() is not None]:
                raise RuntimeError(f"{dead} exited; logs in {self.root}")
            try:
                answered = {name for reply in app.control.ping(timeout=1) for name in reply}
            except Exception:  # noqa: BLE001 - Redis still starting
                answered = set()
            if answered >= set(self.names):
                return
            time.sleep(0.5)
        raise TimeoutError(f"workers {self.names} did not answer within {timeout} s; logs in {self.root}")

    def log(self, name: str) -> str:
        return (self.root / name).read_text(errors="replace")

    def stop(self) -> None:
        try:
            for process in reversed(self.processes):  # workers first, Redis last
                _stop(process)
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
