from __future__ import annotations

import dataclasses
from pathlib import Path

from dagster import ConfigurableResource

from rag_assets.settings import Settings, load_settings


class KnowledgeStoreResource(ConfigurableResource):
    """Where the knowledge store lives, which embedder builds it, the size limit of a
    source file and the time limit of its conversion; empty/0 = environment defaults."""

    store: str = ""
    embedder: str = ""
    max_file_bytes: int = 0
    convert_timeout_s: float = 0.0

    def settings(self) -> Settings:
        settings = load_settings()
        changes = {}
        if self.store:
            changes["store"] = Path(self.store).resolve()
        if self.embedder:
            changes["embedder"] = self.embedder
        if self.max_file_bytes:
            changes["max_file_bytes"] = self.max_file_bytes
        if self.convert_timeout_s:
            changes["convert_timeout_s"] = self.convert_timeout_s
        return dataclasses.replace(settings, **changes)
