"""Figures compared across spellings, the figures a question asserts (and those that only
set the scene), and false premises found against source texts: plain functions, no store."""

from decimal import Decimal

import pytest

from rag_assets.answering.extractive import Unit
from rag_assets.answering.figures import (
    DATE,
    DURATION,
    MONEY,
    PERCENT,
    figure_value,
    figures,
    same_figure,
    wanted_kinds,
)
from rag_assets.answering.premises import (
    asserted_figures,
    figure_premises,
    inclusion_premises,
    name_premises,
    stated_figures,
)


def one(text: str):
    [figure] = figures(text)
    return figure


@pytest.mark.parametrize(
    "a, b",
    [
        ("5 000 €", "5000 euros"),
        ("5 000 €", "5.000 €"),
        ("6 930 k€", "6 930 000 €"),
        ("99,5 %", "99.5 pour cent"),
        ("30 jours", "un mois"),
        ("deux ans", "24 mois"),
        ("trois (3) mois", "3 mois"),
        ("1er octobre 2024", "2024-10-01"),
        ("250 e", "250 €"),
        ("2 000e", "2 000 €"),  # a font printing the euro sign as "e" (MAIF Raqvam 2011)
    ],
)
def test_two_spellings_of_one_figure_compare_equal(a, b):
    assert same_figure(one(a), one(b))


@pytest.mark.parametrize("a, b", [("5 000 €", "3 000 €"), ("6 mois", "6 jours"), ("99,5 %", "99,9 %")])
def test_different_figures_differ(a, b):
    assert not same_figure(one(a), one(b))


@pytest.mark.parametrize(
    "text, value",
    [
        ("12 mois", 360),
        ("un an", 365),
        ("6 jours", 6),
        ("5.000 €", 5000),
        ("99,5 %", Decimal("99.5")),
        ("1er octobre 2024", None),
    ],
)
def test_a_figure_compared_with_a_band_or_a_period_reads_as_one_value(text, value):
    # durations in days (a month is 30), the longest reading of an amount, no date
    assert figure_value(one(text)) == value


def test_an_ordinal_against_its_number_is_no_amount():
    assert one("le 76e anniversaire").kind != MONEY and one("au-delà du 3e mois").kind != MONEY


@pytest.mark.parametrize(
    "question, asserted",
    [
        ("La franchise inondation en zone A est-elle bien de 3 000 € ?", ["3 000 €"]),
        ("On m'a dit que la franchise est de 500 €. C'est exact ?", ["500 €"]),
        ("Pourquoi le SCR est-il calibré à 99,9 % ?", ["99,9 %"]),
        ("Le SCR est-il calibré à 99,9 % ?", ["99,9 %"]),  # a yes/no question asserts its figure
        ("Est-ce que la franchise inondation en zone A est de 3 000 € ?", ["3 000 €"]),  # a model's rewrite
        ("Est-ce que tu sais combien coûte la franchise pour 10 jours ?", []),
        ("Je suis enceinte de 5 mois et je dois annuler mon séjour. Est-ce que ça marche ?", []),
        ("Je pars en vacances à 300 km de chez moi depuis 20 jours. Quelle est la franchise vol ?", []),
        ("On est 4 : combien MAIF prend-elle en charge pour 10 jours d'hôtel ?", []),  # asks, asserts nothing
    ],
)
def test_only_the_figures_a_question_takes_for_granted_are_premises(question, asserted):
    assert [f.raw for f in asserted_figures(question)] == asserted


@pytest.mark.parametrize(
    "question, stated",
    [
        ("Puisque l'indemnité journalière est de 80 €, combien toucherai-je pour 10 jours ?", ["80 €"]),
        ("Mon contrat prévoit une franchise de 300 €, que me rembourse-t-on pour un vol ?", ["300 €"]),
        ("La garantie couvre jusqu'à 5 000 €, donc mon vélo à 3 000 € est couvert ?", ["5 000 €"]),
        ("Les frais d'obsèques sont remboursés jusqu'à 1 500 € : que dois-je envoyer ?", ["1 500 €"]),
        # a definite noun phrase, "étant de", a cover verb right before its figure
        ("Avec le plafond de 5 000 € pour les bijoux, que me rembourse-t-on pour une bague ?", ["5 000 €"]),
        ("Que fournir pour obtenir le capital décès de 50 000 € ?", ["50 000 €"]),
        ("Le préavis de résiliation étant de 3 mois, quand dois-je écrire ?", ["3 mois"]),
        ("Comme le contrat rembourse 150 % de la BR, combien pour une consultation ?", ["150 %"]),
        # the reader's own case: what the lessor kept, the option they chose
        ("Le loueur me retient une franchise de 800 € : combien me rembourse-t-on ?", []),
        ("Ma garantie a une franchise de 15 jours : s'applique-t-elle après 3 nuits d'hôpital ?", []),
        ("Quelle est la franchise pour un sinistre de 3 000 € ?", []),  # the claim's figure, not the policy's
        ("Ma voiture vaut 35 000 € et a 85 000 km : quelle franchise ?", []),
        ("J'ai 52 ans : quel est le délai de carence ?", []),
    ],
)
def test_a_figure_given_as_the_policys_own_value_is_stated_wherever_it_stands(question, stated):
    assert [f.raw for f in stated_figures(question)] == stated


