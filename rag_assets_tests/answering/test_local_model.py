"""Opt-in: the model path with a real local model (llama.cpp through xllamacpp, GGUF from
`../shared/tools/get-local-llm`). Slow on CPU (minutes); run with

    RAG_ASSETS_TEST_LOCAL_LLM=1 pytest rag_assets_tests/answering/test_local_model.py

(with RAG_ASSETS_LLM_GGUF=/path/model.gguf for another model file).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from rag_assets.answering import ask
from rag_assets.commands.local_check import CHECKS, DEFAULT_GGUF

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_endpoint():
    if os.environ.get("RAG_ASSETS_TEST_LOCAL_LLM") != "1":
        pytest.skip("opt-in: set RAG_ASSETS_TEST_LOCAL_LLM=1 (and RAG_ASSETS_LLM_GGUF) to run the real local model")
    pytest.importorskip("xllamacpp")
    gguf = Path(os.environ.get("RAG_ASSETS_LLM_GGUF") or DEFAULT_GGUF)
    if not gguf.is_file():
        pytest.skip(f"no GGUF at {gguf}: run ../shared/tools/get-local-llm")
    from rag_assets.answering.local_llm import LocalLLM

    with LocalLLM(gguf) as endpoint:
        yield endpoint


@pytest.mark.parametrize("question, groups, expected", CHECKS)
def test_real_local_model_gives_cited_answers_with_supported_numbers(kb, local_endpoint, question, groups, expected):
    answer = ask(kb, question, user_groups=groups, endpoints=[local_endpoint])
    assert answer.mode == "llm" and answer.endpoint == local_endpoint.label, answer.alerts
    assert answer.paragraphs and all(p.source_ids for p in answer.paragraphs)
    assert not any(p.unsupported_numbers for p in answer.paragraphs), answer.render()
    assert re.search(expected, answer.text), answer.render()


def test_real_local_model_prompt_fits_its_budget_reuses_the_cached_prefix_and_needs_no_retry(kb, local_endpoint):
    from rag_assets.answering.compact import DEFAULT_PROMPT_TOKENS
    from rag_assets.answering.generation import SYSTEM_PROMPT, LLMClient

    prefix = LLMClient([local_endpoint]).count_tokens(SYSTEM_PROMPT)
    questions = [
        "Quelle est la franchise pour une inondation en zone A ?",
        "Quelle est la franchise pour une tempête nommée ?",
    ]
    answers = [ask(kb, question, endpoints=[local_endpoint]) for question in questions]
    for answer in answers:
        # one call: the grammar leaves no retry, rules route and check for a model served in-process
        [call] = answer.usage["by_call"]
        assert call["call"] == "answer"
        assert call["prompt_tokens"] <= DEFAULT_PROMPT_TOKENS
        assert answer.stages["prefill_s"] > 0 and answer.stages["generation_tokens"] > 0
    # the second question's answer prompt starts from the first one's system prompt, kept by the server
    [second] = [c for c in answers[1].usage["by_call"] if c["call"] == "answer"]
    assert second["cache_n"] >= prefix
