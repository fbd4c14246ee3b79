"""Which model endpoints `ask` may use, from the settings (environment):

    RAG_ASSETS_LLM_BASE_URL, RAG_ASSETS_LLM_API_KEY, RAG_ASSETS_LLM_MODEL   one endpoint
    RAG_ASSETS_LLM_ENDPOINTS   JSON list, tried in order after it:
        [{"base_url": "https://api.mistral.ai/v1", "model": "mistral-small-latest",
          "api_key_env": "MISTRAL_API_KEY", "name": "mistral", "multimodal": false, "timeout": 60,
          "max_retries": 2}, …]
    RAG_ASSETS_LLM_MULTIMODAL  1 when the single endpoint's model accepts images
    RAG_ASSETS_LLM_GGUF        a GGUF file the CLI serves locally (llama.cpp) as the last endpoint
    RAG_ASSETS_LLM_CHECKS      auto | model | rules: who routes the question (follow-up rewrite,
                               comparison split) and checks the answer's support. auto = rules
                               when every endpoint is a model served in-process on this CPU,
                               where each extra call costs seconds; the model otherwise

No endpoint: the offline extractive answerer.
"""

from __future__ import annotations

import json
import os

from rag_assets.answering.generation import Endpoint


def endpoints_from_settings(settings) -> list[Endpoint]:
    endpoints: list[Endpoint] = []
    base_url = getattr(settings, "llm_base_url", None)
    model = getattr(settings, "llm_model", None)
    if base_url:
        endpoints.append(
            Endpoint(
                base_url=base_url,
                model=model or "default",
                api_key=getattr(settings, "llm_api_key", None),
                name="default",
                multimodal=bool(getattr(settings, "llm_multimodal", False)),
            )
        )
    raw = getattr(settings, "llm_endpoints", None)
    if raw:
        try:
            items = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"RAG_ASSETS_LLM_ENDPOINTS is not valid JSON ({exc})") from exc
        if isinstance(items, dict):
            items = [items]
        for n, item in enumerate(items, 1):
            if not isinstance(item, dict) or not item.get("base_url"):
                raise ValueError(f"RAG_ASSETS_LLM_ENDPOINTS item {n} needs at least a base_url")
            key = item.get("api_key")
            if not key and item.get("api_key_env"):
                key = os.environ.get(str(item["api_key_env"]))
            endpoints.append(
                Endpoint(
                    base_url=str(item["base_url"]),
                    model=str(item.get("model") or "default"),
                    api_key=key,
                    name=str(item.get("name") or f"endpoint-{n}"),
                    multimodal=bool(item.get("multimodal", False)),
                    timeout=float(item.get("timeout", 120.0)),
                    max_retries=int(item.get("max_retries", 2)),
                )
            )
    return endpoints


def model_checks(setting: str, endpoints: list[Endpoint]) -> bool:
    """Whether the model routes and checks (RAG_ASSETS_LLM_CHECKS), or the rules do: routing by
    rules and support by the answer's terms found in its sources."""
    if setting not in ("auto", "model", "rules"):
        raise ValueError(f"RAG_ASSETS_LLM_CHECKS must be auto, model or rules, not {setting!r}")
    if setting == "auto":
        return not all(endpoint.in_process for endpoint in endpoints)
    return setting == "model"
