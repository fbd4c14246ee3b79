"""The question's own scope: the documents it names.

Policyholders write "chez MAIF, mon bateau…" or "mon contrat Raqvam": several insurers'
policies for the same product say nearly the same words, so the insurer, product or
contract named in the question says which documents can hold the answer. A document's
identity is what names it — its title, its file name, and the
sidecar's `insurer`, `product` and `reference` fields — analysed like the lexical
index, minus the words that say what kind of document it is ("conditions générales"), plus
the one-word labels of the thesaurus concepts it names (a policy titled "auto moto" is the
one a reader means by "ma voiture"; "assurance habitation" the one meant by "ma maison"). A question term
that names some documents but not all selects them; the documents whose identity the
question matches best (at least `SHARE` of the best match, so a comparison of two
insurers keeps both) form the scope. Nothing is applied silently: the scope, and the
terms that chose it, are part of the retrieval trace and of the answer.

A name the reader wrote ("IPID", "MAIF", "Nautis") is never dropped by that share: when no
chosen document answers to it, its best-matching documents join the scope ("la fiche IPID
d'Allianz Prévoyance Travailleur Non Salarié" keeps the IPID beside the longer notice). When
the names select disjoint sets of documents ("APRIL Flexi Santé ou APICIL Équilibre"), the
question is a comparison: `groups` holds each side, and retrieval gives each side its turn in
the ranking, so the top of the list holds both.

A term that names a document but is also common in the documents' text ("protection
juridique", "véhicule") names nothing on its own; beside a name the reader wrote ("la protection
juridique MAIF", "ma voiture assurée à la MAIF") it says which of that insurer's policies is meant.

A capitalised name in the question that no document contains at all ("chez Groupama")
is reported as unknown, so a question about an insurer with no document can say so. A name
in capitals is left to the acronym dictionary ("ITT" is often only written out), except
where the question says it is an insurer: "chez AXA", "auprès d'AXA".
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import zip_longest

from rag_assets.retrieve.query import AnalyzedQuery, analyze
from rag_assets.text.thesaurus import Thesaurus

SHARE = 0.5  # documents matching at least this share of the best identity match stay in scope
# Words that say what kind of document it is, not which one: they never name a document.
GENERIC = (
    "assurance assurances assuré contrat contrats conditions générales générale particulières notice "
    "information informations document documents produit produits formule formules tableau garantie "
    "garanties compagnie entreprise société version référence page general terms policy product "
    "insurance contract guarantees table"
)
IDENTITY_FIELDS = ("insurer", "product", "reference")  # sidecar keys that name a document
READ_IDENTITY_FIELDS = ("insurer", "distributor", "product")  # ... and fields read from it
_EXTENSION = re.compile(r"\.(pdf|docx?|html?|md|pptx|jsonl)$", re.IGNORECASE)
_FILE_NOISE = re.compile(r"\b(19|20)\d\d\b|\bnd\b", re.IGNORECASE)  # a year, "n.d." (no date)
_WORD = re.compile(r"[\w'’-]+")
_ELISION = re.compile(r"^(?:qu|[dljmnstc])['’]", re.IGNORECASE)  # "d'Allianz" is the name "Allianz"
# the insurer the reader has: "chez AXA", "assuré auprès d'AXA", "souscrit chez Groupama"
_AT_INSURER = r"chez|auprès\s+(?:de\s+|d['’])"
_INSURER = re.compile(rf"\b(?:{_AT_INSURER})\s*([\w'’-]+)", re.IGNORECASE)
# ... or the insurer or contract the reader says they hold, written as a name: "chez Groupama",
# "assurée à la Macif", "mon contrat Groupama", "ma mutuelle Harmonie"
_HOLDER = re.compile(
    rf"\b(?:{_AT_INSURER}|assurée?s?\s+(?:à\s+la\b|au\b|à\s+l['’]|à\b)"
    r"|(?:contrat|assurance|mutuelle|assureur|police)\s+(?:de\s+chez\s+)?)\s*([\w'’-]+)",
    re.IGNORECASE,
)


def names(text: str) -> list[str]:
    """Words written as names: capitalised but not opening a sentence ("chez Groupama"), or
    in capitals anywhere ("MAIF"); an elided article is not part of the name ("d'Allianz")."""
    found = []
    for sentence in re.split(r"(?<=[.!?:;])\s+", text):
        words = [_ELISION.sub("", w) for w in _WORD.findall(sentence)]
        # an acronym is a name even opening a sentence ("MAIF (litige) contre Allianz ?")
        found += [w for i, w in enumerate(words) if len(w) > 2 and (w.isupper() or i > 0 and w[:1].isupper())]
    return found


@lru_cache(maxsize=4)
def _generic(language: str) -> frozenset[str]:
    return frozenset(analyze(GENERIC, language))


@dataclass(frozen=True)
class Scope:
    document_ids: tuple[str, ...] = ()  # empty: the whole store
    terms: tuple[str, ...] = ()  # question terms that chose the documents
    unknown_names: tuple[str, ...] = ()  # names in the question that no document contains
    groups: tuple[tuple[str, ...], ...] = ()  # sides the ranking alternates between (see _sides)
    # of the unknown names, those the reader gives as their insurer or contract ("chez Groupama",
    # "en PNO (propriétaire non occupant)"): a town or a country in a story is no such name
    unheld: tuple[str, ...] = ()

    def describe(self, titles: dict[str, str] | None = None) -> str:
        parts = []
        if self.document_ids:
            names = [(titles or {}).get(d, d) for d in self.document_ids]
            parts.append(f"limited to {', '.join(names)} (named by: {', '.join(self.terms)})")
        if self.groups:
            parts.append(
                "compared: " + " / ".join(", ".join((titles or {}).get(d, d) for d in side) for side in self.groups)
            )
        if self.unknown_names:
            parts.append(f"no document mentions {', '.join(self.unknown_names)}")
        return "; ".join(parts)


def identity_text(record: dict) -> str:
    """What names a document: its title, its file name (no extension, year or separators), the
    sidecar's identity fields and the insurer, distributor and product read from the document
    (parsing/identity.py: "chez Allianz" names the policy a broker sells for Allianz IARD)."""
    extra = record.get("extra") or {}
    read = record.get("identity") or {}
    # the extension goes before the separators do, or "x.pdf" leaves the name "pdf"
    file_name = re.sub(r"[_.-]+", " ", _EXTENSION.sub("", record.get("file_name") or ""))
    names = [record.get("title") or "", _FILE_NOISE.sub(" ", file_name)]
    names += [str(extra[key]) for key in IDENTITY_FIELDS if extra.get(key)]
    return " ".join(names + [str(read[key]) for key in READ_IDENTITY_FIELDS if read.get(key)])


@dataclass
class DocumentIdentities:
    """Identity terms of each published document, and how many documents share each."""

    terms: dict[str, frozenset[str]] = field(default_factory=dict)
    df: Counter = field(default_factory=Counter)

    @classmethod
    def of(cls, documents: dict[str, dict], thesaurus: Thesaurus | None = None) -> "DocumentIdentities":
        terms = {}
        for document_id, record in documents.items():
            names = identity_text(record)
            language = record.get("language") or "fr"
            identity = set(analyze(names, language))
            if thesaurus is not None:
                identity |= _synonyms(thesaurus, names, language)
            terms[document_id] = frozenset(identity) - _generic(language)
        return cls(terms, Counter(t for ts in terms.values() for t in ts))

    def scope(self, query: AnalyzedQuery, known_term, common_term) -> Scope:
        """``known_term(term)``: the store's text holds the analysed term; ``common_term(term)``:
        it is frequent there (a common noun such as "locataire" names no document unless the
        question writes it as a name)."""
        n = len(self.terms)
        written = names(query.text)
        # a name in two words is often one in a file name ("Swiss Life", "swisslife_…"): when
        # the joined spelling names documents, it stands for its two words
        pairs = [(a, b, analyze(a + b, query.language)) for a, b in zip(written, written[1:])]
        joined = [t for _, _, ts in pairs for t in ts if self.df.get(t)]
        parts = {t for a, b, ts in pairs if set(ts) & set(joined) for t in analyze(f"{a} {b}", query.language)}
        written_as_names = {t for name in written for t in analyze(name, query.language)} | set(joined)
        terms = [t for t in dict.fromkeys([*query.terms, *joined]) if t not in parts]
        naming = [t for t in terms if 0 < self.df.get(t, 0) < n and (t in written_as_names or not common_term(t))]
        if any(t in written_as_names for t in naming):  # common terms beside a written name
            naming = [t for t in terms if 0 < self.df.get(t, 0) < n]
        # (acronyms are left to the acronym dictionary: "ITT" is often only written out)
        insurers = {m.group(1) for m in _INSURER.finditer(query.text)}
        holders = {m.group(1) for m in _HOLDER.finditer(query.text)}
        unknown = tuple(
            dict.fromkeys(
                name
                for name in names(query.text)
                if (not name.isupper() or name in holders)
                and (analysed := analyze(name, query.language))
                and not any(known_term(t) or self.df.get(t) for t in analysed)
            )
        )
        unheld = tuple(name for name in unknown if name in holders)
        if not naming or n < 2:
            return Scope(unknown_names=unknown, unheld=unheld)
        # a term naming few documents says more than one naming many
        score = {d: sum(math.log(1 + n / self.df[t]) for t in naming if t in ts) for d, ts in self.terms.items()}
        best = max(score.values())
        chosen = {d for d, s in score.items() if s >= SHARE * best}
        # the reader's insurer ("chez Mila") is theirs: another insurer's policy is not their contract
        insurer_terms = {t for name in insurers for t in analyze(_ELISION.sub("", name), query.language)}
        of_insurer = {d for d in chosen if self.terms[d] & insurer_terms}
        if of_insurer:
            chosen = of_insurer
        written_terms = [t for t in dict.fromkeys(naming) if t in written_as_names]
        for term in written_terms:  # a name the reader wrote keeps its best documents in scope
            holders = {d for d, ts in self.terms.items() if term in ts}
            if not holders & chosen:
                top = max(score[d] for d in holders)
                chosen |= {d for d in holders if score[d] == top}
        if written_terms:
            # beside a name the reader wrote, a word that names other documents ("mon assurance
            # auto Groupama" against Acheel's "DG Auto") says which of the named one's
            # policies is meant, never that another insurer's policy is theirs
            chosen = {d for d in chosen if self.terms[d] & set(written_terms)}
        sides = _sides(frozenset(chosen), [frozenset(d for d in chosen if t in self.terms[d]) for t in written_terms])
        if len(sides) == 1:  # the product the reader named, alone
            chosen, sides = set(sides[0]), ()
        used = tuple(t for t in naming if any(t in self.terms[d] for d in chosen))
        return Scope(tuple(sorted(chosen)), used, unknown, sides, unheld=unheld)


def _synonyms(thesaurus: Thesaurus, text: str, language: str) -> set[str]:
    """The one-word labels of the concepts ``text`` names: a reader's word for the same thing
    ("voiture" for "auto"); longer labels would add their other words ("locataire" from
    "multirisque habitation locataire") to documents they do not name."""
    found = set()
    for concept in thesaurus.recognise(text, language):
        for _, label_language, label in thesaurus.concepts[concept["id"]].all_labels():
            if label_language == language and len(analysed := analyze(label, language)) == 1:
                found |= set(analysed)
    return found


def _sides(scope: frozenset[str], named: list[frozenset[str]]) -> tuple[tuple[str, ...], ...]:
    """The sides the ranking alternates between: the smallest document sets the written names
    select, when there are at least two and they are pairwise disjoint (a comparison); or, when
    one document is named most precisely inside a wider scope ("l'IPID de la prévoyance TNS
    d'Allianz"), that document and the rest of the scope; () otherwise. A name that selects
    several documents most precisely ("TNS": the notice and its IPID) names their product, and
    the scope's other documents are other products ("Personne Clé", named only by "Allianz"):
    that set alone, the whole scope."""
    sets = {s for s in named if s}
    smallest = [s for s in sets if not any(other < s for other in sets)]
    if len(smallest) == 1 and smallest[0] < scope:
        if len(smallest[0]) > 1:
            return (tuple(sorted(smallest[0])),)
        return tuple(sorted(smallest[0])), tuple(sorted(scope - smallest[0]))  # the named document first
    if len(smallest) < 2 or any(a & b for i, a in enumerate(smallest) for b in smallest[i + 1 :]):
        return ()
    return tuple(sorted(tuple(sorted(s)) for s in smallest))


def take_turns(ranked: list, sides: tuple[tuple[str, ...], ...], document_of) -> list:
    """A comparison's ranking: each side's items in their own order, one side after the other
    (side 1's best, side 2's best, side 1's second…); items of no side follow."""
    side_of = {d: i for i, side in enumerate(sides) for d in side}
    queues: list[list] = [[] for _ in sides]
    rest: list = []
    for item in ranked:
        side = side_of.get(document_of(item))
        (rest if side is None else queues[side]).append(item)
    return [item for turn in zip_longest(*queues) for item in turn if item is not None] + rest
