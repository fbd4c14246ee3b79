"""A question, analysed once: its language, its content terms (analysed exactly as the
lexical index analyses text), the codes and qualified ids it names.

The router, the retriever, the extractive answerer and the verification all read the
same `AnalyzedQuery`, so a question is analysed (and its language detected) once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rag_assets.text.analysis import analyze
from rag_assets.text.language import detect_language

# Question words and verbs that carry no subject matter (beyond the analyzers' stop words).
_QUESTION_WORDS = {
    "fr": "quel quelle quels quelles est sont combien comment pourquoi quand où qui que quoi lequel laquelle "
    "lesquels lesquelles peut peuvent faut dois doit donne donner donnez indique indiquer indiquez explique "
    "expliquer expliquez décris décrire décrivez détaille détailler précise préciser rappelle rappeler "
    "cest ce ces cette cet il elle ils elles on y a-t-il existe-t-il selon quoi dire applicable "
    "compare comparer comparez comparaison différence différences entre versus "
    # function words the French stemmer keeps: "chez MAIF" is about MAIF, not "chez"
    "chez auprès été être avoir fait faire bien très aussi encore déjà toujours alors donc car si ni "
    # the auxiliaries of a question ("Puis-je appeler …", "va-t-elle jouer ?") say how it is asked
    "puis peux pouvez pouvons pourrai pourrais pourrait va vais vas vont allez aller",
    "en": "what which who whom whose when where why how is are was were do does did can could should would "
    "tell explain describe give list compare comparison difference between versus",
}

# "zone A", "article 7", "classe 3", "priorité P1": a noun followed by a short code.
_QUALIFIED = re.compile(
    r"\b(zones?|classes?|cat[ée]gories?|types?|niveaux?|annexes?|articles?|priorit[ée]s?|options?|formules?|"
    r"tableaux?|sections?|chapitres?|lots?|groupes?|tranches?|paliers?|ann[ée]es?|dév\.?)\s+"
    r"([A-Za-z](?![\w'’-])|[A-Z]?\d+(?:\.\d+)*[A-Z]?(?![\w-]))",
    re.IGNORECASE,
)
# Codes such as "MX-200", "P1", "CG-HAB-2023".
_CODE = re.compile(r"\b[A-Z]{1,5}-?\d+[A-Z0-9-]*\b")


@lru_cache(maxsize=4)
def _question_stems(language: str) -> frozenset[str]:
    words = _QUESTION_WORDS.get(language, _QUESTION_WORDS["fr"]).split()
    return frozenset(t for w in words for t in analyze(w, language))


def content_terms(text: str, language: str = "fr") -> list[str]:
    """Analysed terms minus question words, deduplicated in order."""
    stop = _question_stems(language)
    seen: dict[str, None] = {}
    for term in analyze(text, language):
        if term not in stop:
            seen.setdefault(term, None)
    return list(seen)


def qualified_ids(text: str) -> list[tuple[str, str]]:
    """[("zone", "A"), ("article", "7.1")]: noun (singular, lower case) + code (upper case), each
    once, in the order the text names them (a set's order changes from one process to the next)."""
    found: dict[tuple[str, str], None] = {}
    for noun, code in _QUALIFIED.findall(text or ""):
        noun = noun.lower().rstrip("s").rstrip(".")
        noun = {"priorité": "priorite", "catégorie": "categorie", "année": "annee"}.get(noun, noun)
        found.setdefault((noun, code.upper()), None)
    return list(found)


def codes(text: str) -> set[str]:
    return {c.upper() for c in _CODE.findall(text or "")}


@dataclass(frozen=True)
class AnalyzedQuery:
    text: str
    language: str
    terms: tuple[str, ...]  # content terms, analysed like the index, question words out
    codes: frozenset[str]  # "MX-200"
    qualified: frozenset[tuple[str, str]]  # ("zone", "A")

    @classmethod
    def of(cls, text: str, language: str | None = None) -> "AnalyzedQuery":
        language = language or detect_language(text)
        return cls(
            text=text,
            language=language,
            terms=tuple(content_terms(text, language)),
            codes=frozenset(codes(text)),
            qualified=frozenset(qualified_ids(text)),
        )
