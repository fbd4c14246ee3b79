"""A question about what the insurance costs is answered only by a passage stating a premium."""

import pytest

from rag_assets.answering.premium import asks_price, states_premium


@pytest.mark.parametrize(
    "question",
    [
        "On est trois à la maison : combien coûte par mois la mutuelle Assurix niveau 2 ?",
        "Quel est le prix de l'option annulation proposée par l'agence ?",
        "Combien vais-je payer pour le contrat habitation d'un studio ?",
        "Quel est le montant de la cotisation de ma formule ?",
    ],
)
def test_questions_asking_the_price_of_a_contract_option_or_level(question):
    assert asks_price(question)


@pytest.mark.parametrize(
    "question",
    [
        "Combien me coûte la franchise sur ce sinistre ?",  # a claim's cost: the documents state it
        "Combien la garantie rembourse-t-elle pour une couronne ?",
        "Quel est le plafond de la garantie vol ?",
        "Combien de jours ai-je pour déclarer ?",
        "Suis-je exonéré de mes cotisations pendant l'arrêt de travail ?",
    ],
)
def test_other_questions_are_no_price_questions(question):
    assert not asks_price(question)


def test_a_passage_states_a_premium_with_a_premium_word_and_an_amount_in_one_clause():
    assert states_premium("Cotisation mensuelle : 12,50 € par adulte.")
    assert states_premium("Le tarif de l'option est de 35 € par séjour.")
    assert not states_premium("La cotisation est payable d'avance ; la franchise est de 150 €.")
    assert not states_premium("Plafond : 2 000 € par an.")


def test_a_price_question_is_refused_saying_where_the_premium_is(kb):
    from rag_assets.answering.retrieval import PRICE_UNSTATED

    answer = kb.ask("Combien coûte par mois le contrat habitation multirisque ?", offline=True)
    assert not answer.paragraphs and PRICE_UNSTATED in answer.alerts
