"""Pseudo-relevance feedback for BM25, RM3-style (Lavrenko & Croft's relevance model,
interpolated with the question as Anserini's RM3 does).

From the first BM25 pass's top children: P(w|R) = Σ_d P(w|d) · P(d|q), with P(w|d) the
term's share of the child's terms and P(d|q) the child's BM25 score over the feedback
scores' sum; the ``terms`` most probable words join the question with weight
(1 − λ)/λ · n · P(w|R) (P renormalized over the chosen words), n the question's term
count, so that the question's own words keep
their weight 1 and carry λ of the mass. Words are counted by their analysed stem (as the
index sees them) and given back in their most frequent written form, which the index
analyses to that same stem.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from rag_assets.retrieve.query import analyze

_WORD = re.compile(r"[^\W\d_]{3,}", re.UNICODE)  # letters only: amounts and codes are not topics


@dataclass(frozen=True)
class Feedback:
    documents: int = 10  # first-pass children read
    terms: int = 10  # words added
    original_weight: float = 0.5  # λ: the question's share of the expanded query

    def expand(self, question: str, texts: list[str], scores: list[float], language: str = "fr") -> dict[str, float]:
        """word -> weight to add to the BM25 query (the question's words are not repeated)."""
        total = sum(max(s, 0.0) for s in scores[: self.documents])
        if not texts or total <= 0:
            return {}
        question_stems = set(analyze(question, language))
        model: Counter[str] = Counter()
        forms: dict[str, Counter[str]] = {}
        for text, score in zip(texts[: self.documents], scores[: self.documents]):
            stems = []
            for word in _WORD.findall(text.lower()):
                for stem in analyze(word, language):
                    stems.append(stem)
                    forms.setdefault(stem, Counter())[word] += 1
            if stems:
                for stem, count in Counter(stems).items():
                    # weights, not counts: a Counter for its most_common()
                    model[stem] += (count / len(stems)) * (max(score, 0.0) / total)  # type: ignore[assignment]
        chosen = [(stem, p) for stem, p in model.most_common() if stem not in question_stems][: self.terms]
        mass = sum(p for _, p in chosen)
        if not chosen or mass <= 0:
            return {}
        n = max(1, len(analyze(question, language)))  # the question's terms, each of weight 1
        scale = (1 - self.original_weight) / self.original_weight * n / mass
        return {forms[stem].most_common(1)[0][0]: round(p * scale, 4) for stem, p in chosen}
