"""The kill switch: a paragraph holding a number, date or amount that none of its
cited sources contains (or in another unit), or judged unsupported by the verification,
is never presented as the answer. When another retrieved source holds all its figures, it
is cited to that source too (`recite`); otherwise it is withheld: replaced by the supported
extractive passage of the same sources that best answers its sub-question, or, when there
is none, by "not found in the documents". A model's paragraph that asks, or only restates
the question, is no answer and is withheld the same way (`not_an_answer`). The withholding
is shown (`Answer.withheld`, rendered after the answer with the reason, and an alert); the
withheld text stays in the answer's JSON and log for audit, never in its text.
"""

from __future__ import annotations

from rag_assets.answering.model import NO_SOURCE, SUPPORTED, UNSUPPORTED, Paragraph

NOT_FOUND = "Non trouvé dans les documents"


def reasons(paragraph: Paragraph) -> list[str]:
    """Why a verified paragraph must not be shown (empty: it may)."""
    why = []
    if paragraph.unsupported_numbers:
        why.append("valeur(s) absente(s) des sources citées : " + ", ".join(paragraph.unsupported_numbers))
    if paragraph.verdict == UNSUPPORTED:
        why.append("jugé non justifié par ses sources")
    return why


def not_an_answer(paragraph: Paragraph, question: str, language: str = "fr") -> list[str]:
    """A model's paragraph that asks instead of answering ("Quelle est la valeur de votre
    véhicule ?"), or only restates the question (no content word nor figure the question
    lacks), is no answer: a reason to withhold it like an unsupported one."""
    from rag_assets.answering.verification import sentences
    from rag_assets.retrieve.query import content_terms

    said = [s for s in sentences(paragraph.text) if s.strip()]
    if said and all(s.rstrip().endswith("?") for s in said):
        return ["pose une question au lieu d'y répondre"]
    asked = set(content_terms(question, language))
    own = set(content_terms(paragraph.text, language))  # a figure the question lacks is an answer
    if own and own <= asked:
        return ["reformule la question sans y répondre"]
    return []


def recite(paragraph: Paragraph, registry) -> bool:
    """A paragraph whose figures its cited sources do not hold, but one other retrieved source
    holds them all, is cited to that source too rather than lost (a model citing the wrong
    source for the right figure); verified again. True when it may now be shown."""
    from rag_assets.answering.verification import check_numbers, verify

    if not paragraph.unsupported_numbers or paragraph.verdict == UNSUPPORTED:
        return False
    holding = [
        source_id
        for source_id in registry.entries
        if source_id not in paragraph.source_ids
        and not any(
            check_numbers(
                paragraph.text, [registry.evidence(i) for i in [*paragraph.source_ids, source_id] if i in registry]
            )
        )
    ]
    if not holding:
        return False
    # the most precise source that holds them: a table rather than the section around it
    source_id = min(holding, key=lambda i: len(registry.evidence(i)))
    cited = list(paragraph.source_ids)
    paragraph.source_ids = [*cited, source_id]
    verify([paragraph], registry, llm=None)
    if not reasons(paragraph):
        paragraph.notes.append(f"cité aussi à {source_id}, la source qui donne ses valeurs")
        return True
    paragraph.source_ids = cited
    verify([paragraph], registry, llm=None)
    return False


def _replacement(paragraph: Paragraph, subs, registry, extractive) -> Paragraph | None:
    """The extractive answer of the paragraph's sub-question from the paragraph's own
    cited sources (their sections), verified like any paragraph."""
    from rag_assets.answering.verification import verify

    if extractive is None or paragraph.sub_question is None or not (0 <= paragraph.sub_question < len(subs)):
        return None
    sub = subs[paragraph.sub_question]
    parents = [registry.section_of(i).parent_id for i in paragraph.source_ids if i in registry]
    if not parents:
        return None
    from dataclasses import replace

    from rag_assets.answering.extractive import units_of

    units, _ = units_of(registry, extractive.kb)
    found = extractive.answer_sub_question(
        paragraph.sub_question, replace(sub, parent_ids=list(dict.fromkeys(parents))), units, registry, targeted=True
    )
    found = [p for p in found if p.role == "answer"][:1]
    if not found:
        return None
    candidate = found[0]
    candidate.lead = None
    verify([candidate], registry, llm=None)
    if reasons(candidate) or candidate.verdict != SUPPORTED:
        return None
    candidate.notes.append("extrait des sources citées, à la place d'un paragraphe retenu")
    return candidate


def withhold(answer, registry, extractive=None, extra=None, fallback=None) -> None:
    """Apply the kill switch to `answer.paragraphs` (verified): withheld paragraphs move to
    `answer.withheld` with their reason, their replacement takes their place. `extra`:
    paragraph -> further reasons (a false premise repeated as the answer); `fallback`:
    paragraph -> the replacement to use when the extractive one is none (the passage
    giving the value the false premise contradicts)."""
    kept: list[Paragraph] = []
    for number, paragraph in enumerate(answer.paragraphs, start=1):
        more = list(extra(paragraph)) if extra else []
        why = reasons(paragraph) + more
        if why and not more and recite(paragraph, registry):
            kept.append(paragraph)
            continue
        if not why:
            kept.append(paragraph)
            continue
        replacement = _replacement(paragraph, answer.sub_questions, registry, extractive)
        if replacement is None and fallback is not None:
            replacement = fallback(paragraph)
        if replacement is not None and any(replacement.text == k.text for k in kept):
            replacement, duplicate = None, True
        else:
            duplicate = False
        record = {
            "paragraph": number,
            "text": paragraph.text,
            "source_ids": list(paragraph.source_ids),
            "sub_question": paragraph.sub_question,
            "verdict": paragraph.verdict,
            "unsupported_numbers": list(paragraph.unsupported_numbers),
            "reason": " ; ".join(why),
            "replacement": replacement.text if replacement is not None else (None if duplicate else NOT_FOUND),
        }
        answer.withheld.append(record)
        if replacement is not None:
            kept.append(replacement)
            answer.alerts.append(
                f"Paragraphe {number} retenu ({record['reason']}) : remplacé par l'extrait des "
                "sources citées qui y répond."
            )
        else:
            answer.alerts.append(
                f"Paragraphe {number} retenu ({record['reason']})"
                + (
                    " : déjà couvert par un autre paragraphe."
                    if duplicate
                    else f" : {NOT_FOUND.lower()} pour cette partie."
                )
            )
            sub = paragraph.sub_question
            if not duplicate and sub is not None and 0 <= sub < len(answer.sub_questions):
                text = answer.sub_questions[sub].text
                if (
                    not any(k.sub_question == sub for k in kept)
                    and text not in answer.missing_information
                    and answer.sub_questions[sub].status != NO_SOURCE
                ):
                    answer.missing_information.append(text)
    answer.paragraphs = kept
