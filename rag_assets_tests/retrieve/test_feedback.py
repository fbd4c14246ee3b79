import pytest

from rag_assets.retrieve.feedback import Feedback

TEXTS = [
    "La franchise vétusté s'applique aux dégâts des eaux ; la vétusté est déduite de l'indemnité.",
    "Dégâts des eaux : fuite, débordement, infiltration ; la vétusté est déduite.",
    "Le contrat couvre le vol et le vandalisme.",
]


def test_feedback_adds_the_words_the_top_children_share_with_the_question_keeping_its_weight():
    feedback = Feedback(documents=2, terms=3, original_weight=0.5)
    added = feedback.expand("dégâts des eaux dans mon appartement", TEXTS, [12.0, 8.0, 5.0])
    assert "vétusté" in added  # in both feedback children, never in the question
    assert not {"dégâts", "eaux", "vol"} & set(added)  # question words are not repeated; the 3rd child is not read
    assert len(added) <= 3
    # λ = 0.5: the added words weigh as much, together, as the question's analysed terms (each 1)
    assert sum(added.values()) == pytest.approx(3, abs=0.01)  # "dégâts", "eaux", "appartement"


def test_no_feedback_without_positive_scores_or_texts():
    assert Feedback().expand("dégâts des eaux", [], []) == {}
    assert Feedback().expand("dégâts des eaux", TEXTS, [0.0, 0.0, 0.0]) == {}


def test_retrieve_with_feedback_records_the_added_words(sample_kb):
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    settings, _, _ = sample_kb
    kb = KnowledgeBase.open(settings.store)
    assert kb.feedback is None and kb.retrieval_config()["prf"] is False  # off by default
    question = "franchise inondation zone A"
    assert kb.retrieve(question).feedback == {}
    with_prf = KnowledgeBase(kb.store, kb.embedder_spec, use_prf=True)
    trace = with_prf.retrieve(question)
    assert trace.feedback and with_prf.retrieval_config()["prf"] is True
    assert trace.ranking("bm25")  # the second pass ranked
