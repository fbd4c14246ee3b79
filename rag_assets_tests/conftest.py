"""Shared fixtures: a real knowledge store built from the sample corpus through a real
Dagster instance (in-process executor), once per test session.

Tiers: a test is ``slow`` when it is marked so (real PDFs, benchmarks, the browser,
subprocess ingests) or when it needs ``sample_kb`` (the sample corpus ingested through
Dagster, a minute or more here). ``pytest -m "not slow"`` runs the rest.
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


def make_settings(root: Path):
    return load_settings().model_copy(update={"store": root / "knowledge", "dagster_home": root / "dagster"})


def pytest_collection_modifyitems(items):
    for item in items:
        if "sample_kb" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def sample_copy(tmp_path_factory) -> Path:
    """The sample corpus copied to a folder tests may modify."""
    target = tmp_path_factory.mktemp("samples") / "samples"
    shutil.copytree(SAMPLES_DIR, target, ignore=shutil.ignore_patterns("*.py", "README.md"))
    return target


@pytest.fixture(scope="session")
def sample_kb(tmp_path_factory, sample_copy):
    """(settings, instance, outcomes) of the sample corpus ingested through Dagster."""
    from rag_assets.defs.ingestion.runs import ingest, open_instance

    settings = make_settings(tmp_path_factory.mktemp("kb"))
    instance = open_instance(settings)
    outcomes = ingest([sample_copy], settings, instance)
    yield settings, instance, outcomes
    instance.dispose()


@pytest.fixture
def shared_dir() -> Path:
    if not SHARED.exists():
        pytest.skip(f"../shared is absent ({SHARED}); real-document tests need it")
    return SHARED
