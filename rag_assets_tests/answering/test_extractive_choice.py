"""How the offline answerer chooses what it shows (sample corpus, real store): parents in
the hybrid order, sentences ranked with the parent's rank as a prior, labels that repeat
the question and passages of a sibling code pushed down, the figure the question asks for
preferred."""

from __future__ import annotations

import dataclasses

import pytest

from rag_assets.answering import extractive
from rag_assets.answering.extractive import SPEAKING_PASSAGES, ExtractiveAnswerer, Unit, _table_units
from rag_assets.answering.gate import FEATURES
from rag_assets.answering.model import SubQuestion
from rag_assets.answering.retrieval import RetrievalOptions, Retriever


def _unit(text: str, context: str = "Contrat Habitation Multirisque") -> Unit:
    return Unit("S1", "S1", "d1", text, text, context, "fr")


def test_without_a_reranker_the_parents_keep_the_hybrid_order(kb):
    question = "Quelle est la franchise pour une inondation en zone A ?"
    retrieved = Retriever(kb).retrieve(question, 3)
    order = [h.parent_id for h in kb.hits(kb.retrieve(question), 10)]
    kept = retrieved.sub.parent_ids
    assert kept and kept == sorted(kept, key=order.index) and kept[0] == order[0]


@pytest.mark.parametrize(
    "question, better, worse",
    [
        # a label that only repeats the question ranks below the sentence that answers
        (
            "Quelle est la franchise inondation ?",
            "La franchise inondation est fixée par le tableau des franchises.",
            "Franchise inondation",
        ),
        # a figure of the kind asked is preferred
        (
            "Quel est le délai de déclaration du sinistre ?",
            "Le sinistre est déclaré dans un délai de cinq jours ouvrés.",
            "Le sinistre est déclaré dans un délai fixé, 150 € au plus.",
        ),
    ],
)
def test_the_sentence_that_answers_outranks_a_look_alike(kb, question, better, worse):
    answerer = ExtractiveAnswerer(kb)
    assert answerer.score(question, _unit(better)) > answerer.score(question, _unit(worse))


def test_the_figure_a_question_gives_earns_no_bonus_as_its_answer(kb):
    from rag_assets.answering.extractive import WANTED_FIGURE_BONUS

    answerer = ExtractiveAnswerer(kb)
    asks = "Je résilie au 31 décembre : jusqu'à quelle date envoyer ma demande ?"
    plain = "Je résilie au 31 décembre : où envoyer ma demande ?"
    gain = {
        text: answerer.score(asks, _unit(text)) - answerer.score(plain, _unit(text))
        for text in (
            "La demande est envoyée au 31 octobre au plus tard.",
            "La demande est envoyée pour le 31 décembre.",
        )
    }
    # "31 octobre" is the date asked, and earns the bonus; "31 décembre" is the one the question gives
    assert (
        gain["La demande est envoyée au 31 octobre au plus tard."]
        > gain["La demande est envoyée pour le 31 décembre."] + WANTED_FIGURE_BONUS / 2
    )


def test_a_passage_under_a_sibling_code_is_pushed_down_only_when_the_asked_one_is_present(kb):
    answerer = ExtractiveAnswerer(kb)
    question = "Quel est le plafond en formule PJ2 ?"
    pj1 = _unit("Le plafond est de 20 000 € par litige.", "Protection juridique\nFormule PJ1")
    pj2 = _unit("Le plafond est de 50 000 € par litige.", "Protection juridique\nFormule PJ2")
    assert answerer.score(question, pj2, present={"PJ1", "PJ2"}) > answerer.score(question, pj1, present={"PJ1", "PJ2"})
    both = "Quel est le plafond en formule PJ2 pour un bien en zone A ?"  # a qualified id beside the code
    assert answerer.score(both, pj1, present={"PJ1", "PJ2"}) < answerer.score(both, pj1)
    # a code no passage names (a premise to flag) does not push the others below the bar
    assert answerer.score(question, pj1, present={"PJ1"}) == answerer.score(question, pj1)


