from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import ConfigurableResource

from rag_assets.settings import Settings, load_settings


class KnowledgeStoreResource(ConfigurableResource):
    """Where the knowledge store lives, which embedder builds it, the size limit of a
    source file and the time limit of its conversion; empty/0 = environment defaults."""

    store: str = ""
    embedder: str = ""
    max_file_bytes: int = 0
    convert_timeout_s: float = 0.0
    # a document's budget and the link policy (Settings field -> value); empty = environment
    limits: dict[str, float] = {}
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
        # config holds numbers; each limit back to its field's type
        changes.update({name: type(getattr(settings, name))(value) for name, value in self.limits.items()})
        return settings.model_copy(update=changes)
