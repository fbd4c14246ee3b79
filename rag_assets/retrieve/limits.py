"""What a question may be before either engine sees it.

A 100 KB question cost 43 s of search and 84 s of `ask` and was logged in full; an empty
one returned five arbitrary hits; a lone surrogate raised UnicodeEncodeError deep in an
engine. Every question now goes through `checked_question` first (the top of
`KnowledgeBase.retrieve` and of `ask`):

- refused when longer than RAG_ASSETS_MAX_QUERY_CHARS characters (default 2,000) — counted
  on the text as given, before any work — or than RAG_ASSETS_MAX_QUERY_TERMS words
  (default 200), or empty once cleaned;
- cleaned: lone surrogates and invisible formatting characters (zero-width spaces and
  joiners, bidirectional controls, soft hyphens, BOM) removed, control characters made
  spaces, Unicode NFC, spaces collapsed.
"""

from __future__ import annotations

import re
import unicodedata

_WORD = re.compile(r"\w+")
_SPACES = re.compile(r"\s+")


class QueryRefused(ValueError):
    """A question (or a thread id or user asking it) over a limit, or empty: the message says which and why."""


def visible_text(text: str) -> str:
    """`text` without what cannot be seen: lone surrogates and format characters (zero-width
    space/joiners, word joiner, bidirectional controls, soft hyphen, BOM). Newlines stay."""
    if text.isascii():
        return text
    return "".join(ch for ch in text if unicodedata.category(ch) not in ("Cf", "Cs"))


def clean_question(text: str) -> str:
    """Visible text, control characters as spaces, NFC, single spaces."""
    text = visible_text(text or "")
    text = "".join(" " if unicodedata.category(ch) == "Cc" else ch for ch in text)
    return _SPACES.sub(" ", unicodedata.normalize("NFC", text)).strip()


def checked_question(question, settings=None):
    """The question cleaned (a str, or an AnalyzedQuery re-analysed when cleaning changed
    it), or QueryRefused. `settings`: default `load_settings()`."""
    from rag_assets.retrieve.query import AnalyzedQuery

    if settings is None:
        from rag_assets.settings import load_settings

        settings = load_settings()
    text = question.text if isinstance(question, AnalyzedQuery) else ("" if question is None else str(question))
    if len(text) > settings.max_query_chars:  # before any work on it
        raise QueryRefused(
            f"question is {len(text):,} characters long, over the {settings.max_query_chars:,}-"
            "character limit (RAG_ASSETS_MAX_QUERY_CHARS); ask a shorter question"
        )
    cleaned = clean_question(text)
    if not cleaned:
        raise QueryRefused("question is empty: nothing to search for")
    terms = len(_WORD.findall(cleaned))
    if terms > settings.max_query_terms:
        raise QueryRefused(
            f"question has {terms:,} words, over the {settings.max_query_terms:,}-word limit "
            "(RAG_ASSETS_MAX_QUERY_TERMS); ask a shorter question"
        )
    if isinstance(question, AnalyzedQuery):
        return question if cleaned == question.text else AnalyzedQuery.of(cleaned, question.language)
    return cleaned
