"""The real-document golden set (`evaluations/golden-insurance.jsonl`) over the 12 insurer
PDFs of `../shared/corpora/fr-insurance-docs`: its shape (counts by kind, every document
covered) and every evidence quote checked against the PDF text layer of its stated page
(normalized words, contiguous containment). Needs no knowledge store; the quote checks
skip when `../shared` is absent."""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import lru_cache

import pytest

from rag_assets.evaluation.evidence import words
from rag_assets.evaluation.questions import load_questions
from rag_assets.settings import PROJECT_ROOT

QUESTIONS = PROJECT_ROOT / "evaluations" / "golden-insurance.jsonl"
CORPUS = PROJECT_ROOT.parent / "shared" / "corpora" / "fr-insurance-docs"
DOCUMENTS = {
    "maif_habitation-aha_2021.pdf",
    "maif_habitation-raqvam_2011.pdf",
    "maif_auto-moto-vam_2016.pdf",
    "maif_protection-juridique_2018.pdf",
    "maif_navigation-plaisance-nautis_2021.pdf",
    "allianz-vie_prevoyance-tns-notice_2025.pdf",
    "allianz-vie_prevoyance-personne-cle-notice_2025.pdf",
    "allianz-vie_prevoyance-tns-ipid_2024.pdf",
    "mila_mrh-locataire-ipid_2024.pdf",
    "areas-marsh_location-saisonniere-notice_2024.pdf",
    "apicil_sante-tableau-garanties_nd.pdf",
    "april_sante-flexi-tableau-garanties_nd.pdf",
}
QUESTION_TYPES = {"factual", "numeric", "definition", "procedure", "temporal", "comparison", "list", "exclusion"}
SET_TRAPS = ("out-of-corpus", "false-number", "near-miss-term")

RAW = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
EVIDENCE = [(row["id"], item) for row in RAW for item in row["evidence"]]


@pytest.fixture(scope="module")
def corpus():
    if not CORPUS.is_dir():
        pytest.skip(f"{CORPUS} is absent: the insurer PDFs live in ../shared (checks of the quotes need them)")
    return CORPUS


@lru_cache(maxsize=None)
def page_words(document: str) -> tuple[str, ...]:
    """Each physical page of the PDF as ' w1 w2 … ' (the matcher's normalization)."""
    pdfium = pytest.importorskip("pypdfium2")
    pdf = pdfium.PdfDocument(str(CORPUS / document))
    try:
        return tuple(" " + " ".join(words(pdf[i].get_textpage().get_text_range())) + " " for i in range(len(pdf)))
    finally:
        pdf.close()


def test_the_set_loads_with_sequential_ids_and_the_expected_fields():
    questions = load_questions(QUESTIONS)
    assert [q.id for q in questions] == [f"gi{i:03d}" for i in range(1, len(questions) + 1)]
    for row in RAW:
        assert row["language"] == "fr" and row.get("answer"), row["id"]
        assert row["question_type"] in QUESTION_TYPES, row["id"]
        assert row["trap"] is None or row["trap"] in SET_TRAPS, row["id"]
        assert (row["trap"] == "out-of-corpus") == (not row["evidence"]), row["id"]
        for item in row["evidence"]:
            assert item["document"] in DOCUMENTS, (row["id"], item["document"])
            assert isinstance(item["page"], int) and item["page"] >= 1, row["id"]
            assert 5 <= len(words(item["quote"])) <= 25, (row["id"], item["quote"])
            assert not re.search(r"\s{2}|[\ufffe\u00ad]", item["quote"]), (row["id"], item["quote"])


def test_counts_by_kind_and_every_document_covered():
    questions = load_questions(QUESTIONS)
    assert len(questions) >= 80
    assert sum(q.content_type == "table" for q in questions) >= 25
    comparisons = [q for q in questions if q.question_type == "comparison"]
    assert len(comparisons) >= 8
    assert all(len(q.evidence) >= 2 and len({e.document for e in q.evidence}) == 2 for q in comparisons)
    traps = Counter(q.trap for q in questions if q.trap)
    assert sum(traps.values()) >= 12
    assert all(traps[kind] >= 4 for kind in SET_TRAPS), traps
    assert {e.document for q in questions for e in q.evidence} == DOCUMENTS


@pytest.mark.real_pdf
def test_the_corpus_holds_exactly_the_twelve_documents(corpus):
    assert {p.name for p in corpus.glob("*.pdf")} == DOCUMENTS


@pytest.mark.real_pdf
@pytest.mark.parametrize(
    "qid, item", EVIDENCE, ids=[f"{qid}-{item['document'][:20]}-p{item['page']}" for qid, item in EVIDENCE]
)
def test_every_quote_is_on_its_stated_page(corpus, qid, item):
    pages = page_words(item["document"])
    quote = " " + " ".join(words(item["quote"])) + " "
    assert 1 <= item["page"] <= len(pages), f"{qid}: page {item['page']} of {len(pages)}"
    if quote not in pages[item["page"] - 1]:
        found = [number for number, text in enumerate(pages, start=1) if quote in text]
        pytest.fail(
            f"{qid}: quote not on page {item['page']} of {item['document']} "
            f"(found on {found or 'no page'}): {item['quote']!r}"
        )
