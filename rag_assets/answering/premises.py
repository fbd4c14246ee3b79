"""False premises: a figure, date or named variant (formula, option, level,
priority…) that the question takes for granted and the retrieved sources contradict.

* An **asserted figure** is an amount, rate, duration or date the question states as a
  fact to confirm: in the sentence that asks for confirmation ("… jusqu'à 500 €, c'est
  ça ?", "est-elle bien de 3 000 € ?", "on m'a dit que …", "Pourquoi … calibré à
  99,9 % ?", a yes/no question "Le SCR est-il calibré à 99,9 % ?"), or in the sentence
  before a bare "C'est exact ?". A figure that only sets
  the scene ("à 300 km de chez moi", "il y a 20 jours", "un patrimoine de plus de
  82 000 €") is not a premise and is never flagged.
* It is **absent** when no retrieved source holds it, and **contradicted** when the
  passage that answers the question (chosen with the asserted figure left out) gives the
  same kind of figure with another value — for a table row, the value in the column the
  question names ("niveau 3", "PJ2"); for a sentence listing several values, the one
  whose own words match the question ("380 € et 1520 € en cas de sécheresse").
* A **named variant** ("formule Initiale", "priorité P4") is absent when the sources
  name other variants of the same kind (P1, P2, P3; Essentiel, Différence…) but never it.
* A **thing asked about that the source says there is none of**, under any of its thesaurus
  names ("Quel est le délai de carence ?" — "Cette garantie n'a pas de délai d'attente").

The answer says so first, citing the source that gives the right value (`Premise`),
in every mode: the extractive answerer, the model's prompt (`prompt_note`) and the check
after the model answered (`ask`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cache

from rag_assets.answering.figures import (
    DATE,
    DURATION,
    MONEY,
    PERCENT,
    Figure,
    figure_value,
    figures,
    same_figure,
)
from rag_assets.text.folding import fold

PREMISE_KINDS = (MONEY, PERCENT, DURATION, DATE)
PASSAGES = 4  # sentences read for the value the sources give (evaluations/tuning.md)
# A yes/no question asserts what it asks to confirm ("Le SCR est-il calibré à 99,9 % ?",
# "Le préavis est-il de six mois ?"): an inverted subject, and no interrogative word
# ("Combien prend-elle en charge pour 10 jours ?" asks, it does not assert).
_INVERTED = re.compile(r"\b\w+-(?:t-)?(?:il|elle|ils|elles|on)\b", re.IGNORECASE)
# any inverted subject: "suis-je remboursé ?", "Acheel va-t-il m'indemniser ?"
_INVERTED_ANY = re.compile(r"\b\w+-(?:t-)?(?:je|tu|il|elle|ils|elles|on|nous|vous)\b", re.IGNORECASE)
_EST_CE_QUE = re.compile(r"\best[- ]ce qu(?:e\b|['’])", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.!?])\s+|\s*:\s+(?=[A-ZÀ-Þa-z])")
_CODE = re.compile(r"\b([A-Z]{1,3})(\d{1,2})\b")
_LIST_SEPARATOR = re.compile(r"\s*(?:,|\bet\b|\bou\b|/|;)\s*")


@dataclass(frozen=True)
class _Lexicon:
    """The phrases of `rag_assets/text/premise_phrases.toml` (each group's comment there says
    what it recognises), compiled into the patterns the checks search."""

    confirm: re.Pattern[str]
    asking: re.Pattern[str]
    parameter: re.Pattern[str]  # anchored at the end of the clause before a figure
    variant: re.Pattern[str]
    cover_asked: re.Pattern[str]
    scope_words: tuple[str, ...]
    not_included: re.Pattern[str]
    excludes: re.Pattern[str]
    restricts: re.Pattern[str]
    condition: re.Pattern[str]
    elapsed: re.Pattern[str]  # anchored at the end of the words before a duration
    waiting: re.Pattern[str]
    no_cell: re.Pattern[str]  # a whole cell
    none_of: str  # followed by a thing's names (`_none_of`)


@cache
def _lexicon() -> _Lexicon:
    from rag_assets.text.premise_phrases import premise_phrases

    phrases = premise_phrases()
    alt, regex = phrases.pattern, phrases.regex
    p = phrases.parameter
    word = r"[\w’'-]+"
    parameter = (
        # the noun, at most four words that are not a new subject, a copula and a link
        rf"(?:{alt(p.nouns)}(?:\s+(?!{alt(p.new_subject)}){word}){{0,4}}?\s+{alt(p.copulas)}\s+{alt(p.value_links)}"
        rf"|\s+{alt(p.amounts_to)}"
        rf"|{alt(p.sets)}\s+{alt(p.articles)}\s+{word}(?:\s+{word})?\s+{alt(p.links)}"
        rf"|{alt(p.covers)}(?:\s+(?:\w+\s+){{0,3}}?{alt(p.up_to)})?"
        # a definite noun phrase names the policy's own value: "le plafond de 5 000 €", "la franchise
        # de 300 €" (an indefinite "une franchise de 800 €" is the reader's case)
        rf"|(?:^|\s){alt(p.definite)}\s*{alt(p.nouns)}(?:\s+(?!{alt(p.new_subject)}){word}){{0,3}}?\s+{alt(p.links)}"
        rf"|{alt(p.covered_copulas)}\s+{alt(p.covered)}\s+{alt(p.covered_links)})"
        rf"\s*(?:{alt(p.hedges)}\s+)?$"
    )
    return _Lexicon(
        confirm=regex(phrases.confirm),
        asking=regex(phrases.asking),
        parameter=re.compile(parameter, re.IGNORECASE),
        # the noun in any case, the name capitalised, a number or a code
        variant=re.compile(
            r"\b((?i:" + "|".join(map(re.escape, phrases.variant_nouns)) + r"))s?\s+(?:«\s*)?"
            r"([A-ZÀ-Þ][\w’'-]*|\d+|[A-Z]{1,3}\d+)\b"
        ),
        cover_asked=regex(phrases.cover_asked),
        scope_words=tuple(phrases.scope_words),
        not_included=regex(phrases.not_included),
        excludes=regex(phrases.excludes),
        restricts=regex(phrases.restricts),
        condition=regex(phrases.condition),
        elapsed=re.compile(rf"{alt(phrases.elapsed)}\s+(?:{alt(phrases.elapsed_hedges)}\s+)?$", re.IGNORECASE),
        waiting=regex(phrases.waiting),
        no_cell=re.compile(rf"^{alt(phrases.no_cell)}$", re.IGNORECASE),
        none_of=alt(phrases.none_of) + r"\s*",
    )


@dataclass
class Premise:
    kind: str  # figure-absent | figure-contradicted | name-absent | guarantee-not-included | none-such | excluded
    # | condition-not-met | restricted | waiting-period
    claim: str  # what the question states: "250 €", "formule Initiale"
    found: list[str] = field(default_factory=list)  # what the sources give instead
    source_id: str | None = None  # the source that gives it
    source_name: str | None = None
    sub_question: int | None = None
    message: str = ""
    passage: str | None = None  # figure-contradicted: the source's passage giving the right value

    def to_dict(self) -> dict:
        return asdict(self)


def asserted_figures(question: str) -> list[Figure]:
    """The figures the question asserts (see the module's docstring): amounts, rates,
    durations and dates of the confirmation sentence, or of the sentence before it when
    the confirmation stands alone ("… 3 mois de délai d'attente. C'est exact ?")."""
    sentences = [s for s in _SENTENCES.split(question or "") if s and s.strip()]
    chosen: list[Figure] = []
    for index, sentence in enumerate(sentences):
        asked = _EST_CE_QUE.sub(" ", sentence)  # "Est-ce que … est de 3 000 € ?" is a yes/no question
        yes_no = (
            sentence.rstrip().endswith("?")
            and (_INVERTED.search(sentence) or asked != sentence)
            and not _lexicon().asking.search(asked)
        )
        if not (_lexicon().confirm.search(sentence) or yes_no):
            continue
        own = [f for f in figures(sentence) if f.kind in PREMISE_KINDS]
        if (
            not own and index > 0 and _lexicon().confirm.search(sentence)
        ):  # "C'est exact ?", not "Est-ce que ça marche ?"
            own = [f for f in figures(sentences[index - 1]) if f.kind in PREMISE_KINDS]
        chosen += [f for f in own if not any(same_figure(f, c) for c in chosen)]
    return chosen


def stated_figures(question: str) -> list[Figure]:
    """Figures the question gives as a value of the policy (the `parameter` phrases), with or without
    asking to confirm them: checked against the passage that answers (a different value
    there is said first), never flagged for being absent from the sources — a reader's own
    choice ("un capital de 100 000 €") need not be written in them."""
    text = question or ""
    found = []
    for figure in figures(text):
        if figure.kind not in PREMISE_KINDS:
            continue
        before = text[max(0, figure.start - 80) : figure.start]
        clause = re.split(r"[.!?;:,()]", before)[-1]
        if _lexicon().parameter.search(clause):
            found.append(figure)
    return found


def without_figures(question: str, asserted: list[Figure]) -> str:
    """The question with its asserted figures taken out (to choose the passage that
    answers it without being drawn to the one that repeats the false figure)."""
    text = question
    for figure in sorted(asserted, key=lambda f: -len(f.raw)):
        text = text.replace(figure.raw, " ")
    return " ".join(text.split())


def _same_kind(a: Figure, b: Figure) -> bool:
    if a.kind != b.kind:
        return False
    if a.kind == DURATION:
        return bool({d for d, _ in a.keys} & {d for d, _ in b.keys})
    return True


# --------------------------------------------------------------------- entity values


def _cells(line: str) -> list[str]:
    line = line.strip().strip("|")
    return [c.strip() for c in re.split(r"(?<!\\)\|", line)]


def _column_values(display: str, question: str) -> list[str] | None:
    """For a table row shown as "Header : cell ; Header : cell.", the cells whose header
    the question names ("niveau 3", "PJ2", "Essentiel"); None when no header is named."""
    if " : " not in display or " ; " not in display:
        return None
    folded_question = fold(question)
    question_words = set(re.findall(r"\w+", folded_question))
    chosen = []
    for pair in display.rstrip(".").split(" ; "):
        if " : " not in pair:
            continue
        header, cell = pair.split(" : ", 1)
        words = re.findall(r"\w+", fold(header))
        if not words:
            continue
        named = all(w in question_words for w in words) if len(words) <= 3 else False
        if named and figures(cell):
            chosen.append(cell)
    return chosen or None


_SENTENCE_END = re.compile(r"[.!?](?:\s|$)")


def _segments(text: str) -> list[tuple[Figure, str]]:
    """Each figure with its own words: the text after it up to the next figure or the end
    of its sentence ("380 € et 1 520 € en cas de sécheresse"); for a figure that ends its
    sentence, the words before it, from the previous figure or the sentence's start ("Le
    délai d'attente de cette garantie est de 6 mois.")."""
    found = figures(text)
    out = []
    for index, figure in enumerate(found):
        end = found[index + 1].start if index + 1 < len(found) else len(text)
        stop = _SENTENCE_END.search(text, figure.end, end)
        after = text[figure.end : stop.start() if stop else end]
        if not stop or _terms(after):
            out.append((figure, after))
            continue
        start = found[index - 1].end if index else 0
        starts = [m.end() for m in _SENTENCE_END.finditer(text, start, figure.start)]
        out.append((figure, text[(starts[-1] if starts else start) : figure.start]))
    return out


def _terms(text: str) -> set[str]:
    from rag_assets.retrieve.query import content_terms

    return {t for t in content_terms(text) if not t.isdigit()}


def entity_values(display: str, raw: str, question: str, claim: Figure) -> list[Figure]:
    """The figures of the answering passage that speak of what the question asks, of the
    claim's kind."""
    columns = _column_values(display, question)
    if columns is not None:
        return [f for cell in columns for f in figures(cell) if _same_kind(claim, f)]
    candidates = [(f, words) for f, words in _segments(raw) if _same_kind(claim, f)]
    if len(candidates) <= 1:
        return [f for f, _ in candidates]
    asked = _terms(question)
    own = {id(f): _terms(words) & asked for f, words in candidates}
    shared = set.intersection(*own.values()) if own else set()
    # the figures whose own words name most of what the question asks beyond what all share
    most = max(len(own[id(f)] - shared) for f, _ in candidates)
    specific = [f for f, _ in candidates if most and len(own[id(f)] - shared) == most]
    return specific or [f for f, _ in candidates]


# --------------------------------------------------------------------------- checks


def _kind_word(figure: Figure) -> str:
    return {MONEY: "ce montant", PERCENT: "ce taux", DURATION: "cette durée", DATE: "cette date"}.get(
        figure.kind, "cette valeur"
    )


def figure_premises(
    question: str,
    answering: list[tuple[str, str, str, str]],
    context: list[str],
    sub_question: int | None = None,
    claims: list[Figure] | None = None,
    stated: Sequence[Figure] = (),
) -> list[Premise]:
    """`answering`: (source id, source name, passage as shown, passage verbatim) of what
    answers the question; `context`: the text of every retrieved source; `claims`: the
    asserted figures (default: those of `question`); `stated`: figures given as a value of the
    policy, checked for a contradiction only."""
    premises = []
    for claim in (asserted_figures(question) if claims is None else claims) + list(stated):
        contradiction_only = any(claim is f for f in stated)
        in_context = any(same_figure(claim, f) for text in context for f in figures(text))
        values: list[Figure] = []
        source: tuple[str | None, str | None] = (None, None)
        passage = None
        for source_id, name, display, raw in answering:
            found = entity_values(display, raw, question, claim)
            if found:
                values, source, passage = found, (source_id, name), display
                break
        right = [v for v in values if not same_figure(claim, v)]
        claimed_there = any(same_figure(claim, v) for v in values)
        given = list(dict.fromkeys(v.describe() for v in right))  # "99,5 %" written twice is one value
        said = ", ".join(given)
        if not in_context and not contradiction_only:
            message = (
                f"La question indique {claim.describe()} : aucune des sources consultées ne mentionne "
                f"{_kind_word(claim)}" + (f" ; elles indiquent {said}" if said else "") + "."
            )
            premises.append(
                Premise("figure-absent", claim.describe(), given, source[0], source[1], sub_question, message)
            )
        elif right and not claimed_there:
            message = (
                f"La question indique {claim.describe()}, mais la source indique {said}"
                + (f" ({source[1]})" if source[1] else "")
                + "."
            )
            premises.append(
                Premise(
                    "figure-contradicted", claim.describe(), given, source[0], source[1], sub_question, message, passage
                )
            )
    return premises


def _variants(text: str) -> dict[str, set[str]]:
    """noun -> variant names written after it ("formule Essentiel, Différence ou
    Plénitude" names the three), and codes by prefix ("P" -> {"P1", "P2"})."""
    out: dict[str, set[str]] = {}
    for match in _lexicon().variant.finditer(text or ""):
        noun = fold(match.group(1)).rstrip("s")
        first = match.group(2).strip()
        names = {first}
        rest = text[match.end() : match.end() + 120]
        for piece in _LIST_SEPARATOR.split(rest)[1:6]:
            piece = piece.strip()
            word = re.match(r"(?:«\s*)?([A-ZÀ-Þ][\w’'-]+)", piece)
            if not word:
                break
            names.add(word.group(1))
        out.setdefault(noun, set()).update(names)
    for prefix, number in _CODE.findall(text or ""):
        out.setdefault(f"code:{prefix}", set()).add(f"{prefix}{number}")
    return out


def name_premises(
    question: str,
    context: list[str],
    sub_question: int | None = None,
    source: tuple[str | None, str | None] = (None, None),
) -> list[Premise]:
    """Named variants of the question that the sources never name, while naming others of
    the same kind."""
    asked = _variants(question)
    held: dict[str, set[str]] = {}
    for text in context:
        for noun, names in _variants(text).items():
            held.setdefault(noun, set()).update(names)
    folded_context = fold(" ".join(context))
    premises = []
    for noun, names in asked.items():
        others = held.get(noun, set())
        for name in sorted(names):
            if not noun.startswith("code:") and _CODE.fullmatch(name):
                continue  # a code ("P4") is checked against the codes of the sources
            if not noun.startswith("code:") and name.isalpha() and name.isupper() and len(name) >= 3:
                continue  # "niveau APICIL": a name in capitals is an insurer or a product, not a variant
            if fold(name) in {fold(o) for o in others}:
                continue
            if not noun.startswith("code:") and re.search(rf"\b{re.escape(fold(name))}\b", folded_context):
                continue  # the name is in the sources, just not after its noun
            if noun.startswith("code:") and re.search(rf"\b{re.escape(name)}\b", " ".join(context)):
                continue
            siblings = sorted(o for o in others if fold(o) != fold(name))
            if len(siblings) < (2 if noun.startswith("code:") else 1):
                continue
            label = name if noun.startswith("code:") else f"« {noun} {name} »"
            message = f"Les sources consultées ne mentionnent pas {label} ; elles citent {', '.join(siblings[:6])}."
            premises.append(Premise("name-absent", label, siblings[:6], source[0], source[1], sub_question, message))
    return premises


def _covered_subject(question: str, idf) -> tuple[str | None, str | None]:
    """(the asking sentence, its subject) of a yes/no question whether something is covered:
    the sentence's rarest term (`idf`) that says what, not where ("dans les garanties de base",
    "en formule 2"); (None, None) for another question."""
    from rag_assets.retrieve.query import analyze, content_terms

    sentence = _cover_question(question)
    if not sentence:
        return None, None
    scope = set(analyze(" ".join(_lexicon().scope_words)))
    terms = [t for t in content_terms(_lexicon().cover_asked.sub(" ", sentence)) if not t.isdigit() and t not in scope]
    return (sentence, max(terms, key=idf)) if terms else (None, None)


def _sentences_of(answering: list[tuple[str, str, str]]):
    """(source id, source name, sentence) of the answering passages, best passage first."""
    for source_id, name, passage in answering:
        for said in re.split(r"(?<=[.!?;])\s+", passage):
            if said.strip():
                yield source_id, name, said.strip()


def _writes(term: str, written: set[str]) -> bool:
    """The analysed `written` holds `term`, a word of its family (`terms.derived`) or its
    plural, which the stemmer keeps apart ("vélos" / "vélo")."""
    from rag_assets.answering.terms import derived

    return term in written or derived(term, written) or term.rstrip("s") in {t.rstrip("s") for t in written}


def _cover_question(question: str) -> str | None:
    """The sentence of a yes/no question asking whether something is covered, or None."""
    sentences = [x for x in re.split(r"(?<=[.!?:])\s+", question or "") if x.strip()]
    last = sentences[-1].strip() if sentences else ""
    # the asking clause: "… alors que j'avais laissé les clés, Acheel va-t-il m'indemniser ?" asks
    # yes or no, the "que" of the story before it asks nothing
    asked = _EST_CE_QUE.sub(" ", re.split(r"[,;]\s+", last)[-1])
    yes_no = (
        last.endswith("?")
        and (_INVERTED_ANY.search(asked) or _EST_CE_QUE.search(last))
        and not _lexicon().asking.search(asked)
    )
    return last if yes_no and _lexicon().cover_asked.search(last) else None


def inclusion_premises(question: str, units: list, name_of, idf, sub_question: int | None = None) -> list[Premise]:
    """A yes/no question whether a guarantee is covered takes it for granted that the
    contract includes it: when the passage naming it (a list item read with its lead-in,
    a table row with its header) says it is an option or not subscribed ("LES GARANTIES
    OPTIONNELLES - Vol - Bris de glace", "Non souscrite ; Extension n°2 ; Cure thermale"),
    the answer says so first. The guarantee is the asking sentence's rarest term (`idf`),
    `units`: the extractive answerer's units of the retrieved parents, in reading order;
    `name_of`: a source id's citation name."""
    from rag_assets.retrieve.query import analyze

    sentence, subject = _covered_subject(question, idf)
    if not subject:
        return []
    for index, unit in enumerate(units):
        if subject not in analyze(unit.text):
            continue
        table = unit.source_id != unit.section_id
        # a list item is read with its lead-in (the sentence before it, or the heading it sits
        # under: "LES GARANTIES OPTIONNELLES"), a table row with its header
        lead = units[index - 1] if index and not table and units[index - 1].source_id == unit.source_id else None
        header = unit.context.split("\n")[-1]
        marker = _lexicon().not_included.search(" ".join([lead.text if lead else "", unit.text, header]))
        refused = _refused_in_named_column(unit.display, question) if table else None
        if not (marker or refused):
            continue
        name = name_of(unit.source_id)
        if refused:  # "RAQVAM équilibre : non" for the formula the reader has
            message = (
                f"La question suppose cette garantie comprise ; pour « {refused[0]} », la source indique "
                f"« {refused[1]} » : « {unit.display[:240]} » ({name})."
            )
        else:
            shown = " ".join(((lead.display + " ") if lead else "").split() + unit.display.split())
            message = (
                f"La question suppose cette garantie comprise ; la source la dit « {marker.group(0).lower()} » : "
                f"« {shown[:240]} » ({name})."
            )
        return [
            Premise("guarantee-not-included", sentence, [unit.display], unit.source_id, name, sub_question, message)
        ]
    return []


RESTRICTION_SHARED = 2  # question words a restricting sentence must write (set a priori: no dev question has one)


def restriction_premises(
    question: str, answering: list[tuple[str, str, str]], sub_question: int | None = None
) -> list[Premise]:
    """A yes/no question whether something is covered, whose situation the answering passage
    restricts ("les clés sur le contact" against "si les clefs ont été laissées dans le véhicule,
    l'indemnité sera réduite de 20 %"): said first, citing the restriction. The sentence must
    restrict and write `RESTRICTION_SHARED` of the question's words."""
    from rag_assets.retrieve.query import analyze, content_terms

    sentence = _cover_question(question)
    if not sentence or not answering:
        return []
    asked = {t for t in content_terms(question) if not t.isdigit()} - set(analyze(" ".join(_lexicon().scope_words)))
    for source_id, name, said in _sentences_of(answering[:1]):
        written = set(analyze(said))
        if _lexicon().restricts.search(said) and sum(_writes(t, written) for t in asked) >= RESTRICTION_SHARED:
            message = (
                f"La question suppose cette situation couverte ; la source la restreint : « {said[:240]} » ({name})."
            )
            return [Premise("restricted", sentence, [said], source_id, name, sub_question, message)]
    return []


def exclusion_premises(
    question: str, answering: list[tuple[str, str, str]], idf, sub_question: int | None = None
) -> list[Premise]:
    """A yes/no question whether something is covered takes the cover for granted: when a
    sentence of the passage that answers, or of a retrieved exclusion that answers as well,
    excludes what the question asks about (its rarest term, `idf`), the answer says so first.
    `answering`: (source id, source name, passage), best first. Conditions ("à condition que")
    are the answer itself, not flagged."""
    from rag_assets.retrieve.query import analyze

    sentence, subject = _covered_subject(question, idf)
    if not subject:
        return []
    for source_id, name, said in _sentences_of(answering):
        if _lexicon().excludes.search(said) and _writes(subject, set(analyze(said))):
            message = f"La question suppose cette situation couverte ; la source l'exclut : « {said[:240]} » ({name})."
            return [Premise("excluded", sentence, [said], source_id, name, sub_question, message)]
    return []


def condition_premises(
    question: str, answering: list[tuple[str, str, str]], sub_question: int | None = None
) -> list[Premise]:
    """A figure of the reader's case (an age, a value, a duration) that a condition of the
    passage answering the question excludes ("mon chien a 9 ans" against "votre animal doit
    avoir moins de 8 ans à la souscription"): said first, citing the condition.
    `answering`: (source id, source name, passage), best first."""
    from rag_assets.answering.bands import band_match, quantities

    asked = quantities(question)
    for source_id, name, said in _sentences_of(answering if asked else []):
        if _lexicon().condition.search(said) and band_match(said, asked) is False:
            message = f"La situation décrite ne remplit pas une condition de la source : « {said[:240]} » ({name})."
            return [Premise("condition-not-met", question, [said], source_id, name, sub_question, message)]
    return []


WAITING_SHARED = 1  # question terms a waiting period's own words must write when the passage sets several


def waiting_premises(
    question: str, answering: list[tuple[str, str, str]], sub_question: int | None = None
) -> list[Premise]:
    """The reader has held the cover for less time than the waiting period the answering passage
    sets ("j'ai ajouté la garantie il y a quatre mois" against "le délai d'attente est de 6 mois
    pour les maladies suivantes : … hernie discale"): said first, citing the period. When the
    passage sets several periods, the one whose own words write the reader's case
    (`WAITING_SHARED` of the question's terms) decides. `answering`: (source id, name, passage)."""
    from rag_assets.retrieve.query import analyze, content_terms

    elapsed = [
        value
        for f in figures(question)
        if f.kind == DURATION
        and _lexicon().elapsed.search(question[max(0, f.start - 25) : f.start])
        and (value := figure_value(f)) is not None
    ]
    if not elapsed or not answering:
        return []
    held = min(elapsed)
    asked = {t for t in content_terms(question) if not t.isdigit()}
    for source_id, name, passage in answering[:1]:
        if not (_lexicon().waiting.search(passage) or _lexicon().waiting.search(name or "")):
            continue  # the period's heading ("Délai d'attente") may say what the list is
        periods = []
        for said in re.split(r"(?<=[.!?;])\s+|\s+(?=[-–•●·]\s)", passage):
            durations = [v for f in figures(said) if f.kind == DURATION and (v := figure_value(f)) is not None]
            if durations:
                shared = sum(_writes(t, set(analyze(said))) for t in asked)
                periods.append((said.strip(), max(durations), shared))
        if len(periods) > 1:
            periods = [p for p in periods if p[2] >= WAITING_SHARED]
        for said, period, _ in periods:
            if held < period:
                message = (
                    "La situation décrite ne remplit pas une condition de la source : le délai d'attente n'est "
                    f"pas écoulé : « {said[:240]} » ({name})."
                )
                return [Premise("waiting-period", question, [said], source_id, name, sub_question, message)]
    return []


def _refused_in_named_column(display: str, question: str) -> tuple[str, str] | None:
    """(column header, cell) of a table row shown as "Header : cell ; …" whose column the
    question names ("J'ai la formule Raqvam Équilibre" → "RAQVAM équilibre : non"), when that
    cell says no."""
    if " : " not in display:
        return None
    question_words = set(re.findall(r"\w+", fold(question)))
    pairs = [
        tuple(x.strip() for x in pair.split(" : ", 1)) for pair in display.rstrip(".").split(" ; ") if " : " in pair
    ]
    headers = [re.findall(r"\w+", fold(header)) for header, _ in pairs]
    for (header, cell), words in zip(pairs, headers):
        # the column's name is its header's opening words the question writes: a header may go
        # on with a slogan ("RAQVAM équilibre Compter sur la MAIF en toutes circonstances"); the
        # name must tell this column from the others ("RAQVAM" alone names them all)
        named = 0
        while named < len(words) and words[named] in question_words:
            named += 1
        if not named or not _lexicon().no_cell.match(cell):
            continue
        if all(other[:named] != words[:named] for other in headers if other is not words):
            return header, cell
    return None


def _label_pattern(label: str) -> str:
    words = fold(label).replace("’", "'").split()
    return r"\s+".join(re.escape(w).replace("'", "['’]") + r"s?" for w in words)


def _none_of(labels: list[str]) -> re.Pattern[str]:
    """A passage, folded (`fold`), saying there is none of a thing named by one of `labels`:
    "n'a pas de délai d'attente", "ne prévoit pas de franchise"."""
    return re.compile(_lexicon().none_of + "(?:" + "|".join(_label_pattern(label) for label in labels) + r")\b")


def absence_premises(
    question: str, units: list, thesaurus, score, bar: float, name_of, sub_question: int | None = None
) -> list[Premise]:
    """A question asking about something ("Quel est le délai de carence ?", "Y a-t-il une
    franchise ?") takes it for granted: when a passage about what is asked says there is
    none of it, under any of its thesaurus names ("Cette garantie n'a pas de délai
    d'attente"), the answer says so first. The thing is a concept the asking sentence
    names; the passage must cover the question as well as an answer would (`score`, `bar`)."""
    sentences = [x for x in re.split(r"(?<=[.!?:])\s+", question or "") if x.strip()]
    asking = sentences[-1] if sentences else ""
    found = []
    for entry in thesaurus.recognise(asking):
        concept = thesaurus.concepts.get(entry["id"])
        if concept is None:
            continue
        labels = sorted(
            {label for _, language, label in concept.all_labels() if language == "fr"}, key=len, reverse=True
        )
        pattern = _none_of(labels)
        for unit in units:
            if pattern.search(fold(unit.text)):
                found.append((score(unit), entry["label"], unit))
    found = [f for f in found if f[0] >= bar]
    if not found:
        return []
    _, label, unit = max(found, key=lambda f: f[0])
    name = name_of(unit.source_id)
    message = f"La question suppose « {label} » ; la source dit : « {unit.display[:240]} » ({name})."
    return [Premise("none-such", label, [unit.display], unit.source_id, name, sub_question, message)]


def none_such_first(paragraphs: list, premises: list[Premise]) -> list:
    """The extractive answer: the passage saying there is none of what is asked ("Cette
    garantie n'a pas de délai d'attente") answers "quel est le délai de carence ?", so it is
    shown first, cited, unless a paragraph already gives it."""
    from rag_assets.answering.model import Paragraph

    out = list(paragraphs)
    for premise in premises:
        if (
            premise.kind == "none-such"
            and premise.sub_question is not None
            and premise.found
            and not any(premise.source_id in p.source_ids and premise.found[0] in p.text for p in out)
        ):
            out.insert(
                0, Paragraph(text=premise.found[0], source_ids=[premise.source_id], sub_question=premise.sub_question)
            )
    return out


def premise_reasons(paragraph, premises: list[Premise]) -> list[str]:
    """A paragraph that gives the question's contradicted figure as the answer, without
    the value the source gives, repeats the false premise: a reason to withhold it."""
    why = []
    for premise in premises:
        if premise.kind not in ("figure-absent", "figure-contradicted") or (
            premise.sub_question is not None and paragraph.sub_question not in (None, premise.sub_question)
        ):
            continue
        shown = figures(paragraph.text)
        claim = figures(premise.claim)
        right = [f for text in premise.found for f in figures(text)]
        if (
            claim
            and any(same_figure(claim[0], f) for f in shown)
            and not any(same_figure(r, f) for r in right for f in shown)
        ):
            why.append(f"reprend {premise.claim}, que les sources contredisent")
    return why


def premise_passage(paragraph, premises: list[Premise], registry):
    """The passage of a contradicted premise's source that gives the right value, as the
    paragraph answering `paragraph`'s sub-question (verified: shown only if supported)."""
    from rag_assets.answering.model import Paragraph
    from rag_assets.answering.verification import verify
    from rag_assets.answering.withholding import reasons

    for premise in premises:
        if (
            premise.kind != "figure-contradicted"
            or not premise.passage
            or premise.source_id not in registry
            or (premise.sub_question is not None and paragraph.sub_question not in (None, premise.sub_question))
        ):
            continue
        candidate = Paragraph(text=premise.passage, source_ids=[premise.source_id], sub_question=paragraph.sub_question)
        verify([candidate], registry, llm=None)
        if not reasons(candidate):
            candidate.notes.append(
                "la valeur que donne la source, à la place d'un paragraphe qui reprenait la prémisse"
            )
            return candidate
    return None


def prompt_note(premises: list[Premise]) -> str:
    """What the model is told before answering."""
    if not premises:
        return ""
    lines = ["Vérification des prémisses de la question (faite par le système sur les sources) :"]
    lines += [f"- {p.message}" for p in premises]
    lines.append(
        "Commence ta réponse en le disant, en citant la source qui donne la bonne valeur ; ne reprends "
        "jamais la valeur de la question comme si elle était juste."
    )
    return "\n".join(lines)


def check_premises(question: str, subs, registry, extractive, asked: str = "") -> tuple[list[Premise], dict[int, str]]:
    """The premises of `question` (the standalone question) and of `asked` (the reader's
    own message) against the retrieved sources,
    per sub-question that found sources, and the text each sub-question is answered from:
    without its asserted figures, so the passage chosen is the one about what is asked,
    not the one that happens to repeat the question's figure."""
    from dataclasses import replace

    from rag_assets.answering.extractive import units_of
    from rag_assets.answering.model import NO_SOURCE
    from rag_assets.text.thesaurus import load_thesaurus

    claims = asserted_figures(question)
    # what the reader wrote counts too: a model's rewrite may drop the figure or its "c'est bien ça ?"
    claims += [f for f in asserted_figures(asked) if not any(same_figure(f, c) for c in claims)]
    stated = [f for f in stated_figures(question) + stated_figures(asked) if not any(same_figure(f, c) for c in claims)]
    stated = [f for i, f in enumerate(stated) if not any(same_figure(f, g) for g in stated[:i])]
    context = [e.evidence for e in registry.entries.values() if e.kind == "section"]
    units = None
    premises: list[Premise] = []
    answer_texts: dict[int, str] = {}
    for index, sub in enumerate(subs):
        if sub.status == NO_SOURCE:
            continue
        own = claims + [f for f in asserted_figures(sub.text) if not any(same_figure(f, c) for c in claims)]
        given = [f for f in stated if not any(same_figure(f, c) for c in own)]
        text = without_figures(sub.text, own + given) if own or given else sub.text
        if text != sub.text:
            answer_texts[index] = text
        if units is None:
            units, _ = units_of(registry, extractive.kb)
        sections = {registry[registry.section_id(p)].source_id for p in sub.parent_ids if registry.section_id(p)}
        sub_context = [registry[s].evidence for s in sections] or context
        reference = extractive.answer_sub_question(
            index, replace(sub, text=text), units, registry, targeted=True, max_units=PASSAGES
        )
        answering = [
            (p.source_ids[0], registry[p.source_ids[0]].name, p.text, p.text)
            for p in reference
            if p.role == "answer" and p.source_ids
        ]
        if own or given:
            premises += figure_premises(sub.text, answering, context, index, claims=own, stated=given)
        first = answering[0][:2] if answering else (None, None)
        premises += name_premises(sub.text, sub_context, index, source=first)
        allowed = set(sub.parent_ids)
        own_units = [u for u in units if registry[u.section_id].parent_id in allowed]
        naming = set(sub.scope_terms)
        # the answer's passages first, then the retrieved exclusions that answer as well as a sentence must
        excluding = sorted(
            ((extractive.score(text, u, naming=naming), u) for u in own_units if _lexicon().excludes.search(u.text)),
            key=lambda x: -x[0],
        )
        shown = [a[:3] for a in answering]
        premises += condition_premises(text, shown, index)
        premises += waiting_premises(sub.text, shown, index)
        premises += restriction_premises(text, shown, index)
        premises += exclusion_premises(
            text,
            shown
            + [
                (u.source_id, registry[u.source_id].name, u.display)
                for score, u in excluding
                if score >= extractive.sentence_bar(sub)
            ],
            extractive.weights.idf,
            index,
        )
        premises += inclusion_premises(
            sub.text, own_units, lambda source_id: registry[source_id].name, extractive.weights.idf, index
        )
        premises += absence_premises(
            text,
            own_units,
            load_thesaurus(),
            lambda unit: extractive.score(text, unit, naming=naming),
            extractive.sentence_bar(sub),
            lambda source_id: registry[source_id].name,
            index,
        )
    return premises, answer_texts