def test_the_terms_that_named_the_documents_are_recorded_with_the_sub_question(kb):
    retrieved = Retriever(kb).retrieve("Dans le contrat de maintenance MX-200, quel est le délai d'intervention ?", 3)
    assert set(retrieved.sub.scope_terms) == {"mainten", "mx", "200"}
    assert Retriever(kb).retrieve("Quelle est la franchise inondation ?", 3).sub.scope_terms == []


def test_a_sentence_naming_the_contract_does_not_win_by_its_name(kb):
    # the terms that chose the documents are found in every unit of them: the letterhead
    # repeating "MX-200" no longer beats the sentence that answers
    answerer = ExtractiveAnswerer(kb)
    question = "Contrat de maintenance MX-200 : quel est le délai d'intervention ?"
    letterhead = _unit("Contrat de maintenance MX-200 conclu entre les parties.", "Contrat de maintenance MX-200")
    answer = _unit("Le prestataire intervient dans un délai de quatre heures ouvrées.", "Contrat de maintenance MX-200")
    naming = {"mainten", "mx", "200"}
    assert answerer.score(question, answer, naming=naming) > answerer.score(question, letterhead, naming=naming)
    # credited, not removed: a unit's score keeps its scale for the sentence bar
    assert answerer.score(question, answer, naming=naming) >= answerer.score(question, answer)


def test_an_insurer_the_reader_holds_that_no_document_names_is_refused_however_well_the_words_are_covered(kb):
    # the policy's words are covered well; "Assurex", given as the reader's insurer, is in no document
    question = (
        "Mon contrat habitation multirisque chez Assurex : quelle est la franchise inondation en zone A, "
        "catastrophe naturelle ?"
    )
    retrieved = Retriever(kb).retrieve(question, 3)
    assert retrieved.sub.gate["unheld"] == ["Assurex"]
    assert retrieved.sub.status == "no_source_found" and retrieved.hits == []
    plain = Retriever(kb).retrieve(question.replace(" chez Assurex", ""), 3)
    assert plain.sub.status == "found" and plain.sub.gate["unheld"] == []


def test_a_name_no_document_contains_stays_unknown_after_the_reformulation(kb):
    # the rules' reformulation keeps content words: "Assurex franchise inondation zone A" opens
    # on the name, which is then no longer written as one
    retrieved = Retriever(kb).retrieve("Chez Assurex, quelle est la franchise inondation en zone A ?", 3)
    assert retrieved.sub.reformulated and retrieved.sub.queries[-1].startswith("Assurex")
    assert retrieved.sub.gate["unheld"] == ["Assurex"]
    assert retrieved.sub.status == "no_source_found"


def test_a_town_in_the_readers_story_does_not_refuse_what_the_policy_answers(kb):
    retrieved = Retriever(kb).retrieve(
        "J'habite à Quimperlé : quelle est la franchise pour une inondation en zone A ?", 3
    )
    assert retrieved.sub.gate["unknown_names"] == ["Quimperlé"] and retrieved.sub.gate["unheld"] == []
    assert retrieved.sub.status == "found"


def test_the_gate_records_its_features_probability_and_model(kb):
    retriever = Retriever(kb)
    gate = retriever.retrieve("Quelle est la franchise pour une inondation en zone A ?", 3).sub.gate
    assert set(gate["features"]) == set(FEATURES) and gate["model"] == retriever.gate.version
    assert gate["decision"] == "calibrated" and gate["probability"] >= retriever.gate.threshold
    assert Retriever(kb, options=RetrievalOptions(threshold=1.01))._passes(gate) is None


