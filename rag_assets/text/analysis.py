"""How text becomes search terms: the lexical index's analyzer for each language.

The index, the question analysis and the thesaurus analyse with the same analyzer, so a
passage, a question and a label agree on their terms.
"""

from __future__ import annotations

from functools import lru_cache

import tantivy

_STEMMERS = {"fr": "french", "en": "english"}


def analyzer(language: str) -> tantivy.TextAnalyzer:
    # ASCII folding after stemming: the Snowball French stemmer expects accents.
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.stopword(_STEMMERS[language]))
        .filter(tantivy.Filter.stemmer(_STEMMERS[language]))
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


@lru_cache(maxsize=4)
def _shared_analyzer(language: str) -> tantivy.TextAnalyzer:
    return analyzer(language if language in _STEMMERS else "fr")


def analyze(text: str, language: str = "fr") -> list[str]:
    """Terms as the lexical index makes them (lowercase, stop words out, stems, folded);
    a language without an analyzer is analysed as French."""
    return _shared_analyzer(language).analyze(text or "")
