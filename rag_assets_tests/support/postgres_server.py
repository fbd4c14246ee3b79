"""A throwaway PostgreSQL server on 127.0.0.1 for the tests: a new cluster made by the
server's own initdb and pg_ctl (Debian's `postgresql` package, which .ci/run installs),
run as the `postgres` system user when the tests run as root, since PostgreSQL refuses
to run as root. Trust authentication: only this machine's loopback reaches it."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg2

SYSTEM_USER = "postgres"


def server_binaries() -> Path | None:
    """The folder holding initdb and pg_ctl: on PATH, else the newest Debian server."""
    if (found := shutil.which("pg_ctl")) and shutil.which("initdb"):
        return Path(found).resolve().parent
    servers = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    return servers[-1].parent if servers else None


def unavailable_reason() -> str | None:
    if server_binaries() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SYSTEM_USER)
        except KeyError:
            return f"running as root and no '{SYSTEM_USER}' system user to run PostgreSQL as"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """`start()` makes and starts the cluster, `database()` adds an empty database and
    returns its URL, `stop()` stops the server and removes the cluster."""

    def __init__(self) -> None:
        self.bin = server_binaries()
        self.port = _free_port()
        # its own folder under /tmp: the postgres user must reach it, which pytest's 0700 folders forbid
        self.root = Path(tempfile.mkdtemp(prefix="rag-assets-pg-"))
        self.user = pwd.getpwnam(SYSTEM_USER) if os.geteuid() == 0 else None
        if self.user:
            os.chown(self.root, self.user.pw_uid, self.user.pw_gid)

    def _run(self, *args: str) -> None:
        subprocess.run(
            [str(self.bin / args[0]), *args[1:]],
            check=True,
            capture_output=True,
            timeout=120,
            user=self.user.pw_uid if self.user else None,
            group=self.user.pw_gid if self.user else None,
            extra_groups=[] if self.user else None,
        )

    def start(self) -> PostgresServer:
        data = self.root / "data"
        self._run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-sync")
        # durability off: a test cluster lives for one session
        options = (
            f"-h 127.0.0.1 -p {self.port} -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run("pg_ctl", "-D", str(data), "-l", str(self.root / "server.log"), "-o", options, "-w", "start")
        return self

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def database(self) -> str:
        name = f"dagster_{uuid.uuid4().hex[:12]}"
        connection = psycopg2.connect(self.url())
        try:
            connection.autocommit = True  # CREATE DATABASE refuses to run in a transaction
            with connection.cursor() as cursor:
                cursor.execute(f"CREATE DATABASE {name}")
        finally:
            connection.close()
        return self.url(name)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
