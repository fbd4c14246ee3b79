"""Terms of questions and passages, analysed exactly as the lexical index analyses them
(French / English Snowball analyzers), weighted by their IDF in the index of children.

Used to score how well a parent or a sentence covers a question (retrieval threshold,
extractive answerer) and how well a paragraph is covered by its sources (verification).
"""

from __future__ import annotations

import math
import re
from functools import lru_cache

from rag_assets.language import detect_language
from rag_assets.index.lexical import TEXT_FIELDS, analyzer

# Question words and verbs that carry no subject matter (beyond the analyzers' stop words).
_QUESTION_WORDS = {
    "fr": "quel quelle quels quelles est sont combien comment pourquoi quand où qui que quoi lequel laquelle "
          "lesquels lesquelles peut peuvent faut dois doit donne donner donnez indique indiquer indiquez explique "
          "expliquer expliquez décris décrire décrivez détaille détailler précise préciser rappelle rappeler "
          "cest ce ces cette cet il elle ils elles on y a-t-il existe-t-il selon quoi dire applicable "
          "compare comparer comparez comparaison différence différences entre versus",
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
def _analyzer(language: str):
    return analyzer(language if language in TEXT_FIELDS else "fr")


@lru_cache(maxsize=4)
def _question_stems(language: str) -> frozenset[str]:
    words = _QUESTION_WORDS.get(language, _QUESTION_WORDS["fr"]).split()
    return frozenset(t for w in words for t in _analyzer(language).analyze(w))


def language_of(text: str) -> str:
    return detect_language(text)


def analyze(text: str, language: str = "fr") -> list[str]:
    return _analyzer(language).analyze(text or "")


def content_terms(text: str, language: str = "fr") -> list[str]:
    """Analysed terms minus question words, deduplicated in order."""
    stop = _question_stems(language)
    seen: dict[str, None] = {}
    for term in analyze(text, language):
        if term not in stop:
            seen.setdefault(term, None)
    return list(seen)


def qualified_ids(text: str) -> set[tuple[str, str]]:
    """{("zone", "A"), ("article", "7.1")}: noun (singular, lower case) + code (upper case)."""
    found = set()
    for noun, code in _QUALIFIED.findall(text or ""):
        noun = noun.lower().rstrip("s").rstrip(".")
        noun = {"priorité": "priorite", "catégorie": "categorie", "année": "annee"}.get(noun, noun)
        found.add((noun, code.upper()))
    return found


def codes(text: str) -> set[str]:
    return {c.upper() for c in _CODE.findall(text or "")}


class TermWeights:
    """IDF of analysed terms over the children of the lexical index (one searcher per use)."""

    def __init__(self, kb):
        self._searcher = None
        self._n = 1
        try:
            self._searcher = kb.lexical.index.searcher()
            self._n = max(1, int(self._searcher.num_docs))
        except Exception:  # an empty or unavailable index: uniform weights
            self._searcher = None
        self._cache: dict[tuple[str, str], float] = {}

    def idf(self, term: str, language: str = "fr") -> float:
        key = (term, language)
        if key not in self._cache:
            df = 0
            if self._searcher is not None:
                try:
                    df = int(self._searcher.doc_freq(TEXT_FIELDS.get(language, "text_fr"), term))
                except Exception:
                    df = 0
            # a term the corpus never saw weighs the most
            self._cache[key] = math.log(1.0 + self._n / (df + 0.5))
        return self._cache[key]

    def coverage(self, question_terms: list[str], passage_terms: set[str], language: str = "fr",
                 context_terms: set[str] | None = None, context_weight: float = 0.5) -> float:
        """IDF-weighted share of the question's terms found in the passage (terms found
        only in its context — title, headings, caption, table header — count partly)."""
        if not question_terms:
            return 0.0
        total = found = 0.0
        for term in question_terms:
            weight = self.idf(term, language)
            total += weight
            if term in passage_terms:
                found += weight
            elif context_terms and term in context_terms:
                found += weight * context_weight
        return found / total if total else 0.0