@pytest.mark.parametrize(
    "question",
    [
        "Puisque la franchise est de 8 000 €, combien vais-je toucher ?",
        "J'ai lu que la franchise était de 8 000 € : combien vais-je toucher ?",
        "D'après mon conseiller, la franchise est de 8 000 €. Combien vais-je toucher ?",
    ],
)
def test_a_premise_the_question_builds_on_or_repeats_is_asserted(question):
    assert [f.raw for f in asserted_figures(question)] == ["8 000 €"]


def test_a_stated_figure_is_flagged_when_the_answering_passage_gives_another_not_when_no_source_writes_it():
    question = "Mon contrat prévoit une franchise de 300 €, que me rembourse-t-on pour un vol ?"
    stated = stated_figures(question)
    passage = "En cas de vol, une franchise de 150 € reste à la charge de l'assuré."
    [premise] = figure_premises(
        question, [("S1", "Vol", passage, passage)], [passage, "Plafond 300 € par objet."], claims=[], stated=stated
    )
    assert premise.kind == "figure-contradicted" and premise.found == ["150 €"]
    # absent from every source: the reader's own figure, not flagged
    unrelated = "Le vol est garanti dans la limite des plafonds indiqués aux conditions particulières."
    assert figure_premises(question, [("S1", "Vol", unrelated, unrelated)], [unrelated], claims=[], stated=stated) == []


def test_a_contradicted_figure_is_flagged_with_the_source_value():
    question = "La franchise inondation en zone A est-elle bien de 3 000 € ?"
    table = "Inondation ; Zone A ; 5 000 €"
    [premise] = figure_premises(
        question, [("S1-T1", "Tableau 1", table, table)], [table, "Inondation ; Zone B ; 3 000 €"]
    )
    assert premise.kind == "figure-contradicted" and premise.found == ["5 000 €"] and premise.source_id == "S1-T1"
    assert "3 000 €" in premise.message and "5 000 €" in premise.message


def test_a_figure_no_source_holds_is_flagged_absent():
    question = "Le préavis est-il bien de six mois ?"
    [premise] = figure_premises(
        question,
        [("S2", "Avenant", "préavis de deux (2) mois", "préavis de deux (2) mois")],
        ["le préavis de résiliation est ramené de trois (3) mois à deux (2) mois"],
    )
    assert premise.kind == "figure-absent" and premise.found == ["deux (2) mois"]


def test_a_confirmed_figure_is_no_premise():
    question = "La franchise inondation en zone A est-elle bien de 5 000 € ?"
    table = "Inondation ; Zone A ; 5 000 €"
    assert figure_premises(question, [("S1", "Tableau 1", table, table)], [table]) == []


def test_a_variant_the_sources_never_name_is_flagged_with_the_ones_they_do():
    sources = ["P1 – Critique 4 heures 1 jour ouvré", "P2 – Majeure 8 heures", "P3 – Mineure 1 jour ouvré"]
    [premise] = name_premises("Quel est le délai de rétablissement pour une priorité P4 ?", sources)
    assert premise.kind == "name-absent" and premise.claim == "P4" and premise.found == ["P1", "P2", "P3"]
    assert name_premises("Quel est le délai de rétablissement pour une priorité P3 ?", sources) == []
    levels = ["Niveau 1 Niveau 2 Niveau 3 : forfait implantologie 300 €"]
    assert name_premises("Gamme Équilibre niveau APICIL 5 : quel forfait ?", levels) == []  # a name, not a level


def test_a_value_the_source_writes_twice_is_given_once():
    passage = "le SCR est calibré à 99,5 % : il correspond à la VaR à 99,5 % des fonds propres"
    [premise] = figure_premises(
        "Le SCR est-il calibré à 99,9 % ?", [("S3", "Lien avec le SCR", passage, passage)], [passage]
    )
    assert premise.found == ["99,5 %"] and premise.message.count("99,5 %") == 1