def test_the_same_sentence_in_two_parents_is_cited_from_the_better_ranked_one(kb):
    # a sister product's notice repeats the sentence under headings that happen to share the
    # question's words: the retrieval's order chooses the copy, not the headings
    from rag_assets.answering.citations import build_registry
    from rag_assets.answering.extractive import units_of

    question = "Quelle est la franchise pour une inondation en zone A dans mon appartement ?"
    first, second = [h.parent_id for h in kb.hits(kb.retrieve(question), 2)]
    registry = build_registry(kb, [first, second])
    units, _ = units_of(registry, kb)
    answerer = ExtractiveAnswerer(kb)
    sub = SubQuestion(text=question, parent_ids=[first, second], best_score=0.6)
    best = max(
        (u for u in units if registry[u.section_id].parent_id == first), key=lambda u: answerer.score(question, u)
    )
    other = next(u for u in units if registry[u.section_id].parent_id == second)
    copy = dataclasses.replace(
        best,
        source_id=other.source_id,
        section_id=other.section_id,
        document_id=other.document_id,
        context=best.context + "\nAppartement",
    )
    assert answerer.score(question, copy) > answerer.score(question, best)
    paragraphs = answerer.answer_sub_question(0, sub, [copy, *units], registry, targeted=True)
    assert paragraphs and paragraphs[0].source_ids[0] == best.source_id


def test_words_inside_an_e_mail_or_web_address_do_not_count(kb):
    answerer = ExtractiveAnswerer(kb)
    question = "Inondation en zone A : quelle franchise ?"
    contact = _unit("Réclamations : franchise.inondation.zone@assureur.example ou https://inondation.example/zone.")
    plain = _unit("Réclamations : écrivez au service clients.")
    assert answerer.score(question, contact) == answerer.score(question, plain)


def test_a_paragraph_repeating_a_false_figure_is_replaced_by_the_passage_giving_the_right_one(kb):
    from rag_assets.answering.citations import build_registry
    from rag_assets.answering.model import Paragraph
    from rag_assets.answering.premises import Premise, premise_passage

    [hit] = kb.hits(kb.retrieve("franchise inondation zone A"), 1)
    registry = build_registry(kb, [hit.parent_id])
    source = next(e for e in registry.entries.values() if e.kind == "table")
    passage = next(line for line in source.text.splitlines() if "5 000" in line)
    premise = Premise(
        "figure-contradicted",
        "500 €",
        ["5 000 €"],
        source.source_id,
        source.name,
        0,
        "La question indique 500 €, mais la source indique 5 000 €.",
        passage,
    )
    repeated = Paragraph(
        text="La franchise inondation en zone A est de 500 €.", source_ids=[source.source_id], sub_question=0
    )
    replacement = premise_passage(repeated, [premise], registry)
    assert replacement.source_ids == [source.source_id] and "5 000" in replacement.text
    assert replacement.verdict == "supported" and not replacement.unsupported_numbers
    # a passage the source does not hold is never shown in its place
    invented = Premise(**{**premise.to_dict(), "passage": "Inondation zone A : 7 500 €"})
    assert premise_passage(repeated, [invented], registry) is None


def test_the_same_clause_twice_is_shown_once(kb):
    # Allianz's notice lists the documents to send twice, a comma and an agreement apart: the
    # copy took the answer's second slot from the sentence holding the 15-day limit
    answerer = ExtractiveAnswerer(kb)
    first = _unit(
        "- si vous êtes travailleur non salarié, une copie de l'extrait du Registre du commerce, "
        "antérieure à la date d'arrêt de travail et datant de moins de 3 mois ;"
    )
    copy = _unit(
        "- si vous êtes travailleur non salarié, une copie de l'extrait du Registre du commerce , "
        "antérieur à la date d'arrêt de travail et datant de moins de 3 mois ;"
    )
    other = _unit("Vous devez déclarer votre arrêt de travail au plus tard dans les 15 jours ouvrés.")
    assert answerer._repeats(copy, first)
    assert not answerer._repeats(other, first)


def test_a_list_of_every_level_is_no_answer_for_one_of_them(kb):
    # APRIL's header line "Niveau 1 … Niveau 6" named the asked levels and won by it
    answerer = ExtractiveAnswerer(kb)
    question = "Puis-je prendre le niveau 6 en hospitalisation et le niveau 2 en optique ?"
    levels = _unit("Niveau 1 Niveau 2 Niveau 3 Niveau 4 Niveau 5 Niveau 6")
    rule = _unit("Les niveaux des deux modules sont modulables jusqu'à 2 niveaux d'écart.")
    one = _unit("Le niveau 2 en optique n'est accessible qu'avec les niveaux 3 à 6 en hospitalisation.")
    assert answerer.score(question, rule) > answerer.score(question, levels)
    assert answerer.score(question, one) > answerer.score(question, levels)


