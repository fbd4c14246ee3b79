"""Sourced, verified answers over the knowledge base.

    from rag_assets.client import KnowledgeBase
    kb = KnowledgeBase.open("data/knowledge")
    answer = kb.ask("Quelle est la franchise pour une inondation en zone A ?")
    print(answer.render())          # paragraphs, their citations, alerts
    answer.to_dict()                # JSON

Modules: router (small talk, follow-up rewrite, comparison split, budget), memory
(threads), retrieval (relevance threshold, one reformulation), sources (registry and
readable names), generation (OpenAI-compatible endpoints with fallback, JSON schema),
extractive (offline answerer), verification (support and numbers), safety (instruction-
like sentences in documents), model (answer dataclasses, render), log (JSONL),
local_llm (llama.cpp server through xllamacpp), ask (the entry function), cli.
"""

from rag_assets.answering.ask import AskOptions, ask
from rag_assets.answering.generation import Endpoint, LLMClient
from rag_assets.answering.model import Answer, Paragraph, SourceEntry, SubQuestion
from rag_assets.answering.retrieval import RetrievalOptions

__all__ = [
    "Answer",
    "AskOptions",
    "Endpoint",
    "LLMClient",
    "Paragraph",
    "RetrievalOptions",
    "SourceEntry",
    "SubQuestion",
    "ask",
]
