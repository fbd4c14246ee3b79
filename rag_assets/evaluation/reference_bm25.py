"""Protocol reference BM25: Lucene's BM25 formula with Anserini's default English analyzer.

This is *not* the product's lexical engine (that is Tantivy, k1=1.2, b=0.75, over
children). It exists to prove that our BEIR reading (corpus, queries, qrels) and our
metrics match the field's: BM25 "flat" on SciFact with Anserini's settings must give the
published nDCG@10 (0.679) within ±0.01.

What it reproduces (Lucene 9 / Anserini ``bm25-flat``):

* analyzer: StandardTokenizer (UAX#29 word boundaries, approximated below), English
  possessive filter, lowercase, Lucene's 33 English stop words, Porter stemmer (the
  original algorithm, as Lucene's ``PorterStemFilter``);
* document = title + " " + text in one field;
* score(q, d) = Σ_t count_q(t) · idf(t) · tf / (tf + k1 · (1 − b + b · dl / avgdl)),
  idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)); Lucene dropped the constant (k1 + 1)
  numerator, which does not change the ranking;
* ``dl`` is the document length *as Lucene stores it*: one byte per document
  (``SmallFloat.intToByte4``), exact below 24 tokens and 4 significant bits above;
  ``avgdl`` is exact (sum of term frequencies / number of documents);
* query terms repeated in the query count that many times (Anserini's bag of words);
* top 1,000 hits per query, ties broken by document id.

A French variant (``language="fr"``) uses the product's French analyzer (Tantivy:
lowercase, French stop words, Snowball stemming, ASCII folding) with the same formula:
there is no published French protocol to match, it is a stable baseline.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy import sparse

# Lucene's EnglishAnalyzer.ENGLISH_STOP_WORDS_SET (also Anserini's default).
LUCENE_ENGLISH_STOP_WORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with".split()
)

# UAX#29 word boundaries as StandardTokenizer applies them, for the cases that matter in
# running text: letters and digits stick together ("covid19"), an apostrophe, period or
# colon joins two letters ("don't", "u.s"), a period, comma or semicolon joins two digits
# ("3.5", "1,000"), an underscore joins anything.
_TOKEN = re.compile(r"(?:[^\W\d_][.'’:](?=[^\W\d_])|\d[.,;'’](?=\d)|\w)+")


def _porter():
    import Stemmer  # PyStemmer: Snowball's implementation of the original Porter algorithm

    return Stemmer.Stemmer("porter")


class AnseriniEnglishAnalyzer:
    """StandardTokenizer → EnglishPossessiveFilter → LowerCaseFilter → StopFilter → PorterStemFilter."""

    name = "anserini-default-english (UAX#29 approx., possessive, lowercase, Lucene stop words, Porter)"

    def __init__(self) -> None:
        self._stemmer = _porter()

    def tokens(self, text: str) -> list[str]:
        words = []
        for token in _TOKEN.findall(text):
            if token[-2:] in ("'s", "'S", "’s", "’S"):
                token = token[:-2]
            token = token.lower()
            if token and token not in LUCENE_ENGLISH_STOP_WORDS:
                words.append(token)
        return self._stemmer.stemWords(words)

    __call__ = tokens


class ProductFrenchAnalyzer:
    """The lexical index's French analyzer (Tantivy), for a French reference baseline."""

    name = "tantivy-french (simple tokenizer, lowercase, French stop words, Snowball, ASCII folding)"

    def __init__(self) -> None:
        from rag_assets.text.analysis import analyzer

        self._analyzer = analyzer("fr")

    def tokens(self, text: str) -> list[str]:
        return self._analyzer.analyze(text)

    __call__ = tokens


def analyzer_for(language: str) -> Callable[[str], list[str]]:
    return AnseriniEnglishAnalyzer() if language == "en" else ProductFrenchAnalyzer()


# Lucene's org.apache.lucene.util.SmallFloat (length norms) --------------------------------
def _long_to_int4(i: int) -> int:
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(i: int) -> int:
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_MAX_INT4 = _long_to_int4(2**31 - 1)
_NUM_FREE_VALUES = 255 - _MAX_INT4  # 24


