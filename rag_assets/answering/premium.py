"""A question about what the insurance costs.

General conditions, notices and guarantee tables set the cover; the premium a reader pays is on
their particular conditions or payment schedule, and depends on them. A question asking the
price of a contract, an option or a level ("combien coûte par mois la mutuelle…", "quel est le
tarif de l'option annulation ?") shares many words with the policy that names them, and its
passages hold amounts (ceilings, deductibles) that are no price: it is answered only by a
passage stating a premium ("cotisation mensuelle : 12,50 €"), and otherwise refused with what
the documents lack. A question about what a claim costs the reader (a deductible, what is left
to pay) is no such question.
"""

from __future__ import annotations

import re

_PRODUCT = (
    r"(?:assurance|mutuelle|contrat|option|formule|garantie|adh[ée]sion|couverture|protection|niveau|pack|module)"
)
_ASKS_PRICE = re.compile(
    r"\bcombien\s+(?:(?:vais-je|dois-je|va-t-on|allons-nous|devrai-je)\s+)?(?:(?:me|nous|vous|lui|leur)\s+|m['’])?"
    r"(?:co[uû]t\w*|pai\w*|pay\w*|faut-il payer)\b"
    r"|\b(?:prix|tarifs?|co[uû]t)\s+(?:mensuel\s+|annuel\s+)?(?:de|d['’]|du|des)\b"
    r"|\bmontant\s+(?:de\s+(?:la|ma|notre|leur)|des|de\s+mes)\s+(?:cotisations?|primes?)\b",
    re.IGNORECASE,
)
# a claim's cost to the reader, which the documents state
_CLAIM = re.compile(
    r"\bfranchises?\b|\bsinistres?\b|\br[ée]parations?\b|\breste\s+(?:à|a)\s+(?:ma|notre|sa)?\s*charge\b"
    r"|\brembours\w*|\bindemni\w*|\bplafonds?\b|\bfrais\b|\bhonoraires\b|\bd[ée]pannage\b",
    re.IGNORECASE,
)
_PREMIUM_WORD = r"(?:cotisations?|primes?|tarifs?|prix)"
_AMOUNT = r"\d[\d\s\u00a0\u202f.,]*\s?(?:€|euros?\b|EUR\b)"
_STATES_PREMIUM = re.compile(
    rf"\b{_PREMIUM_WORD}\b[^.;|]{{0,80}}?{_AMOUNT}|{_AMOUNT}[^.;|]{{0,40}}?\b{_PREMIUM_WORD}\b", re.IGNORECASE
)


def asks_price(question: str) -> bool:
    """The question asks what a contract, option or level costs, not what a claim costs."""
    for sentence in re.split(r"(?<=[.!?])\s+", question or ""):
        if _ASKS_PRICE.search(sentence) and re.search(rf"\b{_PRODUCT}s?\b", sentence, re.IGNORECASE):
            if not _CLAIM.search(sentence):
                return True
    return False


def states_premium(text: str) -> bool:
    """A passage stating a premium: a premium word and an amount in one clause."""
    return bool(_STATES_PREMIUM.search(text or ""))
