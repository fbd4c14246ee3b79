"""Optional cross-encoder reranking, pluggable by model name or path.

No cross-encoder ships inside a PyPI wheel, so none is on by default: set
RAG_ASSETS_RERANKER to a sentence-transformers CrossEncoder (e.g.
"cross-encoder/mmarco-mMiniLMv2-L12-H384-v1" or "BAAI/bge-reranker-v2-m3" where a model
hub is reachable, or a local folder) and install the `sentence-transformers` extra.
"""

from __future__ import annotations

import math
from typing import Sequence


class CrossEncoderReranker:
    """Scores (question, parent text) pairs in [0, 1]; loads the model on first use."""

    def __init__(self, name_or_path: str, max_chars: int = 4000):
        self.name = name_or_path
        self.max_chars = max_chars
        self._model = None

    def _load(self):
        if self._model is None:
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(self.name, device="cpu")
        return self._model

    def __call__(self, question: str, hits: Sequence) -> list[float]:
        pairs = [(question, hit.text[: self.max_chars]) for hit in hits]
        scores = [float(s) for s in self._load().predict(pairs)]
        # logits of single-label models → probabilities, so one threshold fits all models
        return [s if 0.0 <= s <= 1.0 else 1.0 / (1.0 + math.exp(-s)) for s in scores]


def reranker_from_spec(spec: str | None) -> CrossEncoderReranker | None:
    return CrossEncoderReranker(spec) if spec else None