def int_to_byte4(i: int) -> int:
    return i if i < _NUM_FREE_VALUES else _NUM_FREE_VALUES + _long_to_int4(i - _NUM_FREE_VALUES)


def byte4_to_int(b: int) -> int:
    return b if b < _NUM_FREE_VALUES else _NUM_FREE_VALUES + _int4_to_long(b - _NUM_FREE_VALUES)


def lucene_length(length: int) -> int:
    """The document length Lucene's BM25 sees after the one-byte norm encoding."""
    return byte4_to_int(int_to_byte4(length))


@dataclass
class ReferenceBM25Config:
    k1: float = 0.9  # Anserini's BEIR / CACM regressions
    b: float = 0.4
    depth: int = 1000
    lossy_lengths: bool = True


class ReferenceBM25:
    """In-memory BM25 (Lucene formula) over (id, text) records; sparse matrix scoring."""

    def __init__(self, analyzer: Callable[[str], list[str]], config: ReferenceBM25Config | None = None):
        self.analyzer = analyzer
        self.config = config or ReferenceBM25Config()
        self.doc_ids: list[str] = []
        self.vocabulary: dict[str, int] = {}
        self._matrix: sparse.csr_matrix | None = None

    def index(self, records: Iterable[tuple[str, str]]) -> "ReferenceBM25":
        rows, cols, tfs, lengths = [], [], [], []
        for row, (doc_id, text) in enumerate(records):
            self.doc_ids.append(doc_id)
            counts = Counter(self.analyzer(text))
            lengths.append(sum(counts.values()))
            for term, count in counts.items():
                rows.append(row)
                cols.append(self.vocabulary.setdefault(term, len(self.vocabulary)))
                tfs.append(count)
        n_docs = len(self.doc_ids)
        tf = np.asarray(tfs, dtype=np.float64)
        rows_a, cols_a = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
        raw_lengths = np.asarray(lengths, dtype=np.float64)
        avgdl = raw_lengths.sum() / max(n_docs, 1)
        if self.config.lossy_lengths:
            dl = np.asarray([lucene_length(int(n)) for n in lengths], dtype=np.float64)
        else:
            dl = raw_lengths
        df = np.bincount(cols_a, minlength=len(self.vocabulary)).astype(np.float64)
        idf = np.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))
        k1, b = self.config.k1, self.config.b
        norm = k1 * (1.0 - b + b * dl / max(avgdl, 1e-9))
        weights = idf[cols_a] * tf / (tf + norm[rows_a])
        self._matrix = sparse.csc_matrix((weights, (rows_a, cols_a)), shape=(n_docs, len(self.vocabulary)))
        self._order_key = np.argsort(np.argsort(np.asarray(self.doc_ids, dtype=object)))  # id rank, for ties
        return self

    def scores(self, query: str) -> np.ndarray:
        counts = Counter(t for t in self.analyzer(query) if t in self.vocabulary)
        if not counts:
            return np.zeros(len(self.doc_ids))
        columns = [self.vocabulary[t] for t in counts]
        weights = np.asarray(list(counts.values()), dtype=np.float64)
        return np.asarray(self._matrix[:, columns] @ weights).ravel()

    def search(self, query: str, depth: int | None = None) -> list[tuple[str, float]]:
        depth = depth or self.config.depth
        scores = self.scores(query)
        matched = np.flatnonzero(scores > 0)
        if matched.size == 0:
            return []
        # best score first; equal scores: larger document id first (trec_eval's tie order)
        order = matched[np.lexsort((-self._order_key[matched], -scores[matched]))][:depth]
        return [(self.doc_ids[i], float(scores[i])) for i in order]

    def run(self, queries: dict[str, str], depth: int | None = None) -> dict[str, dict[str, float]]:
        return {qid: dict(self.search(text, depth)) for qid, text in queries.items()}


def build_reference(records: Sequence[dict], language: str, config: ReferenceBM25Config | None = None) -> ReferenceBM25:
    """Index BEIR records (``_id``, ``title``, ``text``) as title + " " + text, Anserini-style."""
    return ReferenceBM25(analyzer_for(language), config).index(
        (r["_id"], f"{r.get('title') or ''} {r.get('text') or ''}".strip()) for r in records
    )
