"""The question's own scope: the documents it names, never applied silently."""

from rag_assets.retrieve.query import AnalyzedQuery
from rag_assets.retrieve.scope import DocumentIdentities, names, take_turns

DOCUMENTS = {
    "aha": {"title": "Assurance habitation", "file_name": "maif_habitation-aha_2021.pdf", "language": "fr"},
    "raqvam": {"title": "Conditions générales MAIF - contrat RAQVAM", "file_name": "maif_habitation-raqvam_2011.pdf"},
    "nautis": {"title": "Assurance navigation de plaisance – Nautis", "file_name": "maif_nautis_2021.pdf"},
    "tns": {
        "title": "Notice d'information – Allianz Prévoyance Travailleur Non Salarié",
        "file_name": "allianz-vie_prevoyance-tns-notice_2025.pdf",
    },
    "mila": {
        "title": "Multirisque habitation",
        "file_name": "mila_mrh-locataire-ipid_2024.pdf",
        "extra": {"insurer": "Mila"},
    },
}
IDENTITIES = DocumentIdentities.of(DOCUMENTS)


def scope(question, known=lambda t: True, common=lambda t: False):
    return IDENTITIES.scope(AnalyzedQuery.of(question, "fr"), known, common)


def test_a_product_name_limits_the_search_to_its_document():
    assert scope("Avec mon contrat Raqvam, le vol de mon sac est-il couvert ?").document_ids == ("raqvam",)


def test_an_insurer_keeps_all_its_documents_and_a_comparison_keeps_both():
    assert set(scope("Chez MAIF, quelle franchise ?").document_ids) == {"aha", "raqvam", "nautis"}
    both = scope("Je compare Nautis (MAIF) et la prévoyance Allianz TNS : quel plafond ?")
    assert {"nautis", "tns"} <= set(both.document_ids)


def test_document_kind_words_and_common_nouns_name_nothing():
    assert scope("Que disent les conditions générales sur la notice ?").document_ids == ()
    assert scope("je suis locataire", common=lambda t: t.startswith("locat")).document_ids == ()


def test_sidecar_insurer_names_a_document():
    assert scope("Mila couvre-t-elle le vol ?").document_ids == ("mila",)


def test_a_name_no_document_holds_is_reported():
    result = scope("Chez Groupama, quelle franchise ?", known=lambda t: t != "groupam")
    assert result.unknown_names == ("Groupama",)
    assert "no document mentions Groupama" in result.describe()


def test_an_insurer_in_capitals_no_document_holds_is_reported_but_other_acronyms_are_not():
    known = lambda t: t not in ("axa", "itt")  # noqa: E731
    assert scope("Mon prêt immobilier est assuré chez AXA : quel délai de carence ?", known).unknown_names == ("AXA",)
    assert scope("Assuré auprès d'AXA, suis-je couvert ?", known).unknown_names == ("AXA",)
    # an acronym the reader writes for words the documents spell out is left to the acronym dictionary
    assert scope("Quelle franchise pour l'ITT chez MAIF ?", known).unknown_names == ()


def test_names_are_capitalised_words_inside_a_sentence():
    assert names("Chez Groupama, j'ai la MAIF. Mon contrat Raqvam") == ["Groupama", "MAIF", "Raqvam"]


def test_elided_and_sentence_opening_names_are_names():
    assert names("D'après la fiche IPID d'Allianz : MAIF (voisinage) contre Nautis ?") == [
        "IPID",
        "Allianz",
        "MAIF",
        "Nautis",
    ]


WITH_IPID = DocumentIdentities.of(
    {
        **DOCUMENTS,
        "ipid": {
            "title": "Assurance prévoyance – Document d'information",
            "file_name": "allianz-vie_prevoyance-tns-ipid_2024.pdf",
        },
    }
)


