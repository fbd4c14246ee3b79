"""A real regulation PDF (first 30 pages of the Solvency II directive) through all six assets."""

import pypdfium2
import pytest

from rag_assets.ingest.stages import load_parents
from rag_assets.orchestration.ingest_runs import ingest
from rag_assets.orchestration.instance import open_instance
from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.store import KnowledgeStore
from rag_assets_tests.support.stores import make_settings

pytestmark = [pytest.mark.slow, pytest.mark.dagster_run]  # a 30-page real PDF through every asset

PAGES = 30


def cut_pdf(source, target, pages):
    src = pypdfium2.PdfDocument(str(source))
    out = pypdfium2.PdfDocument.new()
    out.import_pages(src, list(range(min(pages, len(src)))))
    out.save(str(target))


def test_solvency_ii_excerpt_goes_through_all_assets(shared_dir, tmp_path):
    pdf = tmp_path / "solvency2_first30.pdf"
    cut_pdf(shared_dir / "corpora/eu-regulation-pdf/solvency2_directive_2009-138-EC_EN.pdf", pdf, PAGES)
    settings = make_settings(tmp_path)
    with open_instance(settings) as instance:
        [outcome] = ingest([pdf], settings, instance)
    assert outcome.status == "indexed", outcome.message
    parents = load_parents(KnowledgeStore(settings.store), outcome.document_id)
    assert sum(p["table_count"] for p in parents) >= 1
    assert max(len(p["heading_path"]) for p in parents) >= 2
    assert max(page for p in parents for page in p["pages"]) >= PAGES - 2
    hits = KnowledgeBase.open(settings.store).search("scope of supervision of reinsurance undertakings", k=3)
    assert hits and all(h.document_id == outcome.document_id for h in hits)