def _two_passages(kb, question: str):
    """The first two parents retrieved for `question`, their registry, and a unit of each by
    parent id (to be rewritten with `dataclasses.replace`)."""
    from rag_assets.answering.citations import build_registry
    from rag_assets.answering.extractive import units_of

    first, second = [h.parent_id for h in kb.hits(kb.retrieve(question), 2)]
    registry = build_registry(kb, [first, second])
    units, _ = units_of(registry, kb)
    return first, second, registry, {registry[u.section_id].parent_id: u for u in units}


def test_the_last_sentence_slot_goes_to_a_passage_not_quoted_yet(kb):
    # TNS IPID: the two best sentences and a third of the same passage (the capital amounts)
    # left out the next passage's "suicide during the first year", about as good
    question = "Franchise inondation en zone A ?"
    first, second, registry, of = _two_passages(kb, question)
    tails = [
        "le montant figure au tableau des franchises.",
        "elle s'applique à chaque événement déclaré.",
        "l'assureur la déduit de l'indemnité versée après expertise.",
        "elle reste due même après une catastrophe naturelle reconnue.",
    ]
    written = [
        dataclasses.replace(
            of[parent], text=f"Franchise inondation zone A : {tail}", display=f"Franchise inondation zone A : {tail}"
        )
        for parent, tail in zip([first, first, first, second], tails)
    ]
    answerer = ExtractiveAnswerer(kb, max_units=3)
    assert len({answerer.score(question, u) for u in written}) == 1  # alike but for their passage's rank
    sub = SubQuestion(text=question, parent_ids=[first, second], best_score=0.6)
    # one paragraph a passage: the best one's two sentences, then the next passage's
    best, other = answerer.answer_sub_question(0, sub, written, registry, targeted=True)
    assert tails[0] in best.text and tails[1] in best.text and tails[2] not in best.text
    assert tails[3] in other.text and other.source_ids != best.source_ids


def test_an_amount_asked_and_absent_from_the_kept_parents_brings_the_next_parent_holding_one(kb):
    from rag_assets.answering.figures import MONEY, figures

    question = "Quel est le montant de la franchise pour une inondation en zone A ?"
    retriever = Retriever(kb)
    hits = kb.hits(kb.retrieve(question), 10)
    money = [h for h in hits if any(f.kind == MONEY for f in figures(kb.parent(h.parent_id)["text"]))]
    without = [h for h in hits if h not in money]
    assert money and without
    scores = {h.parent_id: 1.0 for h in hits}
    extra = retriever._holding_wanted_figure(question, hits, without[:1], scores, 0.5)
    assert extra == money[:1]
    # kept parents holding an amount, or a question asking for none: nothing added
    assert retriever._holding_wanted_figure(question, hits, money[:1], scores, 0.5) == []
    assert retriever._holding_wanted_figure("Qui est assuré ?", hits, without[:1], scores, 0.5) == []
    # under the floor: not added
    assert retriever._holding_wanted_figure(question, hits, without[:1], {h.parent_id: 0.1 for h in hits}, 0.5) == []


def test_each_engine_s_best_parents_join_the_hybrid_top(kb):
    # the dense engine's second parent, 4th or 6th of the fused order when a long question's
    # circumstances swamp BM25, held the answer
    question = "Quelle est la franchise pour une inondation en zone A ?"
    retriever = Retriever(kb)
    hits = kb.hits(kb.retrieve(question), 10)
    scores = {h.parent_id: 1.0 for h in hits}
    seated = [h for h in hits if any(h.ranks.get(e) is not None and h.ranks[e] <= 2 for e in ("bm25", "dense"))]
    assert seated
    last = seated[-1]
    kept = [h for h in hits if h is not last][:1]
    added = retriever._engine_seats(hits, kept, scores, 0.5)
    assert last in added and all(h in seated and h not in kept for h in added)
    assert added == [h for h in hits if h in added]  # in the hybrid order
    # under the coverage floor: no seat
    assert retriever._engine_seats(hits, kept, {**scores, last.parent_id: 0.1}, 0.5) == [
        h for h in added if h is not last
    ]
    # the fused top stays first: seats come after it
    parent_ids = retriever.retrieve(question, 1).sub.parent_ids
    assert parent_ids[0] == hits[0].parent_id


