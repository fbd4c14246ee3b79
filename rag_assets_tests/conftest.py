"""Shared fixtures: a real knowledge store built from the sample corpus through a real
Dagster instance (in-process executor), once per test session.

Tiers: a test is ``slow`` when it is marked so (real PDFs, benchmarks, the browser,
subprocess ingests) or when it needs ``sample_kb`` (the sample corpus ingested through
Dagster, a minute or more here). ``pytest -m "not slow"`` runs the rest. A test is ``real_pdf``
when it reads the real documents of ``../shared`` (the ``shared_dir`` fixture, or marked so);
``pytest -m "not real_pdf"`` is what a clone without ``../shared`` can run, none of it skipped
for want of ``../shared``.

The Dagster instance: SQLite under each test store, or, with
``RAG_ASSETS_TEST_DAGSTER=postgres``, a database of its own per store on one throwaway
PostgreSQL server on 127.0.0.1 (rag_assets_tests/postgres_server.py) for the session.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "2")

from rag_assets.settings import SAMPLES_DIR, load_settings  # noqa: E402

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SHARED = PROJECT_ROOT.parent / "shared"
TEST_DAGSTER = os.environ.get("RAG_ASSETS_TEST_DAGSTER", "sqlite")
UPDATE_GOLDEN = "RAG_ASSETS_UPDATE_GOLDEN"  # rewrite golden files instead of comparing (parsing/test_golden_pages.py)
_postgres = None  # the session's server under RAG_ASSETS_TEST_DAGSTER=postgres


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


def pytest_configure(config):
    refuse_golden_update_in_ci(os.environ)


def refuse_golden_update_in_ci(environ) -> None:
    """In CI a rewritten golden file would pass whatever the product does: stop the run instead."""
    if environ.get(UPDATE_GOLDEN) and environ.get("CI", "").lower() not in ("", "0", "false"):
        raise pytest.UsageError(
            f"{UPDATE_GOLDEN} is set in CI (CI={environ['CI']}): golden files are rewritten on a developer's "
            "machine and the diff reviewed, never in CI"
        )


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        if "sample_kb" in fixtures:
            item.add_marker(pytest.mark.slow)
        if "shared_dir" in fixtures:
            item.add_marker(pytest.mark.real_pdf)


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server on 127.0.0.1 for the session (skips, saying why, without one)."""
    from rag_assets_tests.postgres_server import PostgresServer, unavailable_reason

    if reason := unavailable_reason():
        pytest.skip(reason)
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session", autouse=True)
def dagster_storage(request):
    global _postgres
    if TEST_DAGSTER == "postgres":
        _postgres = request.getfixturevalue("postgres_server")
    yield TEST_DAGSTER
    _postgres = None


@pytest.fixture(scope="session")
def sample_copy(tmp_path_factory) -> Path:
    """The sample corpus copied to a folder tests may modify."""
    target = tmp_path_factory.mktemp("samples") / "samples"
    shutil.copytree(SAMPLES_DIR, target, ignore=shutil.ignore_patterns("*.py", "README.md"))
    return target


@pytest.fixture(scope="session")
def sample_kb(tmp_path_factory, sample_copy):
    """(settings, instance, outcomes) of the sample corpus ingested through Dagster."""
    from rag_assets.defs.ingestion.runs import ingest
    from rag_assets.defs.instance import open_instance

    settings = make_settings(tmp_path_factory.mktemp("kb"))
    instance = open_instance(settings)
    outcomes = ingest([sample_copy], settings, instance)
    yield settings, instance, outcomes
    instance.dispose()


@pytest.fixture
def kb(sample_kb):
    """The sample knowledge base (built once per session through Dagster), opened fresh."""
    from rag_assets.client import KnowledgeBase

    settings, _, outcomes = sample_kb
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        pytest.fail("sample corpus did not ingest: " + "; ".join(f"{o.path.name}: {o.message}" for o in failed))
    return KnowledgeBase.open(settings.store)


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.exists():
        pytest.skip(f"../shared is absent ({SHARED}); real-document tests need it")
    return SHARED
