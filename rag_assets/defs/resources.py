from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import Config, ConfigurableResource

from rag_assets.document_budget import Budget
from rag_assets.settings import Settings, load_settings


class BudgetConfig(Budget, Config):
    """A document's budget as Dagster config: the fields and constraints of Budget."""


class KnowledgeStoreResource(ConfigurableResource):
    """Where the knowledge store lives, which embedder builds it, the size limit of a
    source file, the time limit of its conversion and a document's budget; empty/0/None =
    environment defaults."""

    store: str = ""
    embedder: str = ""
    max_file_bytes: int = 0
    convert_timeout_s: float = 0.0
    budget: BudgetConfig | None = None
    follow_links_inside: bool | None = None
    default_groups: list[str] = []  # who reads a document no sidecar gives groups; empty = environment

    def settings(self) -> Settings:
        settings = load_settings()
        changes: dict[str, Any] = {}
        if self.store:
            changes["store"] = Path(self.store).resolve()
        if self.embedder:
            changes["embedder"] = self.embedder
        if self.max_file_bytes:
            changes["max_file_mb"] = self.max_file_bytes / (1024 * 1024)
        if self.convert_timeout_s:
            changes["convert_timeout_s"] = self.convert_timeout_s
        if self.default_groups:
            changes["default_groups"] = list(self.default_groups)
        if self.budget is not None:  # a plain Budget: the conversion process need not import Dagster
            changes["budget"] = Budget(**self.budget.model_dump())
        if self.follow_links_inside is not None:
            changes["follow_links_inside"] = self.follow_links_inside
        return settings.model_copy(update=changes)