def test_a_table_row_answers_for_the_column_the_question_names(kb):
    answerer = ExtractiveAnswerer(kb)
    table = (
        "| Garanties | Formule Arbitrage | Formule Équilibre |\n| --- | --- | --- |\n"
        "| garantie dommages électriques | non | oui |"
    )
    [(raw, shown, header, labels)] = _table_units(table, None)
    row = Unit("T1", "S1", "d1", raw, shown, "Contrat Habitation Multirisque\n" + header, "fr", labels)
    unlabelled = Unit("T1", "S1", "d1", raw, shown, "Contrat Habitation Multirisque\n" + header, "fr")
    question = "En formule Arbitrage, les dommages électriques sont-ils couverts ?"
    assert answerer.score(question, row) > answerer.score(question, unlabelled)


def test_a_row_of_amounts_gives_way_to_the_rule_when_no_amount_is_asked(kb):
    answerer = ExtractiveAnswerer(kb)
    row = _unit("| Chambre particulière en hospitalisation | 30 € | 45 € |")
    yes_no = "Puis-je prendre une chambre particulière en hospitalisation ?"
    amount = "Combien est remboursée la chambre particulière en hospitalisation ?"
    plain = _unit("| Chambre particulière en hospitalisation | oui | non |")
    assert answerer.score(yes_no, row) < answerer.score(yes_no, plain)
    assert answerer.score(amount, row) >= answerer.score(amount, plain)


def test_each_paragraph_of_an_offline_answer_is_one_passage_with_its_source(kb):
    from rag_assets.answering import AskOptions, ask

    answer = ask(
        kb,
        "Quelles sont les franchises et le délai de déclaration d'un sinistre ?",
        offline=True,
        options=AskOptions(log=False, memory=False),
    )
    assert answer.paragraphs
    for paragraph in answer.paragraphs:
        parents = {answer.source(i).parent_id for i in paragraph.source_ids}
        assert len(parents) == 1, paragraph.text


def test_a_sentence_announcing_a_list_is_shown_with_its_items():
    from types import SimpleNamespace

    def unit(text, section="S1", context="Contrat\nIndemnisation"):
        return Unit(section, section, "d1", text, text, context, "fr")

    lead = unit("En cas de vol, l'indemnité est fixée comme suit :")
    items = [unit("- 80 % de la valeur la première année ;"), unit("- 60 % ensuite."), unit("Les frais de garde.")]
    elsewhere = unit("- un autre passage ;", section="S2")
    other_heading = unit("- sous un autre titre ;", context="Contrat\nExclusions")
    units = [lead, *items]
    registry = {"S1": SimpleNamespace(parent_id="p1"), "S2": SimpleNamespace(parent_id="p2")}
    position = {id(u): n for n, u in enumerate(units)}
    # the items up to the one that closes the list, not the next sentence
    assert ExtractiveAnswerer._with_announced([lead], units, position, registry) == [lead, *items[:2]]
    for stop in (elsewhere, other_heading):  # another passage, or a heading between them
        cut = [lead, stop, *items]
        where = {id(u): n for n, u in enumerate(cut)}
        assert ExtractiveAnswerer._with_announced([lead], cut, where, registry) == [lead]


