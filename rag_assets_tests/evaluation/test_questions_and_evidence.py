"""Question sets (document + verbatim quote, never a chunk id) and evidence matching."""

import json

import pytest

from rag_assets.evaluation.evidence import Evidence, TextUnit, document_matches, quote_matches, relevant_units
from rag_assets.evaluation.questions import TRAP_KINDS, load_questions, parse_question
from rag_assets.evaluation.targets import GOLDEN

PARENT = (
    "Le tableau ci-dessous fixe la franchise applicable selon l'événement.\n\n"
    "| Événement | Zone | Franchise |\n|---|---|---|\n| Inondation | Zone A | 5 000 € |\n"
    "Sauf cas fortuit, l'assuré doit déclarer le sinistre dans les cinq (5) jours ouvrés "
    "auprès de sa compagnie d'assu\ufffe"
    "rance."
)


def test_a_quote_matches_by_containment_across_formatting():
    unit = TextUnit("p1", "doc", PARENT)
    assert quote_matches("Inondation Zone A 5 000 €", unit)  # table cells rendered as Markdown
    assert quote_matches("l’assuré doit déclarer le sinistre", unit)  # curly apostrophe, case
    assert quote_matches("compagnie d'assurance", unit)  # PDF hyphenation mark
    assert not quote_matches("Inondation Zone B 2 500 €", unit)


def test_a_quote_matches_when_half_of_its_shingles_survive_a_reparse():
    unit = TextUnit("p1", "doc", "un deux trois quatre cinq six sept huit neuf dix")
    # 7 shingles of 4 words; a changed last word keeps 6 of 7 (≥ 50 %)
    assert quote_matches("un deux trois quatre cinq six sept huit neuf DIFFERENT", unit)
    # a changed word in the middle leaves 3 of 7 (< 50 %)
    assert not quote_matches("un deux trois quatre cinq CHANGE sept huit neuf dix", unit)
    # shorter than a shingle: containment only
    assert quote_matches("six sept", unit) and not quote_matches("sept six", unit)


def test_documents_are_named_relative_to_the_collection_root():
    path = "/x/shared/corpora/eu-insurance-texts/idd/fr/CHAPITRE\u00a0IV/Article\u00a010.md"
    assert document_matches("eu-insurance-texts/idd/fr/CHAPITRE IV/Article 10.md", path, "Article\u00a010.md")
    assert document_matches("police.pdf", "/a/b/police.pdf", "police.pdf")
    assert not document_matches("idd/fr/CHAPITRE V/Article 10.md", path, "Article\u00a010.md")


def test_relevance_needs_the_right_document():
    units = [
        TextUnit("p1", "d1", "la franchise est de 380 euros"),
        TextUnit("p2", "d2", "la franchise est de 380 euros"),
    ]
    found = relevant_units(
        [Evidence("a.md", "franchise est de 380 euros")], units, {"d1": ("/c/a.md", "a.md"), "d2": ("/c/b.md", "b.md")}
    )
    assert list(found.values()) == [["p1"]]


def test_question_validation():
    base = {"id": "x", "question": "?", "question_type": "numeric", "content_type": "table"}
    with pytest.raises(ValueError, match="never a chunk id"):
        parse_question({**base, "evidence": [{"document": "a", "quote": "b", "chunk_id": "c"}]}, "t")
    with pytest.raises(ValueError, match="no evidence"):
        parse_question({**base, "evidence": []}, "t")
    with pytest.raises(ValueError, match="trap"):
        parse_question({**base, "evidence": [], "trap": "tricky"}, "t")
    refusal = parse_question({**base, "evidence": [], "trap": "out-of-corpus"}, "t")
    assert not refusal.judged


@pytest.mark.parametrize("name", ["golden-sample", "golden-shared"])
def test_golden_sets_have_40_questions_and_8_traps_of_every_kind(name):
    questions = load_questions(GOLDEN[name].questions_path)
    traps = [q for q in questions if q.trap]
    assert len(questions) - len(traps) >= 40 and len(traps) >= 8
    assert {q.trap for q in traps} == set(TRAP_KINDS)
    assert len({q.content_type for q in questions}) >= 2
    raw = [json.loads(line) for line in GOLDEN[name].questions_path.read_text(encoding="utf-8").splitlines() if line]
    assert not any("chunk" in key or "parent_id" in key for row in raw for key in row)
