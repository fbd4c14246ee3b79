"""Settings for a test store under a folder of its own, its Dagster instance on SQLite or, for the
session's ``RAG_ASSETS_TEST_DAGSTER=postgres`` run, on the throwaway PostgreSQL server."""

from __future__ import annotations

import os
from pathlib import Path

from rag_assets.settings import load_settings

TEST_DAGSTER = os.environ.get("RAG_ASSETS_TEST_DAGSTER", "sqlite")
_postgres = None  # the session's server under RAG_ASSETS_TEST_DAGSTER=postgres


def use_postgres(server) -> None:
    """Give every store made from now on a database of its own on ``server`` (None: SQLite again)."""
    global _postgres
    _postgres = server


def make_settings(root: Path):
    settings = load_settings().model_copy(update={"store": root / "knowledge", "dagster_home": root / "dagster"})
    if _postgres is not None:
        settings = settings.model_copy(update={"dagster": "postgres", "postgres_url": _postgres.database()})
    return settings


def settings_env(settings) -> dict[str, str]:
    """The environment giving a subprocess these settings' store and Dagster instance."""
    env = {
        **os.environ,
        "RAG_ASSETS_STORE": str(settings.store),
        "DAGSTER_HOME": str(settings.dagster_home),
        "RAG_ASSETS_DAGSTER": settings.dagster,
    }
    if settings.postgres_url:
        env["RAG_ASSETS_POSTGRES_URL"] = settings.postgres_url
    return env


def knowledge_base_of(root: Path, documents: dict[str, str]):
    """A store under ``root`` holding ``documents`` (file name -> text, Markdown), ingested through
    Dagster, opened with the client (search and ask)."""
    from rag_assets.client import KnowledgeBase
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance

    folder = root / "docs"
    folder.mkdir()
    for name, text in documents.items():
        (folder / name).write_text(text, encoding="utf-8")
    settings = make_settings(root / "kb")
    with open_instance(settings) as instance:
        outcomes = ingest([folder], settings, instance)
    assert all(o.status != "failed" for o in outcomes), [(o.path.name, o.status) for o in outcomes]
    return KnowledgeBase.open(settings.store)