def test_a_sentence_is_shown_with_the_figure_that_closes_its_clause():
    def unit(text, block):
        return Unit("S1", "S1", "d1", text, text, "Contrat\nVéhicule loué", "fr", block=("p1", block))

    kept = unit("Nous remboursons la franchise retenue par le loueur, dans la limite de 500 €.", 0)
    condition = unit("Le véhicule doit être loué à un professionnel pour 72 h au plus.", 0)
    wordy = unit("Le loueur vous remet une facture.", 0)
    next_paragraph = unit("Les frais de carburant restent à votre charge jusqu'à 50 €.", 1)
    row = Unit("T1", "S1", "d1", "| Loueur | 500 € |", "Loueur : 500 €.", "Contrat", "fr", block=("p1", 2))
    after_row = unit("Au-delà de 72 h, rien n'est dû.", 2)
    for units, shown in (
        ([kept, condition], [kept, condition]),  # the next sentence holds a figure: it comes along
        ([kept, wordy, condition], [kept]),  # a sentence without one ends the clause
        ([kept, next_paragraph], [kept]),  # another paragraph is another clause
        ([row, after_row], [row]),  # a table row is its own unit
    ):
        position = {id(u): n for n, u in enumerate(units)}
        assert ExtractiveAnswerer._with_figure_after([units[0]], units, position) == shown


def test_a_table_row_is_shown_with_the_note_its_call_refers_to():
    def unit(text, block, parent="p1"):
        return Unit("S1", "S1", "d1", text, text, "Tableau des garanties", "fr", block=(parent, block))

    row = unit("| Chambre particulière (3) | 60 €/jour |", 0)
    other_row = unit("| Forfait journalier | 100 % FR |", 0)
    first_note = unit("(1) Le forfait s'entend par jour.", 1)
    note = unit("(3) Limite par an : 180 jours, 30 jours en psychiatrie.", 2)
    note_more = unit("S'entend par année civile.", 2)
    next_table = unit("| Dentaire (3) | 100 % BR |", 3)
    next_note = unit("(3) Par année d'adhésion.", 4)
    units = [row, other_row, first_note, note, note_more, next_table, next_note]
    position = {id(u): n for n, u in enumerate(units)}
    # the call's note after its own table, all of it, and no other
    assert ExtractiveAnswerer._with_footnotes([row], units, position) == [row, note, note_more]
    # the next table's notes are its own: a call without its note in between finds none
    assert ExtractiveAnswerer._with_footnotes([other_row], units, position) == [other_row]
    assert ExtractiveAnswerer._with_footnotes([next_table], units, position) == [next_table, next_note]
    elsewhere = [row, unit("(3) Une note d'un autre passage.", 0, parent="p2")]
    where = {id(u): n for n, u in enumerate(elsewhere)}
    assert ExtractiveAnswerer._with_footnotes([row], elsewhere, where) == [row]


def test_a_follower_is_shown_once_next_to_its_unit_or_after_all_kept():
    def unit(text):
        return Unit("S1", "S1", "d1", text, text, "Contrat", "fr")

    first, second, shared, own = unit("A :"), unit("B :"), unit("- commun ;"), unit("- propre.")
    followers = {id(first): [shared, second], id(second): [shared, own]}
    kept = [first, second]
    # a kept unit is never added again, a follower of two units comes once, with the first
    assert ExtractiveAnswerer._with_followers(kept, lambda u: followers[id(u)], next_to_each=True) == [
        first,
        shared,
        second,
        own,
    ]
    assert ExtractiveAnswerer._with_followers(kept, lambda u: followers[id(u)], next_to_each=False) == [
        first,
        second,
        shared,
        own,
    ]


@pytest.mark.parametrize("rank", [1, 2])
def test_the_passages_ranked_first_speak_when_their_sentence_clears_the_bar(kb, monkeypatch, rank):
    # another passage's sentences share more of the question's words; a passage among the
    # first the retrieval ranks still shows its own sentence above the bar beside them, and
    # one ranked past them does not
    question = "Franchise inondation en zone A ?"
    first, second, registry, of = _two_passages(kb, question)
    texts = {
        second: [
            "Franchise inondation zone A : le montant figure au tableau des franchises.",
            "Franchise inondation zone A : elle s'applique à chaque événement déclaré.",
            "Franchise inondation zone A : l'assureur la déduit de l'indemnité versée.",
        ],
        first: ["La franchise inondation est due par événement."],
    }
    written = [
        dataclasses.replace(of[parent], text=text, display=text) for parent, lines in texts.items() for text in lines
    ]
    answerer = ExtractiveAnswerer(kb)
    scores = {u.text: answerer.score(question, u) for u in written}
    assert scores[texts[first][0]] < 0.7 * min(scores[t] for t in texts[second])  # out of the usual choice
    ranked = [first, second] if rank == 1 else [second, first]
    sub = SubQuestion(text=question, parent_ids=ranked, best_score=0.3)
    for speaking, shown in ((SPEAKING_PASSAGES, True), (rank - 1, False)):
        monkeypatch.setattr(extractive, "SPEAKING_PASSAGES", speaking)
        paragraphs = answerer.answer_sub_question(0, sub, written, registry, targeted=True)
        assert any(texts[first][0] in p.text for p in paragraphs) is shown
        assert sum(t in " ".join(p.text for p in paragraphs) for t in texts[second]) == 3