def test_the_figure_a_sentence_gives_for_what_is_asked_is_the_one_compared():
    # "6 mois" ends its sentence: its own words are those before it, not the next sentence's
    passage = (
        "Le délai d'attente de cette garantie est de 6 mois. Elle prévoit aussi des indemnités pour un "
        "nouveau-né de moins d'un mois après le départ de la mère."
    )
    [premise] = figure_premises(
        "On m'a dit que le capital jouait après 3 mois de délai d'attente. C'est exact ?",
        [("S1", "Notice", passage, passage)],
        [passage],
    )
    assert premise.found == ["6 mois"]  # absent from the sources, and the value they give
    # two values in one sentence: the one whose own words name what the question asks
    listing = "la franchise s'élève à 380 € et 1 520 € en cas d'événement sécheresse."
    [premise] = figure_premises(
        "Fissures dues à la sécheresse : la franchise sera de 380 €, c'est bien ça ?",
        [("S2", "Annexe", listing, listing)],
        [listing],
    )
    assert premise.found == ["1 520 €"]


@pytest.mark.parametrize(
    "question, kinds",
    [
        ("Jusqu'à combien suis-je couvert ?", {MONEY}),
        ("Dans quel délai dois-je déclarer le sinistre ?", {DURATION}),
        ("Combien de jours ai-je pour renoncer ?", {DURATION}),
        ("Quel taux de remboursement pour les lunettes ?", {PERCENT, MONEY}),
        ("Qui peut souscrire ce contrat ?", set()),
        ("Nous partons à 10 amis : sommes-nous un « Groupe » au sens du contrat ?", set()),  # the verb, not a sum
        ("Quelles sommes sont versées au décès ?", {MONEY}),
        ("Je résilie au 31 décembre : jusqu'à quelle date puis-je envoyer ma demande ?", {DATE}),
    ],
)
def test_the_kind_of_figure_a_question_asks_for(question, kinds):
    assert wanted_kinds(question) == kinds


def _unit(text: str, source_id: str = "S1", context: str = "Multirisque habitation") -> Unit:
    return Unit(source_id, "S1", "d1", text, text, context, "fr")


def test_a_guarantee_the_source_lists_as_optional_is_flagged():
    units = [
        _unit("LES GARANTIES DE BASE"),
        _unit("- Incendie - Dégât des eaux"),
        _unit("LES GARANTIES OPTIONNELLES"),
        _unit("- Vol - Bris de glace - Dommage électrique"),
    ]
    question = "Je suis locataire chez Mila. Le vol est-il couvert dans les garanties de base ?"
    [premise] = inclusion_premises(question, units, lambda s: "IPID Mila", lambda term: 1.0)
    assert premise.kind == "guarantee-not-included" and premise.source_id == "S1"
    assert "optionnelles" in premise.message and "Vol" in premise.message and "IPID Mila" in premise.message
    # a guarantee of the base list, a question that asks for a figure: no premise
    assert inclusion_premises("L'incendie est-il couvert dans les garanties de base ?", units, str, lambda t: 1.0) == []
    assert inclusion_premises("Quel plafond pour le vol ?", units, str, lambda t: 1.0) == []


def test_a_table_row_not_subscribed_is_flagged_with_its_header():
    header = "| DISTRIBUTION | ARTICLE | GARANTIES |"
    row = _unit("| Non souscrite | Extension n°2 | Cure thermale |", "S1-T1", f"Notice\n\n{header}")
    row.display = "DISTRIBUTION : Non souscrite ; ARTICLE : Extension n°2 ; GARANTIES : Cure thermale."
    [premise] = inclusion_premises(
        "Si j'annule ma cure thermale, suis-je remboursé ?",
        [row],
        lambda s: "Tableau 1",
        lambda term: {"cur": 3.0}.get(term, 1.0),
    )
    assert "non souscrite" in premise.message and premise.source_id == "S1-T1"


def test_a_guarantee_under_an_optional_heading_is_flagged():
    # the lead-in is the heading the list sits under (a joined section's heading: the unit's context)
    item = _unit(
        "- Vol - Bris de glace - Dommage électrique", context="Multirisque habitation\nLES GARANTIES OPTIONNELLES"
    )
    [premise] = inclusion_premises(
        "Je suis chez Mila. Le vol est-il couvert dans les garanties de base ?",
        [item],
        lambda s: "IPID Mila",
        lambda term: 1.0,
    )
    assert "optionnelles" in premise.message


