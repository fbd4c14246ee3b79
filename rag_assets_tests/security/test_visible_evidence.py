"""Only what a reader can see is evidence. White 1-pt text "la franchise … est de 1 euro" in a
PDF was indexed like the visible 130 € and quoted verbatim as the sourced answer, with no alert;
phrased as an order to the assistant it was flagged, but the document's real answers, sharing its
words, were then dropped with it. Invisible text is now dropped at conversion and reported on the
document's summary line; an order is flagged on its passage and blocks nothing else."""

from __future__ import annotations

import pytest

from rag_assets.answering import AskOptions, ask
from rag_assets.client import KnowledgeBase
from rag_assets.commands.ingest import summary_lines
from rag_assets_tests.answering.openai_stub import ScriptedOpenAI, catalogue, retrieve_route, scripted_endpoint
from rag_assets_tests.security.hostile_files import HIDDEN_FRANCHISE, HIDDEN_SAME_COLOUR

pytestmark = pytest.mark.slow

FRANCHISE = "Quelle est la franchise bris de glace ?"
DEADLINE = "Quel est le délai de déclaration d'un sinistre ?"


def _pdf_id(outcomes) -> str:
    return outcomes["franchise-cachee.pdf"].document_id


def test_invisible_text_is_not_indexed(evidence_store):
    settings, outcomes = evidence_store
    kb = KnowledgeBase.open(settings.store)
    texts = [p["text"] for p in kb.parents_of(_pdf_id(outcomes))]
    assert any("130 €" in t for t in texts)
    for hidden in (HIDDEN_FRANCHISE, HIDDEN_SAME_COLOUR, "1 euro", "cinquante pour cent"):
        assert not any(hidden in t for t in texts)
        assert not [h for h in kb.search(hidden, k=5) if h.document_id == _pdf_id(outcomes) and hidden in h.text]


def test_the_summary_line_says_what_was_dropped(evidence_store):
    _, outcomes = evidence_store
    outcome = outcomes["franchise-cachee.pdf"]
    assert outcome.status == "indexed"
    lines = summary_lines(outcome, 1, 1)
    assert "1 warning" in lines[0]
    assert lines[1:] == [
        "          warning: franchise-cachee.pdf: page 1: 154 characters of invisible text dropped "
        "(same colour as what is under it, under 2 pt)"
    ]


def test_the_answer_is_the_visible_franchise(evidence_store):
    settings, outcomes = evidence_store
    answer = KnowledgeBase.open(settings.store).ask(FRANCHISE, offline=True)
    assert "130 €" in answer.text
    assert "1 euro" not in answer.text
    assert {s.document_id for s in answer.sources} >= {_pdf_id(outcomes)}


def test_an_order_is_flagged_on_its_passage_and_the_others_still_answer(evidence_store):
    settings, outcomes = evidence_store
    kb = KnowledgeBase.open(settings.store)
    note = outcomes["consigne-parmi-les-reponses.md"].document_id
    deadline = kb.ask(DEADLINE, offline=True)
    assert "5 jours ouvrés" in deadline.text
    assert any(s.document_id == note for s in deadline.sources)
    franchise = kb.ask(FRANCHISE, offline=True, options=AskOptions(log=False, memory=False))
    assert "130 €" in franchise.text and "1 euro" not in franchise.text
    assert any("ressemble à une consigne" in a and "consigne-parmi-les-reponses" in a for a in franchise.alerts)


def test_a_model_answering_from_the_passage_beside_an_order_is_kept(evidence_store):
    """The order paraphrases the document's own sentence: an answer quoting that sentence shares
    six words in a row with the order, and was dropped as repeating it."""
    settings, outcomes = evidence_store
    kb = KnowledgeBase.open(settings.store)

    def section(body, heading):
        return next(i for i, name in catalogue(body).items() if heading in name and "-" not in i)

    def answers(body):
        return {
            "json": {
                "paragraphs": [
                    {
                        "sub_question": 1,
                        "text": "La franchise bris de glace est de 130 € par sinistre.",
                        "source_ids": [section(body, "Franchise bris de glace")],
                    },
                    {
                        "sub_question": 1,
                        "text": "La franchise bris de glace est de 1 euro.",
                        "source_ids": [section(body, "Franchise bris de glace")],
                    },
                ],
                "missing_information": [],
            }
        }

    with ScriptedOpenAI({"route": [retrieve_route(FRANCHISE)], "answer": [answers]}) as server:
        answer = ask(kb, FRANCHISE, endpoints=[scripted_endpoint(server)], options=AskOptions(verify_with_llm=False))
    assert "La franchise bris de glace est de 130 € par sinistre." in answer.text
    assert "1 euro" not in answer.text
    assert any("écarté" in a and "consigne" in a for a in answer.alerts)
