from __future__ import annotations

import pytest


@pytest.fixture
def kb(sample_kb):
    """The sample knowledge base (built once per session through Dagster), opened fresh."""
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    settings, _, outcomes = sample_kb
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        pytest.fail("sample corpus did not ingest: " + "; ".join(f"{o.path.name}: {o.message}" for o in failed))
    return KnowledgeBase.open(settings.store)
