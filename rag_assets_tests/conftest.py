"""Shared fixtures: a real knowledge store built from the sample corpus through a real
Dagster instance (in-process executor), once per test session.

Tiers: a test is ``slow`` when it is marked so (real PDFs, benchmarks, the browser,
subprocess ingests) or when it needs ``sample_kb`` (the sample corpus ingested through
Dagster, a minute or more here). ``pytest -m "not slow"`` runs the rest. A test is ``real_pdf``
when it reads the real documents of ``../shared`` (the ``shared_dir`` fixture, or marked so);
``pytest -m "not real_pdf"`` is what a clone without ``../shared`` can run, none of it skipped
for want of ``../shared``. The markers ``ocr``, ``dagster_run``, ``browser``, ``postgres`` and
``celery`` (pyproject.toml) name what else a test needs; FIXTURE_MARKERS applies them for the
fixtures that imply them. Helpers the tests import live in rag_assets_tests/support/.

The Dagster instance: SQLite under each test store, or, with
``RAG_ASSETS_TEST_DAGSTER=postgres``, a database of its own per store on one throwaway
PostgreSQL server on 127.0.0.1 (rag_assets_tests/support/postgres_server.py) for the session.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "2")

from rag_assets.settings import SAMPLES_DIR  # noqa: E402
from rag_assets_tests.support import stores  # noqa: E402
from rag_assets_tests.support.paths import SHARED, refuse_golden_update_in_ci  # noqa: E402


def pytest_configure(config):
    refuse_golden_update_in_ci(os.environ)


# A fixture implying a cost marks every test using it (directly or through another fixture).
FIXTURE_MARKERS = {
    "sample_kb": ("slow", "dagster_run"),
    "hostile_store": ("dagster_run",),  # security/conftest.py
    "evidence_store": ("dagster_run",),  # security/conftest.py
    "postgres_server": ("postgres",),
    "browser": ("browser",),  # ui/test_dagster_ui.py
    "shared_dir": ("real_pdf",),
}


def pytest_collection_modifyitems(items):
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        for fixture, markers in FIXTURE_MARKERS.items():
            if fixture in fixtures:
                for marker in markers:
                    item.add_marker(getattr(pytest.mark, marker))


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server on 127.0.0.1 for the session (skips, saying why, without one)."""
    from rag_assets_tests.support.postgres_server import PostgresServer, unavailable_reason

    if reason := unavailable_reason():
        pytest.skip(reason)
    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="session", autouse=True)
def dagster_storage(request):
    if stores.TEST_DAGSTER == "postgres":
        stores.use_postgres(request.getfixturevalue("postgres_server"))
    yield stores.TEST_DAGSTER
    stores.use_postgres(None)


@pytest.fixture(scope="session")
def sample_copy(tmp_path_factory) -> Path:
    """The sample corpus copied to a folder tests may modify."""
    target = tmp_path_factory.mktemp("samples") / "samples"
    shutil.copytree(SAMPLES_DIR, target, ignore=shutil.ignore_patterns("*.py", "README.md"))
    return target


@pytest.fixture(scope="session")
def sample_kb(tmp_path_factory, sample_copy):
    """(settings, instance, outcomes) of the sample corpus ingested through Dagster."""
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance

    settings = stores.make_settings(tmp_path_factory.mktemp("kb"))
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
