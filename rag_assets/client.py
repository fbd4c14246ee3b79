"""The public Python client: open a knowledge store built by the pipeline, search it, ask it.

    from rag_assets.client import KnowledgeBase
    kb = KnowledgeBase.open("data/knowledge")
    for hit in kb.search("franchise inondation zone A", k=3):
        print(hit.rrf_score, hit.heading_path, hit.pages)
    print(kb.ask("Quelle est la franchise pour une inondation en zone A ?").render())

Retrieval lives in ``rag_assets.retrieve``, answering in ``rag_assets.answering`` (which reads
retrieval); this module joins them and is the stable import path.
"""

from rag_assets.answering import ask
from rag_assets.retrieve import knowledge_base
from rag_assets.retrieve.knowledge_base import ParentHit


class KnowledgeBase(knowledge_base.KnowledgeBase):
    """The read-side knowledge base (search, retrieve, look-ups) that also answers."""

    def ask(self, question: str, thread_id: str | None = None, user_groups=None, user: str | None = None, **options):
        """Sourced, verified answer (`rag_assets.answering.ask`; options: endpoints, offline, llm, options).
        A thread is remembered for a named `user` only."""
        return ask(self, question, thread_id=thread_id, user_groups=user_groups, user=user, **options)


__all__ = ["KnowledgeBase", "ParentHit"]
