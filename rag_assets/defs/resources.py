from __future__ import annotations

import dataclasses
from pathlib import Path

from dagster import ConfigurableResource

from rag_assets.settings import Settings, load_settings


class KnowledgeStoreResource(ConfigurableResource):
    """Where the knowledge store lives, which embedder builds it and the size limit of a
    source file; empty/0 = environment defaults."""

    store: str = ""
    embedder: str = ""
    max_file_bytes: int = 0

    def settings(self) -> Settings:
        settings = load_settings()
        changes = {}
        if self.store:
            changes["store"] = Path(self.store).resolve()
        if self.embedder:
            changes["embedder"] = self.embedder
        if self.max_file_bytes:
            changes["max_file_bytes"] = self.max_file_bytes
        return dataclasses.replace(settings, **changes)