def test_a_name_the_reader_wrote_stays_in_scope_when_other_names_weigh_more():
    # the notice matches four written words, the IPID one: the IPID is still in scope
    found = WITH_IPID.scope(
        AnalyzedQuery.of("D'après la fiche IPID d'Allianz Prévoyance Travailleur Non Salarié, quel plafond ?", "fr"),
        lambda t: True,
        lambda t: False,
    )
    assert {"ipid", "tns"} <= set(found.document_ids)


def test_a_comparison_of_two_insurers_has_two_sides():
    found = scope("Délai de carence : MAIF (litige de voisinage) contre la prévoyance TNS Allianz ?")
    assert found.groups == (("aha", "nautis", "raqvam"), ("tns",))
    assert "compared:" in found.describe()


def test_one_precisely_named_document_is_a_side_of_its_wider_scope():
    found = WITH_IPID.scope(
        AnalyzedQuery.of("Selon l'IPID de la prévoyance TNS d'Allianz, le suicide est-il couvert ?", "fr"),
        lambda t: True,
        lambda t: False,
    )
    assert found.document_ids == ("ipid", "tns")
    assert found.groups == (("ipid",), ("tns",))


def test_a_product_named_most_precisely_is_the_whole_scope():
    # "TNS" names the notice and its IPID; "Allianz" also names the Personne Clé notice, another
    # product: it used to take every other place of the ranking
    identities = DocumentIdentities.of(
        {
            **DOCUMENTS,
            "ipid": {
                "title": "Assurance prévoyance – Document d'information",
                "file_name": "allianz-vie_prevoyance-tns-ipid_2024.pdf",
            },
            "cle": {
                "title": "Notice d'information – Allianz Prévoyance Personne Clé",
                "file_name": "allianz-vie_prevoyance-personne-cle-notice_2025.pdf",
            },
        }
    )
    found = identities.scope(
        AnalyzedQuery.of("J'ai une prévoyance TNS Allianz avec un capital décès : quel délai de carence ?", "fr"),
        lambda t: True,
        lambda t: False,
    )
    assert found.document_ids == ("ipid", "tns") and found.groups == ()
    assert set(
        identities.scope(
            AnalyzedQuery.of("Chez Allianz, quel délai de carence ?", "fr"), lambda t: True, lambda t: False
        ).document_ids
    ) == {"ipid", "tns", "cle"}


def test_a_question_naming_one_document_has_no_sides():
    assert scope("Avec mon contrat Raqvam, le vol de mon sac est-il couvert ?").groups == ()


def test_sides_take_turns_in_their_own_order():
    ranked = ["a1", "a2", "a3", "b1", "x1", "b2"]
    assert take_turns(ranked, (("a",), ("b",)), lambda item: item[0]) == ["a1", "b1", "a2", "b2", "a3", "x1"]


WITH_AUTO = {
    **DOCUMENTS,
    "vam": {"title": "Conditions générales contrat VAM", "file_name": "maif_auto-moto-vam_2016.pdf"},
    "pj": {
        "title": "Conditions générales contrat protection juridique",
        "file_name": "maif_protection-juridique_2018.pdf",
    },
}


def test_a_file_names_extension_and_year_name_nothing():
    terms = DocumentIdentities.of(WITH_AUTO).terms["vam"]
    assert "pdf" not in terms and "2016" not in terms and {"auto", "vam", "maif"} <= terms


def test_the_readers_word_for_a_product_names_its_policy_through_the_thesaurus():
    from rag_assets.text.thesaurus import load_thesaurus

    identities = DocumentIdentities.of(WITH_AUTO, load_thesaurus())
    assert "voitur" in identities.terms["vam"]  # "auto" in the file name; "voiture" a hidden label
    question = AnalyzedQuery.of("Ma voiture assurée à la MAIF a été noyée : quelle franchise ?", "fr")
    assert identities.scope(question, lambda t: True, lambda t: False).document_ids == ("vam",)


