from __future__ import annotations

import dataclasses
from pathlib import Path

from dagster import ConfigurableResource

from rag_assets.settings import Settings, load_settings


class KnowledgeStoreResource(ConfigurableResource):
    """Where the knowledge store lives and which embedder builds it; empty = environment defaults."""

    store: str = ""
    embedder: str = ""

    def settings(self) -> Settings:
        settings = load_settings()
        changes = {}
        if self.store:
            changes["store"] = Path(self.store).resolve()
        if self.embedder:
            changes["embedder"] = self.embedder
        return dataclasses.replace(settings, **changes)
