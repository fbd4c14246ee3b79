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
