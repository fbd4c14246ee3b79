"""Definition questions: the asked term, and the glossary that defines it."""

import pytest

from rag_assets.retrieve.definitions import defined_term, glossary_text, is_glossary, writes_term


@pytest.mark.parametrize(
    "question, term",
    [
        ("Au sens de la protection juridique, à partir de quand parle-t-on de « sinistre » ?", "sinistre"),
        ("Nous partons à 10 amis. Sommes-nous un « Groupe » au sens du contrat ?", "Groupe"),
        ("Une montre de marque est-elle considérée comme un « bien précieux » ?", "bien précieux"),
        ("Qu'est-ce qu'un sinistre au sens du contrat ?", "sinistre"),
        ("Qu’est-ce que la franchise ?", "franchise"),
    ],
)
def test_the_term_a_definition_question_asks_about(question, term):
    assert defined_term(question) == term


@pytest.mark.parametrize(
    "question",
    [
        "J'ai pris l'option « biens nomades multimédias » : quel plafond pour mon vélo ?",  # a quoted name, no cue
        "Qu'est-ce qui est couvert si ma maison brûle ?",
        "Au sens du contrat, « le vol commis par un membre de la famille de l'assuré » est-il couvert ?",  # a clause
    ],
)
def test_other_questions_ask_for_no_definition(question):
    assert defined_term(question) is None


def test_glossary_headings_and_written_terms():
    assert is_glossary(["Conditions générales", "ARTICLE 1. DÉFINITIONS COMMUNES"])
    assert is_glossary(["7 - Lexique"]) and not is_glossary(["5 - La procédure en cas de sinistre"])
    assert writes_term("Biens précieux : bijoux, montres…", "bien précieux")
    assert not writes_term("Biens de valeur, précieux ou non", "bien précieux")
    joined = {
        "heading_path": ["Conditions générales"],
        "text": "…",
        "blocks": [
            {"kind": "text", "text": "Le Groupe voyage."},
            {"kind": "heading", "text": "1. Définitions"},
            {"kind": "text", "text": "Groupe : au moins neuf voyageurs."},
        ],
    }
    assert glossary_text(joined) == "Groupe : au moins neuf voyageurs."


POLICY = """# Conditions générales Voyage Sérénité

## 1. Définitions

Assuré : la personne désignée aux conditions particulières.

Groupe : ensemble d'au moins neuf voyageurs inscrits sur un même bulletin, que l'assureur
couvre par un seul contrat.

Sinistre : tout événement susceptible d'entraîner la garantie.

## 2. Annulation du voyage

Le voyage est annulé quand un voyageur tombe malade. Les amis partis ensemble en voyage qui
annulent leur voyage sont remboursés de leurs frais d'annulation de voyage, sauf franchise.
Un voyageur qui annule seul son voyage reçoit le remboursement de sa part du voyage.

## 3. Interruption du voyage

Un voyageur rapatrié reçoit le remboursement des jours de voyage non utilisés par les amis
qui l'accompagnaient pendant ce voyage.
"""


@pytest.mark.slow
@pytest.mark.dagster_run
def test_a_definition_question_gets_the_glossary_entry_first(tmp_path):
    """Told as a story, the question shares its words with the cancellation section; the
    policy's definition of the quoted term is what it asks for, so it leads."""
    from rag_assets_tests.support.stores import knowledge_base_of

    kb = knowledge_base_of(tmp_path, {"voyage-serenite.md": POLICY})
    question = "Nous partons en voyage à dix amis et deux annulent. Sommes-nous un « Groupe » au sens du contrat ?"
    trace = kb.retrieve(question)
    first = kb.hits(trace, k=1)[0]
    assert trace.glossary == [first.parent_id] and first.ranks["definition"] == 1
    assert "Groupe : ensemble" in glossary_text(kb.parent(first.parent_id))
