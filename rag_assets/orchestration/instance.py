"""The Dagster instance the CLI, the tests and the UI share (DAGSTER_HOME): its dagster.yaml
is written from the settings, so one setting moves runs, events and partitions from SQLite
files under DAGSTER_HOME (the default) to a PostgreSQL database (dagster-postgres) that the
UI, the daemon and other machines reach too."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml
from dagster import DagsterInstance
from sqlalchemy.engine import make_url

from rag_assets.settings import Settings
from rag_assets.store import file_lock

HEADER = (
    "# Written by rag-assets from its settings (RAG_ASSETS_DAGSTER, RAG_ASSETS_POSTGRES_URL)\n"
    "# each time it opens the instance; a dagster.yaml without this line is left as it is.\n"
)
# What rag-assets wrote before the header existed: also ours to rewrite.
EARLIER = "telemetry:\n  enabled: false\n"


def instance_config(settings: Settings) -> dict:
    config: dict = {"telemetry": {"enabled": False}}
    if settings.dagster == "postgres":
        # the `storage` block puts runs, the event log and schedules in that one database
        config["storage"] = {"postgres": {"postgres_url": with_driver(settings.postgres_url)}}
    return config


def with_driver(postgres_url: str) -> str:
    """The URL naming psycopg2, the driver dagster-postgres installs: SQLAlchemy 2.1 reads a
    bare postgresql:// as psycopg 3 (dagster-io/dagster#33958)."""
    url = make_url(postgres_url)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg2")
    return url.render_as_string(hide_password=False)


def write_instance_config(settings: Settings) -> Path:
    """DAGSTER_HOME/dagster.yaml for these settings, unless someone else wrote that file;
    readable by its owner only, since a PostgreSQL URL may carry a password."""
    path = settings.dagster_home / "dagster.yaml"
    text = HEADER + yaml.safe_dump(instance_config(settings), sort_keys=False)
    current = path.read_text() if path.exists() else None
    if current is not None and not current.startswith(HEADER) and current != EARLIER:
        if settings.dagster == "postgres":
            raise ValueError(
                f"{path} was not written by rag-assets: set its storage to PostgreSQL yourself or remove the file"
            )
        return path
    if current != text:  # replaced whole: the UI or another process may be reading it
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".dagster.yaml.")  # mode 0600
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
        os.replace(tmp, path)
    return path


def open_instance(settings: Settings) -> DagsterInstance:
    settings.dagster_home.mkdir(parents=True, exist_ok=True)
    # Two processes opening a new instance at once both create its SQLite tables ("table
    # alembic_version already exists"): the first creates them, the other waits and opens.
    with file_lock(settings.dagster_home / ".instance.lock"):
        write_instance_config(settings)
        return DagsterInstance.from_config(str(settings.dagster_home))