def test_a_passage_ranked_first_speaks_with_a_sentence_not_shown_yet(kb):
    # every passage under one heading repeats it: the second passage's copy of the heading is
    # its best sentence, and was shown again instead of that passage's own clause
    question = "Franchise inondation en zone A ?"
    first, second, registry, of = _two_passages(kb, question)
    heading = "Franchise inondation zone A : dispositions applicables en zone A."
    own = "La franchise est due par événement."
    texts = {first: [heading], second: [heading, own]}
    written = [
        dataclasses.replace(of[parent], text=text, display=text) for parent, lines in texts.items() for text in lines
    ]
    answerer = ExtractiveAnswerer(kb)
    assert answerer.score(question, written[-1]) < 0.7 * answerer.score(question, written[0])  # out of the usual choice
    sub = SubQuestion(text=question, parent_ids=[first, second], best_score=0.3)
    shown = " ".join(p.text for p in answerer.answer_sub_question(0, sub, written, registry, targeted=True))
    assert shown.count(heading) == 1 and own in shown


def test_a_paragraph_set_in_a_table_s_header_row_labels_no_column():
    paragraph = "Pourquoi ce document ? Il répertorie les frais applicables aux contrats détenus."
    label = "Montant de prise en charge des frais et honoraires d'avocat par litige (en euros et TTC)"
    table = f"| {paragraph} | {label} |\n|---|---|\n| Paiement en 12 fois | 2,39 % |"
    ((_, shown, _, labels),) = _table_units(table, None)
    assert shown == f"Paiement en 12 fois ; {label} : 2,39 %."
    assert "répertorie" not in labels
    first_item = "les frais de déplacement des objets mobiliers pour effectuer les réparations ;"
    items = f"| ● | {first_item} |\n|---|---|\n| ● | les frais de démolition |"
    assert _table_units(items, None)[0][1] == "● ; les frais de démolition."
    asked = "| Qui peut résilier le contrat ? | Quand ? |\n|---|---|\n| L'adhérent | À l'échéance |"
    assert _table_units(asked, None)[0][1] == "Qui peut résilier le contrat ? : L'adhérent ; Quand ? : À l'échéance."


def test_a_table_s_first_row_shaped_as_its_rows_is_a_row_not_labels():
    # the layout left the first row unmarked: read as labels, its amount was written before
    # every row's own ("(hors taxes) 311 € : 843 €")
    table = (
        "| Assistance à garde à vue | (hors taxes) 311 € |\n|---|---|\n"
        "| Tribunal de police | 482 € 2 |\n| Chambre des appels correctionnels | 843 € |"
    )
    units = _table_units(table, None)
    assert [shown for _, shown, _, _ in units] == [
        "Assistance à garde à vue ; (hors taxes) 311 €.",
        "Tribunal de police ; 482 € 2.",
        "Chambre des appels correctionnels ; 843 €.",
    ]
    assert all(header == "" for _, _, header, _ in units)
    # amounts as column labels over rows of another kind stay labels
    options = "| Franchise | 150 € | 300 € |\n|---|---|---|\n| Bris de glace | oui | non |\n| Vol | oui | oui |"
    assert _table_units(options, None)[0][1] == "Franchise : Bris de glace ; 150 € : oui ; 300 € : non."