def test_the_insurer_the_reader_has_leaves_other_insurers_policies_out():
    from rag_assets.text.thesaurus import load_thesaurus

    # golden-insurance gi065: MAIF's habitation policy is an "MRH" too (thesaurus), but not
    # the reader's, and its assistance clause took every other rank from Mila's
    identities = DocumentIdentities.of(DOCUMENTS, load_thesaurus())
    question = AnalyzedQuery.of(
        "Je loue un appartement en Corse assuré en MRH locataire chez Mila. Puis-je appeler l'assistance serrurerie ?",
        "fr",
    )
    assert "mrh" in identities.terms["aha"]
    assert identities.scope(question, lambda t: True, lambda t: False).document_ids == ("mila",)


def test_common_words_of_a_title_choose_among_the_named_insurers_policies():
    common = {"protect", "jurid", "voitur"}.__contains__
    identities = DocumentIdentities.of(WITH_AUTO)
    named = identities.scope(
        AnalyzedQuery.of("J'ai la protection juridique MAIF : quel plafond ?", "fr"), lambda t: True, common
    )
    assert named.document_ids == ("pj",)
    # alone, a common phrase names nothing: many policies have a legal-protection section
    alone = identities.scope(
        AnalyzedQuery.of("La protection juridique couvre-t-elle mon litige ?", "fr"), lambda t: True, common
    )
    assert alone.document_ids == ()


def test_function_words_are_no_content_of_a_question():
    from rag_assets.retrieve.query import content_terms

    # "chez" is in almost no passage: counted, it made every "chez MAIF" question look uncovered
    assert content_terms("J'ai été cambriolé chez moi, suis-je bien couvert chez MAIF ?", "fr") == [
        "cambriol",
        "couvert",
        "maif",
    ]
    # the auxiliaries say how it is asked: "va-t-elle jouer ?", "Puis-je appeler … ?"
    assert content_terms("La garantie bris de glace va-t-elle jouer ?", "fr") == ["garant", "bris", "glac", "jou"]
    assert "puis" not in content_terms("Puis-je appeler l'assistance serrurerie ?", "fr")


LINES = DocumentIdentities.of(
    {
        "pet": {"title": "Santé chien chat", "file_name": "groupama-pj_sante-chien-chat-dg_2026.pdf"},
        "car": {"title": "DG Auto Acheel", "file_name": "acheel-allianz_auto-dg_2022.pdf"},
        "health": {"title": "Swiss Santé", "file_name": "swisslife_sante-swiss-sante-dg_2004.pdf"},
        "disability": {"title": "Mod. 5751", "file_name": "swisslife_prevoyance-tns-notice_2003.pdf"},
    }
)


def test_a_word_naming_another_insurers_policy_never_widens_the_named_insurers_scope():
    # "auto" names Acheel's car policy; beside the insurer the reader wrote, it only says
    # which of that insurer's policies is meant, and Groupama has no car policy here
    found = LINES.scope(
        AnalyzedQuery.of("Mon assurance auto Groupama couvre-t-elle le bris de glace ?", "fr"),
        lambda t: True,
        lambda t: False,
    )
    assert found.document_ids == ("pet",) and found.groups == ()


def test_a_name_in_two_words_matches_its_one_word_spelling_in_a_file_name():
    found = LINES.scope(
        AnalyzedQuery.of("Mon contrat Swiss Life prévoit-il une rente ?", "fr"), lambda t: True, lambda t: False
    )
    assert "disability" in found.document_ids and "car" not in found.document_ids


def test_the_insurer_read_from_a_legal_notice_names_a_document_its_title_does_not():
    read = DocumentIdentities.of(
        {
            **DOCUMENTS,
            "auto": {
                "title": "Assurance Automobile – Dispositions générales",
                "file_name": "dg-auto-2022.pdf",
                "identity": {"insurer": "Zeta IARD", "distributor": "Courtiers Réunis", "branch": "auto"},
            },
        }
    )
    question = AnalyzedQuery.of("Chez Zeta, mon pare-brise est-il couvert ?", "fr")
    assert read.scope(question, lambda t: True, lambda t: False).document_ids == ("auto",)
