"""Definition questions: the term the reader asks the policy's meaning of, and the glossary.

"Au sens du contrat, sommes-nous un « Groupe » ?" asks what the policy's definitions section
says about "Groupe". Policies define their words once, in a section called "Définitions",
"Lexique" or "Glossaire", in a few lines that share few words with a question told as a story,
so neither engine ranks them high; the glossary entry is nevertheless what the reader asked
for, so a glossary parent that writes the term leads the ranking (see `KnowledgeBase.retrieve`).
"""

from __future__ import annotations

import re

from rag_assets.retrieve.query import analyze

GLOSSARY = re.compile(r"\b(d[ée]finitions?|lexique|glossaire|glossary)\b", re.IGNORECASE)
MAX_TERM_WORDS = 4  # a defined term is a word or a short phrase, not a clause
# what says the question asks for the policy's own meaning of the term
_CUE = re.compile(
    r"au sens (?:du|de|des|d['’])|consid[ée]r[ée]e?s? comme|parle-t-on|qu['’]entend-on|"
    r"que (?:signifie|veut dire)|d[ée]finition|d[ée]fini[est]? comme|qualifi[ée]e?s? d[e'’]|"
    r"\bmeaning of\b|\bdefin(?:ed|ition)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(r"«\s*([^»]+?)\s*»|“([^”]+)”|\"([^\"]+)\"")
_WHAT_IS = re.compile(
    r"qu['’]est-ce qu(?:e|['’])\s*(?:(?:un|une|le|la|les|l['’])\s+)?([\w’'-]+(?:\s+[\w’'-]+){0,3}?)"
    r"\s*(?:\?|$|,|au sens|dans|pour|selon)",
    re.IGNORECASE,
)


def defined_term(question: str) -> str | None:
    """The term a definition question asks about: a short quoted term beside a cue ("au sens
    du contrat", "considéré comme", "parle-t-on de"), or "qu'est-ce qu'un X ?"; None otherwise."""
    if _CUE.search(question):
        for match in _QUOTED.finditer(question):
            term = next(group for group in match.groups() if group)
            if len(term.split()) <= MAX_TERM_WORDS:
                return term
    match = _WHAT_IS.search(question)
    return match.group(1) if match else None


def is_glossary(heading_path: list[str]) -> bool:
    return any(GLOSSARY.search(heading) for heading in heading_path)


def glossary_text(parent: dict) -> str:
    """What a parent holds of a definitions section: all of it under a glossary heading path;
    else, in a parent that joined short sections, its blocks from a glossary heading block on."""
    if is_glossary(parent["heading_path"]):
        return parent["text"]
    blocks = parent.get("blocks") or []
    start = next((i for i, b in enumerate(blocks) if b["kind"] == "heading" and GLOSSARY.search(b["text"])), None)
    return "" if start is None else "\n".join(b["text"] for b in blocks[start + 1 :])


def writes_term(text: str, term: str, language: str = "fr") -> bool:
    """The text writes the term's analysed words in order (case, accents, plurals aside)."""
    wanted = analyze(term, language)
    words = analyze(text, language)
    return bool(wanted) and any(words[i : i + len(wanted)] == wanted for i in range(len(words) - len(wanted) + 1))
