"""Settings from the environment (pydantic-settings): the README's variables and defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from rag_assets.document_budget import Budget
from rag_assets.object_store import ObjectStore
from rag_assets.retrieve.fusion import Fusion
from rag_assets.settings import PROJECT_ROOT, Settings, load_settings

VARIABLES = [
    "RAG_ASSETS_STORE",
    "DAGSTER_HOME",
    "RAG_ASSETS_EMBEDDER",
    "RAG_ASSETS_MAX_FILE_MB",
    "RAG_ASSETS_CONVERT_TIMEOUT_S",
    "RAG_ASSETS_INBOX",
    "RAG_ASSETS_LLM_BASE_URL",
    "RAG_ASSETS_LLM_API_KEY",
    "RAG_ASSETS_LLM_MODEL",
    "RAG_ASSETS_LLM_ENDPOINTS",
    "RAG_ASSETS_LLM_GGUF",
    "RAG_ASSETS_LLM_MULTIMODAL",
    "RAG_ASSETS_RERANKER",
    "RAG_ASSETS_EXECUTOR",
    "RAG_ASSETS_CELERY_BROKER",
    "RAG_ASSETS_OBJECT_STORE",
    "RAG_ASSETS_S3_ENDPOINT",
    "RAG_ASSETS_S3_SECRET_ACCESS_KEY",
    "RAG_ASSETS_DEFAULT_GROUPS",
    "RAG_ASSETS_MAX_PAGES",
    "RAG_ASSETS_MAX_TOKENS",
    "RAG_ASSETS_MEMORY_PLATEAU_FRACTION",
]


@pytest.fixture
def env(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_defaults(env):
    settings = load_settings()
    assert settings.store == PROJECT_ROOT / "data" / "knowledge"
    assert settings.dagster_home == settings.store / "dagster"
    assert settings.inbox == PROJECT_ROOT / "data" / "inbox"
    assert settings.max_file_bytes == 200 * 1024 * 1024
    assert settings.convert_timeout_s == 1800.0
    assert (settings.llm_base_url, settings.llm_endpoints, settings.llm_gguf, settings.reranker) == (None,) * 4
    assert settings.llm_multimodal is False
    assert (settings.child_max_tokens, settings.candidates_per_engine) == (400, 40)
    assert Fusion.parse(settings.fusion).spec() == settings.fusion
    assert settings.default_groups == ["public"]  # the sample corpus relies on it
    assert settings.budget == Budget() and settings.budget.max_pages == 2000


def test_default_groups_are_comma_separated(env):
    env.setenv("RAG_ASSETS_DEFAULT_GROUPS", "claims, underwriting")
    assert load_settings().default_groups == ["claims", "underwriting"]


def test_each_limit_of_the_budget_has_its_own_variable(env):
    env.setenv("RAG_ASSETS_MAX_PAGES", "20")
    env.setenv("RAG_ASSETS_MAX_TOKENS", "")
    budget = load_settings().budget
    assert (budget.max_pages, budget.max_tokens) == (20, Budget().max_tokens)
    assert Settings(budget={"max_pages": 3}).budget.max_pages == 3  # given outright, over the environment


def test_variables_are_read_typed_and_empty_means_unset(env, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env.setenv("RAG_ASSETS_STORE", "kb")  # relative: resolved against the working directory
    env.setenv("RAG_ASSETS_MAX_FILE_MB", "2")
    env.setenv("RAG_ASSETS_CONVERT_TIMEOUT_S", "")
    env.setenv("RAG_ASSETS_LLM_MULTIMODAL", "yes")
    env.setenv("RAG_ASSETS_LLM_API_KEY", "sk-secret")
    settings = load_settings()
    assert settings.store == tmp_path / "kb" and settings.dagster_home == tmp_path / "kb" / "dagster"
    assert settings.max_file_bytes == 2 * 1024 * 1024
    assert settings.convert_timeout_s == 1800.0
    assert settings.llm_multimodal is True
    assert settings.llm_api_key == "sk-secret" and "sk-secret" not in repr(settings)
    env.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert load_settings().dagster_home == tmp_path / "home"


@pytest.mark.parametrize(
    "variable, value",
    [
        ("RAG_ASSETS_CONVERT_TIMEOUT_S", "0"),
        ("RAG_ASSETS_MAX_FILE_MB", "-1"),
        ("RAG_ASSETS_LLM_MULTIMODAL", "perhaps"),
        ("RAG_ASSETS_DEFAULT_GROUPS", "claims,,"),
        ("RAG_ASSETS_DEFAULT_GROUPS", " "),
        ("RAG_ASSETS_MAX_PAGES", "0"),
        ("RAG_ASSETS_MEMORY_PLATEAU_FRACTION", "1.5"),
    ],
)
def test_bad_values_are_refused(env, variable, value):
    env.setenv(variable, value)
    with pytest.raises(ValidationError):
        load_settings()


def test_a_changed_copy_refuses_names_that_are_not_fields(env):
    settings = load_settings()
    copy = settings.model_copy(update={"store": Path("/elsewhere"), "max_file_mb": 1})
    assert copy.store == Path("/elsewhere") and copy.max_file_bytes == 1024 * 1024 and settings.max_file_mb == 200
    with pytest.raises(ValueError, match="max_file_bytes"):
        settings.model_copy(update={"max_file_bytes": 10})
    with pytest.raises(ValidationError):
        settings.embedder = "other"  # frozen
    assert isinstance(settings, Settings)


def test_executor_and_object_store(env):
    settings = load_settings()
    assert (settings.executor, settings.celery_broker, settings.object_store) == ("in_process", None, None)
    env.setenv("RAG_ASSETS_EXECUTOR", "celery")
    with pytest.raises(ValidationError, match="RAG_ASSETS_CELERY_BROKER"):
        load_settings()
    env.setenv("RAG_ASSETS_CELERY_BROKER", "redis://:secret@127.0.0.1:6379/0")
    assert load_settings().executor == "celery" and "secret" not in repr(load_settings())
    with pytest.raises(ValueError, match="CELERY_BROKER"):
        settings.model_copy(update={"executor": "celery"})
    env.setenv("RAG_ASSETS_OBJECT_STORE", "/a/local/path")
    with pytest.raises(ValidationError, match="s3://bucket"):
        load_settings()
    env.setenv("RAG_ASSETS_OBJECT_STORE", "s3://bucket/kb")
    env.setenv("RAG_ASSETS_S3_ENDPOINT", "http://127.0.0.1:9000")
    env.setenv("RAG_ASSETS_S3_SECRET_ACCESS_KEY", "s3-secret")
    loaded = load_settings()
    assert "s3-secret" not in repr(loaded)
    options = ObjectStore.from_settings(loaded).storage_options()
    assert options["endpoint"] == "http://127.0.0.1:9000" and options["allow_http"] == "true"
    assert ObjectStore.from_settings(loaded).uri_of("lancedb") == "s3://bucket/kb/lancedb"
