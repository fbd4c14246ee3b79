"""How well a passage covers a question: the IDF-weighted share of the question's terms
(analysed like the lexical index, `rag_assets.retrieve.query`) found in it.

Used to score a parent or a sentence against a question (retrieval gate, extractive
answerer) and a paragraph against its sources (verification).
"""

from __future__ import annotations


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
