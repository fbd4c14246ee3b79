"""The public Python client: open a knowledge store built by the pipeline, search it, ask it.

    from rag_assets.client import KnowledgeBase
    kb = KnowledgeBase.open("data/knowledge")
    for hit in kb.search("franchise inondation zone A", k=3):
        print(hit.rrf_score, hit.heading_path, hit.pages)

The implementation lives in ``rag_assets.retrieve``; this module is the stable import path.
"""

from rag_assets.retrieve.knowledge_base import KnowledgeBase, ParentHit

__all__ = ["KnowledgeBase", "ParentHit"]
