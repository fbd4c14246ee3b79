"""Lines of insurance: what a document covers (its branches: auto, habitation, santé…) and
what a question is about, read from their words.

A policyholder asks about their car, their flat, their dog, their loan; a policy covers one
or a few of these. A question naming an insurer whose documents cover none of the branches
it speaks of ("mon chien assuré chez MAIF" when MAIF's documents are home, car and legal
protection policies), or a store that holds no document of that branch ("le rendement de mon
assurance vie" against health and home policies), is not answered by those documents however
many words it shares with them. The gate weighs this (`answering/gate.py`, `off_lines`).

The vocabulary (`text/branches.py`) is the lines' own subject words (what is insured, who is covered), not the
words every policy writes (garantie, sinistre, franchise). A document covers a branch when
its identity (title, file name, sidecar) or one of its section headings names it, or when at
least `SHARE` of its passages write one of the branch's words and at least `RELATIVE` of its
main branch's share: a home policy's legal-protection annex makes it a legal-protection
document as well, the word "décès" in a car policy's passenger cover does not make it a life
policy.
"""

from __future__ import annotations

import re

from rag_assets.text.branches import branch_terms, branches_of_text

SHARE = 0.15  # of a document's passages writing one of a branch's words, for the document to cover it
RELATIVE = 0.2  # ... and of the share of the branch its passages write most (both compared by the gate's
# cross-validated log loss, evaluations/gate/README.md: a share of 0.1 did worse)


# the contract the reader says they hold, by its line: "mon assurance auto", "ma mutuelle", "notre
# contrat habitation", "ma voiture assurée chez…", "mon chien est assuré à la…"
_HELD = re.compile(
    r"\b(?:mon|ma|mes|notre|nos)\s+(?:(?:assurances?|contrats?|polices?)\s+(?:[\w-]+\s+)?[\w-]+|mutuelles?)"
    r"|\b(?:mon|ma|mes|notre|nos)\s+[\w-]+\s+(?:est\s+|sont\s+)?assurée?s?\s+(?:chez|à|au|auprès)\b"
    r"|\bassurée?s?\s+(?:mon|ma|mes|notre|nos)\s+[\w-]+\s+(?:chez|à|au|auprès)\b",
    re.IGNORECASE,
)


def held_lines(text: str, language: str = "fr") -> frozenset[str]:
    """The lines of the contracts the reader says they hold ("mon assurance auto Groupama": auto)."""
    return frozenset(b for m in _HELD.finditer(text or "") for b in branches_of_text(m.group(), language))


def document_branches(
    passages_holding, passages: int, identity: str, headings: str = "", language: str = "fr"
) -> frozenset[str]:
    """`passages_holding(terms)`: how many of the document's passages hold one of `terms`;
    `passages`: how many it has; `identity`: its title, file name and sidecar names;
    `headings`: its section headings (an option or an annex has its own: "Option annulation
    voyage" in a home policy)."""
    named = branches_of_text(identity, language) | branches_of_text(headings, language)
    if not passages:
        return named
    shares = {branch: passages_holding(sorted(words)) / passages for branch, words in branch_terms(language).items()}
    most = max(shares.values())
    return frozenset(named | {b for b, share in shares.items() if share >= SHARE and share >= RELATIVE * most})