def test_a_guarantee_the_readers_formula_does_not_have_in_a_comparison_table_is_flagged():
    row = _unit(
        "| - Protection juridique non | non | oui |",
        "S1-T2",
        "Raqvam\n| LES GARANTIES | RAQVAM équilibre | RAQVAM sérénité |",
    )
    row.display = (
        "LES GARANTIES RAQVAM arbitrage : - Protection juridique non ; RAQVAM équilibre : non ; RAQVAM sérénité : oui."
    )
    weights = lambda term: {"protect": 3.0, "jurid": 3.0}.get(term, 1.0)  # noqa: E731
    question = "J'ai la formule Raqvam Équilibre de la MAIF. La garantie Protection juridique est-elle incluse ?"
    [premise] = inclusion_premises(question, [row], lambda s: "Tableau 2", weights)
    assert premise.kind == "guarantee-not-included" and premise.source_id == "S1-T2"
    assert "« RAQVAM équilibre »" in premise.message and "« non »" in premise.message
    # the formula that has it: nothing to flag
    assert inclusion_premises(question.replace("Équilibre", "Sérénité"), [row], str, weights) == []
    # headers that go on with the formula's slogan (MAIF Raqvam p.16, wrapped header cells joined)
    row.display = (
        "LES GARANTIES : - Protection juridique ; RAQVAM arbitrage Bien s'assurer sans tout assurer : non ; "
        "RAQVAM équilibre Compter sur la MAIF en toutes circonstances : non ; "
        "RAQVAM sérénité Exiger un accompagnement maximum : oui."
    )
    [premise] = inclusion_premises(question, [row], lambda s: "Tableau 2", weights)
    assert "« RAQVAM équilibre Compter sur la MAIF en toutes circonstances »" in premise.message
    assert inclusion_premises(question.replace("Équilibre", "Sérénité"), [row], str, weights) == []
    # "Raqvam" alone names every column: no formula is named
    assert (
        inclusion_premises("J'ai un contrat Raqvam. La protection juridique est-elle incluse ?", [row], str, weights)
        == []
    )


def test_a_waiting_period_the_source_says_there_is_none_of_is_flagged_under_its_other_name():
    from rag_assets.answering.premises import absence_premises
    from rag_assets.text.thesaurus import load_thesaurus

    thesaurus = load_thesaurus()
    none = _unit("Cette garantie n'a pas de délai d'attente : vous êtes couvert dès la date d'effet de la garantie.")
    question = "J'ai un capital décès toutes causes. Quel est le délai de carence avant que ce capital soit garanti ?"
    [premise] = absence_premises(
        question,
        [_unit("Le capital est versé au bénéficiaire."), none],
        thesaurus,
        lambda unit: 0.5,
        0.3,
        lambda s: "Notice TNS",
        0,
    )
    assert premise.kind == "none-such" and premise.claim == "délai de carence" and premise.source_id == "S1"
    assert "n'a pas de délai d'attente" in premise.message and "Notice TNS" in premise.message
    # a passage that covers the question less than an answer would does not count
    assert absence_premises(question, [none], thesaurus, lambda unit: 0.2, 0.3, str) == []
    # "sans délai de carence dès lors que…", "aucune franchise n'est appliquée en cas de…": conditions, not "none"
    conditional = [
        _unit("Les garanties prennent effet sans délai de carence dès lors que l'adhésion est simultanée."),
        _unit("Aucune franchise n'est appliquée en cas de tentative de vol déjouée."),
    ]
    assert absence_premises(question, conditional, thesaurus, lambda unit: 0.5, 0.3, str) == []
    assert absence_premises("Quelle franchise pour un vol ?", conditional, thesaurus, lambda unit: 0.5, 0.3, str) == []


def test_the_passage_saying_there_is_none_leads_the_extractive_answer():
    from rag_assets.answering.model import Paragraph
    from rag_assets.answering.premises import Premise, none_such_first

    none = "Cette garantie n'a pas de délai d'attente : vous êtes couvert dès la date d'effet."
    premise = Premise("none-such", "délai de carence", [none], "S7", "Notice", 0, "…")
    other = Paragraph(text="Le capital est versé au bénéficiaire.", source_ids=["S2"], sub_question=0)
    first, second = none_such_first([other], [premise])
    assert (first.text, first.source_ids, first.sub_question) == (none, ["S7"], 0) and second is other
    already = Paragraph(text=none, source_ids=["S7"], sub_question=0)
    assert none_such_first([already], [premise]) == [already]
    # other kinds of premise are said in the notes, not added as paragraphs
    figure = Premise("figure-contradicted", "250 €", ["125 €"], "S3", "Tableau", 0, "…")
    assert none_such_first([other], [figure]) == [other]


def test_a_day_of_every_year_is_a_date():
    # "au 31 octobre au plus tard": a date without its year, not the number 31
    [deadline] = figures("Moyennant un préavis de 2 mois, c'est-à-dire au 31 octobre au plus tard")[1:]
    assert deadline.kind == DATE and deadline.values == {"--10-31"}
    assert [f.values for f in figures("le 1er janvier")] == [{"--01-01"}]
    assert [f.values for f in figures("au 31 décembre 2024")] == [{"2024-12-31"}]  # the year stays with it
    assert not same_figure(figures("31 octobre")[0], figures("31 décembre")[0])
