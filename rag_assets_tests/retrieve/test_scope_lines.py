"""The lines of insurance a question speaks of choose among the named insurer's policies, and
a contract the reader holds of a line none of them covers is not among the documents."""

import pytest

CAR = """# Assurix Auto — conditions générales

## Bris de glace

Le pare-brise et les glaces latérales du véhicule sont garantis ; le conducteur
déclare le sinistre dans les cinq jours. Le remorquage du véhicule est pris en charge.
"""
HEALTH = """# Assurix Santé — conditions générales

## Optique

Les lunettes (monture et verres) sont remboursées une fois tous les deux ans, dans la limite de
150 € pour la monture. Les soins dentaires et l'hospitalisation sont remboursés selon le tableau.
"""
OTHER = """# Protectis Habitation — conditions générales

## Dégât des eaux

Les dommages causés par l'eau au logement assuré sont garantis après déduction de la franchise.
"""
LOAN = """# Assurix Emprunteur — notice

## Garanties du prêt

En cas de décès de l'emprunteur, l'assureur rembourse le capital restant dû du prêt immobilier.
Les mensualités du crédit sont prises en charge en cas d'incapacité de travail.
"""


@pytest.mark.slow
@pytest.mark.dagster_run
def test_a_named_insurers_policies_narrow_to_the_line_the_question_speaks_of(tmp_path):
    from rag_assets_tests.support.stores import knowledge_base_of

    kb = knowledge_base_of(
        tmp_path,
        {
            "assurix-auto.md": CAR,
            "assurix-sante.md": HEALTH,
            "assurix-emprunteur.md": LOAN,
            "protectis.md": OTHER,
        },
    )
    file_of = {d: kb.document(d)["file_name"] for d in kb.document_ids()}

    health = kb.scope("Ma mutuelle Assurix rembourse-t-elle mes lunettes de soleil ?")
    assert [file_of[d] for d in health.document_ids] == ["assurix-sante.md"]
    # the reader's contract is of a line none of the named insurer's documents covers: not held
    assert kb.scope("Mon assurance auto Protectis couvre-t-elle le bris de glace ?").unheld == ("auto",)
    answer = kb.ask("Mon assurance auto Protectis couvre-t-elle le bris de glace ?", offline=True)
    assert not answer.paragraphs
    assert kb.scope("Mon assurance habitation Protectis couvre-t-elle le dégât des eaux ?").unheld == ()
    # no line named: every policy of the insurer stays in scope
    assert len(kb.scope("Chez Assurix, quel est le délai pour déclarer ?").document_ids) == 3


def test_the_lines_of_the_contracts_the_reader_says_they_hold():
    from rag_assets.retrieve.branches import held_lines

    assert held_lines("Mon assurance auto Groupama couvre-t-elle le bris de glace ?") == {"auto"}
    assert held_lines("J'ai assuré mon chien chez Assurix : quel délai de carence ?") == {"animaux"}
    assert held_lines("Ma mutuelle rembourse-t-elle l'ostéopathe ?") == {"santé"}
    # a line the question speaks of is not a contract the reader says they hold
    assert held_lines("Chez Assurix, le vol de voiture est-il couvert ?") == frozenset()
