"""The Dagster instance chosen by one setting: SQLite under DAGSTER_HOME by default,
PostgreSQL (a real server on 127.0.0.1) with RAG_ASSETS_DAGSTER=postgres."""

from __future__ import annotations

import stat

import pytest
import yaml
from dagster import DynamicPartitionsDefinition, asset, materialize
from pydantic import ValidationError

from rag_assets.orchestration.instance import HEADER, open_instance
from rag_assets.settings import load_settings
from rag_assets_tests.support.stores import make_settings

documents = DynamicPartitionsDefinition(name="documents")


@asset(partitions_def=documents)
def page(context) -> str:
    return context.partition_key


def storage_of(instance) -> str:
    return type(instance.run_storage).__name__


def test_default_is_sqlite_under_dagster_home(tmp_path):
    settings = make_settings(tmp_path).model_copy(update={"dagster": "sqlite", "postgres_url": None})
    with open_instance(settings) as instance:
        assert storage_of(instance) == "SqliteRunStorage"
    written = (settings.dagster_home / "dagster.yaml").read_text()
    assert written.startswith(HEADER) and "storage" not in yaml.safe_load(written)


@pytest.mark.dagster_run
def test_postgres_selected_by_one_setting_and_shared_by_instances(postgres_server, tmp_path):
    settings = make_settings(tmp_path).model_copy(
        update={"dagster": "postgres", "postgres_url": postgres_server.database()}
    )
    with open_instance(settings) as instance:
        assert storage_of(instance) == "PostgresRunStorage"
        instance.add_dynamic_partitions("documents", ["a", "b"])
        assert materialize([page], instance=instance, partition_key="a").success
    config = settings.dagster_home / "dagster.yaml"
    written_url = yaml.safe_load(config.read_text())["storage"]["postgres"]["postgres_url"]
    assert written_url == settings.postgres_url.replace("postgresql://", "postgresql+psycopg2://")
    assert stat.S_IMODE(config.stat().st_mode) == 0o600  # the URL may carry a password
    # another instance on the same database (another process, the UI, another machine) sees it all
    with open_instance(settings.model_copy(update={"dagster_home": tmp_path / "elsewhere"})) as other:
        assert other.get_dynamic_partitions("documents") == ["a", "b"]
        assert other.get_latest_materialization_event(page.key).asset_materialization.partition == "a"
    # back to the default: the file is ours, so it follows the setting
    with open_instance(settings.model_copy(update={"dagster": "sqlite", "postgres_url": None})) as instance:
        assert storage_of(instance) == "SqliteRunStorage"


def test_a_dagster_yaml_written_by_someone_else_is_kept(tmp_path):
    settings = make_settings(tmp_path).model_copy(update={"dagster": "sqlite", "postgres_url": None})
    settings.dagster_home.mkdir(parents=True)
    own = "telemetry:\n  enabled: true\n"
    (settings.dagster_home / "dagster.yaml").write_text(own)
    open_instance(settings).dispose()
    assert (settings.dagster_home / "dagster.yaml").read_text() == own
    with pytest.raises(ValueError, match="not written by rag-assets"):
        open_instance(settings.model_copy(update={"dagster": "postgres", "postgres_url": "postgresql://x@127.0.0.1/x"}))


def test_postgres_needs_its_url(monkeypatch):
    monkeypatch.setenv("RAG_ASSETS_DAGSTER", "postgres")
    monkeypatch.delenv("RAG_ASSETS_POSTGRES_URL", raising=False)
    with pytest.raises(ValidationError, match="RAG_ASSETS_POSTGRES_URL"):
        load_settings()
    monkeypatch.setenv("RAG_ASSETS_POSTGRES_URL", "postgresql://rag:secret@127.0.0.1:5432/dagster")
    settings = load_settings()
    assert settings.dagster == "postgres" and "secret" not in repr(settings)


def test_test_stores_use_the_backend_the_pass_chose(dagster_storage, tmp_path):
    """RAG_ASSETS_TEST_DAGSTER=postgres (.ci/run's second pass) puts every test store's
    instance on the session's PostgreSQL server; without it, SQLite."""
    with open_instance(make_settings(tmp_path)) as instance:
        assert storage_of(instance) == {"sqlite": "SqliteRunStorage", "postgres": "PostgresRunStorage"}[dagster_storage]
