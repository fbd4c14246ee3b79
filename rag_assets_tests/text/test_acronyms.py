"""Acronyms: pairs found in the documents' own text, resolved once in the question."""

import pytest

from rag_assets.text.acronyms import AcronymDictionary, extract, is_acronym
from rag_assets.text.thesaurus import Thesaurus


@pytest.mark.parametrize(
    "text, pairs",
    [
        (
            "l'évaluation des provisions pour sinistres à payer (PSAP) de la branche",
            {"PSAP": "provisions pour sinistres à payer"},
        ),
        (
            "La garantie Perte totale et irréversible d'autonomie (PTIA) est incluse.",
            {"PTIA": "Perte totale et irréversible d'autonomie"},
        ),
        # letters inside a word: "TArifaire"; an elided article is left out of the long form
        (
            "signataire de l'Option Pratique Tarifaire Maîtrisée (OPTAM) ou de l'Option Pratique Tarifaire Maîtrisée "
            "de Chirurgie et d'Obstétrique (OPTAM-CO).",
            {
                "OPTAM": "Option Pratique Tarifaire Maîtrisée",
                "OPTAM-CO": "Option Pratique Tarifaire Maîtrisée de Chirurgie et d'Obstétrique",
            },
        ),
        (
            "Les soins sont limités aux HLF (honoraires limites de facturation) tels que définis réglementairement.",
            {"HLF": "honoraires limites de facturation"},
        ),
        ("ANNEX IV SOLVENCY CAPITAL REQUIREMENT (SCR) STANDARD FORMULA", {"SCR": "SOLVENCY CAPITAL REQUIREMENT"}),
        ("le ratio S/P (sinistres à primes) de l'exercice", {"S/P": "sinistres à primes"}),
        (
            "Lexique : BR : Base de Remboursement | FR : Frais Réels | SS : Sécurité Sociale | € : euros",
            {"BR": "Base de Remboursement", "FR": "Frais Réels", "SS": "Sécurité Sociale"},
        ),
    ],
)
def test_long_form_and_acronym_pairs(text, pairs):
    assert extract(text) == pairs


@pytest.mark.parametrize(
    "text",
    [
        "la marge de risque (Risk Margin) est calculée",  # a translation, not an acronym
        "the form of a European Company (SE) as defined in Regulation (EC) No 2157/2001",  # letters do not match
        "transmises aux Données Personnelles (DPO) du groupe",  # "PersOnnelles" is no initial
        "amending Directives 2014/65/EU (EU) 2016/97",  # the acronym repeated, no long form
        "le sinistre (voir page 12) et la franchise (FR)",  # one word cannot spell two letters
        "Note : SCR : le capital est calculé",  # a glossary-like colon whose words do not spell it
    ],
)
def test_no_bogus_pair(text):
    assert extract(text) == {}


def test_the_most_frequent_long_form_wins():
    text = (
        "Autorité de Contrôle Prudentiel et de Résolution (ACPR). " * 1
        + "Autorité de contrôle prudentiel et de résolution (ACPR). " * 2
    )
    assert extract(text) == {
        "ACPR": "Autorité de Contrôle Prudentiel et de Résolution"
    }  # same words, first written form


def test_is_acronym():
    assert is_acronym("SCR") and is_acronym("S/P") and is_acronym("OPTAM-CO") and is_acronym("IFRS17")
    assert not is_acronym("Scr") and not is_acronym("S") and not is_acronym("ABCDEFGHI")


DICTIONARY = AcronymDictionary(
    {
        "SCR": "capital de solvabilité requis",
        "ITT": "incapacité temporaire totale",
        "S/P": "sinistres à primes",
        "OPTAM": "Option Pratique Tarifaire Maîtrisée",
        "OPTAM-CO": "OPTAM de Chirurgie et d'Obstétrique",
    }
)


def test_resolution_adds_the_long_form_once():
    assert (
        DICTIONARY.resolve("Ma garantie ITT : l'ITT est-elle due ?")
        == "Ma garantie ITT (incapacité temporaire totale) : l'ITT est-elle due ?"
    )


@pytest.mark.parametrize(
    "text, resolved",
    [
        ("Comment calculer le SCR ?", {"SCR": "capital de solvabilité requis"}),
        ("comment calculer le scr ?", {}),  # case-sensitive
        ("Le SCRIPT de calcul", {}),  # whole words only
        ("le ratio S/P de 2023", {"S/P": "sinistres à primes"}),
        ("un médecin OPTAM-CO", {"OPTAM-CO": "OPTAM de Chirurgie et d'Obstétrique"}),  # the longest acronym
        ("le capital de solvabilité requis (SCR)", {}),  # already written out
    ],
)
def test_resolution_is_case_sensitive_on_word_boundaries(text, resolved):
    assert DICTIONARY.resolve_traced(text)[1] == resolved


def test_dictionary_merges_the_corpus_and_the_thesaurus_corpus_first():
    thesaurus = Thesaurus.from_dicts(
        [
            (
                "t.json",
                {
                    "concepts": [
                        {"id": "itt", "prefLabel": {"fr": "incapacité temporaire totale"}, "altLabel": {"fr": ["ITT"]}},
                        {
                            "id": "scr",
                            "prefLabel": {"fr": "capital de solvabilité requis"},
                            "altLabel": {"en": ["SCR"]},
                        },
                        {"id": "pma", "prefLabel": {"fr": "procréation assistée"}, "hiddenLabel": {"fr": ["PMA"]}},
                    ]
                },
            )
        ]
    )
    dictionary = AcronymDictionary.build(["le Solvency Capital Requirement (SCR) est calculé"], thesaurus)
    assert dictionary.long_forms == {"SCR": "Solvency Capital Requirement", "ITT": "incapacité temporaire totale"}
    assert dictionary.sources == {"SCR": "corpus", "ITT": "thesaurus:itt"}  # hidden labels name no acronym
    assert (
        dictionary.resolve("SCR et ITT") == "SCR (Solvency Capital Requirement) et ITT (incapacité temporaire totale)"
    )
    assert AcronymDictionary().resolve("SCR") == "SCR"


def test_an_acronym_the_documents_write_as_a_name_is_not_spelt_out():
    texts = (
        ["La Mutuelle assurance des instituteurs de France (MAIF) assure votre habitation."]
        + ["MAIF vous indemnise. Contactez MAIF."] * 3
        + ["La Perte totale et irréversible d'autonomie (PTIA) : en cas de PTIA, le capital est versé."]
    )
    dictionary = AcronymDictionary.build(texts)
    assert dictionary.skipped == {"MAIF": "Mutuelle assurance des instituteurs de France"}  # 7 times vs once
    assert dictionary.long_forms == {"PTIA": "Perte totale et irréversible d'autonomie"}  # twice vs once
    assert dictionary.resolve("Chez MAIF, la PTIA") == "Chez MAIF, la PTIA (Perte totale et irréversible d'autonomie)"
