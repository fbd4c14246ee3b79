"""How well a passage covers a question: the IDF-weighted share of the question's terms
(analysed like the lexical index, `rag_assets.retrieve.query`) found in it.

Used to score a parent or a sentence against a question (retrieval gate, extractive
answerer) and a paragraph against its sources (verification).
"""

from __future__ import annotations

# A question's word and a passage's word of one family ("voisin" / "voisinage", "mitoyen" /
# "mitoyenneté", "couvert" / "couverture") keep different stems: Snowball strips inflections,
# not derivations. A stem of at least PREFIX_MIN letters that opens the other counts for
# PREFIX_WEIGHT of its weight (values chosen on dev: evaluations/tuning.md).
PREFIX_MIN = 5
PREFIX_WEIGHT = 0.75


class TermWeights:
    """IDF of analysed terms over the store's children (asked of the client, cached)."""

    def __init__(self, kb):
        self._kb = kb
        self._cache: dict[tuple[str, str], float] = {}

    def idf(self, term: str, language: str = "fr") -> float:
        key = (term, language)
        if key not in self._cache:
            self._cache[key] = self._kb.idf(term, language)
        return self._cache[key]

    def coverage(
        self,
        question_terms: list[str],
        passage_terms: set[str],
        language: str = "fr",
        context_terms: set[str] | None = None,
        context_weight: float = 0.5,
    ) -> float:
        """IDF-weighted share of the question's terms found in the passage (terms found
        only in its context — title, headings, caption, table header — or only as a word of
        the same family, count partly)."""
        if not question_terms:
            return 0.0
        total = found = 0.0
        for term in question_terms:
            weight = self.idf(term, language)
            total += weight
            if term in passage_terms:
                found += weight
            elif derived(term, passage_terms):
                found += weight * PREFIX_WEIGHT
            elif context_terms and term in context_terms:
                found += weight * context_weight
        return found / total if total else 0.0


def derived(term: str, terms: set[str]) -> bool:
    """`terms` holds a word of `term`'s family: one stem opens the other, both long enough and
    words (a number opening another, "50000" / "500000", is another amount)."""
    return (
        len(term) >= PREFIX_MIN
        and term.isalpha()
        and any(len(t) >= PREFIX_MIN and (t.startswith(term) or term.startswith(t)) and t.isalpha() for t in terms)
    )
