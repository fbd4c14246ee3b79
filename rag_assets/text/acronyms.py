"""Acronyms: found in the corpus, resolved in the question before both engines.

Policyholders and actuaries write "ITT", "PTIA", "SCR", "OPTAM" where a document may
only write the long form, or the reverse. A document that introduces an acronym writes
it next to its long form — "Perte totale et irréversible d'autonomie (PTIA)", or
"SCR (Solvency Capital Requirement)" — or defines it in a glossary ("BR : Base de
Remboursement"), so the store's own text says what its acronyms mean. `extract` finds
those pairs, checking the acronym's letters against the long form's words (each content
word gives its initial, or its first two or three letters: "Option Pratique TArifaire
Maîtrisée (OPTAM)"; small words such as "de", "des", "pour" may be skipped), so
"la marge de risque (Risk Margin)" or "la société (SE)" give nothing.

An `AcronymDictionary` merges the pairs found in the published documents (the
documents' own wording first) with the thesaurus's acronym labels — leaving out the
acronyms the documents use as names ("MAIF": written 700 times, its long form 3).
Finding pairs needs every word of the text, so it is done once per document when its
parents are built (`DocumentAcronyms`, stored beside them) and the client only merges
those summaries (`AcronymDictionary.merge`).
`resolve` writes each known acronym of the question once with its long form beside it
("ITT" → "ITT (incapacité temporaire totale)"). Acronyms are matched case-sensitively
on word boundaries: "SCR" is resolved, "scr" and "SCRIPT" are not.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Iterable

from rag_assets.hashing import short_id
from rag_assets.text.folding import fold

# 2 to 8 capitals; digits, "/", "&" and "-" allowed inside ("S/P", "OPTAM-CO").
_ACRONYM = r"[A-Z](?:[A-Z0-9/&-]{0,10}[A-Z0-9])?"
ACRONYM = re.compile(rf"^{_ACRONYM}$")
MIN_CAPITALS, MAX_CAPITALS = 2, 8
# Words a long form may skip (their initial is not in the acronym).
SMALL_WORDS = frozenset(
    "a à au aux d de des du en et l la le les par pour sur un une dans avec and for in of on the to by with at".split()
)
MAX_EXTRA_WORDS = 4  # a long form holds at most len(letters) + this many words
MAX_LETTERS_PER_WORD = 3  # a word gives at most its first three letters ("TArifaire": T, A)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# "Long Form (ACR)": the acronym alone in parentheses.
_LONG_THEN_SHORT = re.compile(rf"\((\s*{_ACRONYM}\s*)\)")
# "ACR (Long Form)": an acronym followed by a parenthesis of words.
_SHORT_THEN_LONG = re.compile(rf"(?<![\w/&-])({_ACRONYM})\s*\(([^()]{{3,150}})\)")
# A glossary entry "ACR : Long Form" ("Lexique : BR : Base de Remboursement - FR : Frais Réels"):
# the long form is the shortest run of words after the colon that spells the acronym.
_GLOSSARY = re.compile(rf"(?<![\w/&-])({_ACRONYM})\s?:\s+(?=([^:|()\n]{{3,150}}))")


def is_acronym(text: str) -> bool:
    """2–8 capitals (digits, "/", "&", "-" allowed inside), no lower-case letter."""
    text = text.strip()
    return bool(ACRONYM.match(text)) and MIN_CAPITALS <= sum(c.isupper() for c in text) <= MAX_CAPITALS


def _letters(acronym: str) -> str:
    return fold("".join(c for c in acronym if c.isalnum()))


def _split(word: str) -> list[str]:
    """ "d'autonomie" → ["d", "autonomie"]: an elided article is a small word of its own."""
    return [p for p in re.split(r"['’]", word) if p]


def _matches(words: list[str], letters: str) -> bool:
    """Do the words spell the letters? Each word, in order, gives its first letter — or
    its first two or three ("TArifaire" in OPTAM) — or, a small word only, nothing. The
    first and last words always give letters."""
    words = [fold(w) for w in words]

    def spell(i: int, j: int) -> bool:  # words[i:] spell letters[j:]
        if i == len(words):
            return j == len(letters)
        word = words[i]
        if word in SMALL_WORDS and 0 < i < len(words) - 1 and spell(i + 1, j):
            return True
        return any(
            word[:k] == letters[j : j + k] and spell(i + 1, j + k)
            for k in range(1, min(MAX_LETTERS_PER_WORD, len(word)) + 1)
            if j + k <= len(letters)
        )

    return bool(letters) and bool(words) and spell(0, 0)


def _long_form_before(text: str, acronym: str) -> str | None:
    """The shortest run of words ending `text` that spells the acronym."""
    letters = _letters(acronym)
    tokens = list(_WORD.finditer(text))
    if not tokens:
        return None
    limit = len(letters) + MAX_EXTRA_WORDS
    for size in range(2, min(limit, len(tokens)) + 1):  # a long form has two words at least
        run = tokens[-size:]
        words = [p for t in run for p in _split(t.group())]
        start = run[0].start()
        if len(words) > 1 and fold(words[0]) in ("l", "d") and re.match(r"\w['’]", run[0].group()):
            words, start = words[1:], start + 2  # "l'Option Pratique…": the long form starts after "l'"
        if fold(words[0]) in SMALL_WORDS or fold(words[-1]) in SMALL_WORDS:
            continue
        if _matches(words, letters):
            return text[start:].strip()
    return None


def _long_form_after(text: str, acronym: str) -> str | None:
    """The shortest run of words starting `text` that spells the acronym (a glossary entry)."""
    letters = _letters(acronym)
    tokens = list(_WORD.finditer(text))
    for size in range(2, min(len(letters) + MAX_EXTRA_WORDS, len(tokens)) + 1):
        run = tokens[:size]
        words = [p for t in run for p in _split(t.group())]
        if fold(words[0]) in SMALL_WORDS or fold(words[-1]) in SMALL_WORDS:
            continue
        if _matches(words, letters):
            return text[run[0].start() : run[-1].end()].strip()
    return None


def _long_form_inside(text: str, acronym: str) -> str | None:
    """The whole parenthesis, when its words spell the acronym."""
    text = text.strip()
    words = [p for t in _WORD.findall(text) for p in _split(t)]
    if not words or fold(words[0]) in SMALL_WORDS or fold(words[-1]) in SMALL_WORDS:
        return None
    if len(words) > len(_letters(acronym)) + MAX_EXTRA_WORDS:
        return None
    return text if _matches(words, _letters(acronym)) else None


def pairs(text: str) -> Iterable[tuple[str, str]]:
    """Every (acronym, long form) the text introduces, in order, repeats included."""
    for match in _LONG_THEN_SHORT.finditer(text or ""):
        acronym = match.group(1).strip()
        if not is_acronym(acronym):
            continue
        before = text[max(0, match.start() - 300) : match.start()]
        # the long form lies in the same clause: stop at the previous sentence or parenthesis
        before = re.split(r"[.;:!?()\[\]\n]|\s[–—-]\s", before)[-1]
        long_form = _long_form_before(before, acronym)
        if _plausible(acronym, long_form):
            yield acronym, long_form
    for match in _GLOSSARY.finditer(text or ""):
        acronym, after = match.group(1), match.group(2)
        if is_acronym(acronym):
            long_form = _long_form_after(after, acronym)
            if _plausible(acronym, long_form):
                yield acronym, long_form
    for match in _SHORT_THEN_LONG.finditer(text or ""):
        acronym, inside = match.group(1), match.group(2)
        if not is_acronym(acronym) or is_acronym(inside.strip()):
            continue
        long_form = _long_form_inside(inside, acronym)
        if _plausible(acronym, long_form):
            yield acronym, long_form


def extract(text: str) -> dict[str, str]:
    """Acronym → long form, for the "Long Form (ACR)" and "ACR (Long Form)" pairs the
    text introduces (the most frequent long form of each acronym, the first on a tie)."""
    return _most_frequent(pairs(text))


def _most_frequent(found: Iterable[tuple[str, str]]) -> dict[str, str]:
    counts: dict[str, Counter] = defaultdict(Counter)
    written: dict[tuple[str, str], str] = {}  # (acronym, folded long form) -> its first written form
    for acronym, long_form in found:
        key = fold(_clean(long_form))
        written.setdefault((acronym, key), _clean(long_form))
        counts[acronym][key] += 1
    # Counter.most_common keeps insertion order on ties
    return {acronym: written[acronym, forms.most_common(1)[0][0]] for acronym, forms in counts.items()}


def _clean(long_form: str) -> str:
    return re.sub(r"\s+", " ", long_form).strip(" ,")


def _plausible(acronym: str, long_form: str | None) -> bool:
    """Two words at least, and not the acronym itself ("2014/65/EU (EU)")."""
    return bool(long_form) and len(_WORD.findall(long_form)) >= 2 and not is_acronym(long_form.strip())


NAME_RATIO = 2  # an acronym written more than twice as often as its long form is a name


class _Occurrences:
    """How often the texts write an acronym (as written, whole word) or a phrase (folded)."""

    def __init__(self, texts: list[str]):
        self.text = "\n".join(texts)
        self.folded = " ".join(fold(self.text).split())
        self._acronyms: Counter | None = None

    def acronyms(self) -> Counter:
        if self._acronyms is None:  # every acronym-like word, in one pass
            self._acronyms = Counter(re.findall(rf"(?<![\w/&-]){_ACRONYM}(?![\w/&-])", self.text))
        return self._acronyms

    def phrase(self, phrase: str) -> int:
        return self.folded.count(" ".join(fold(phrase).split())) if self.folded else 0


# Bump when what `DocumentAcronyms.of` finds for the same text changes: stored summaries of
# another version are recomputed from the document's text.
EXTRACTION_VERSION = "2"  # 2: long forms folded by rag_assets.text.folding (NFKD)


def _phrase_key(long_form: str) -> str:
    """How `_Occurrences.phrase` compares a long form with the text."""
    return " ".join(fold(long_form).split())


def thesaurus_fingerprint(thesaurus) -> str:
    """What of the thesaurus a document's summary depends on: its acronym labels."""
    return short_id(sorted(thesaurus.acronyms()) if thesaurus is not None else [])


@dataclass
class DocumentAcronyms:
    """What one document's text says about acronyms, enough to merge documents without
    reading their text again: the pairs it introduces (counted, first written first), how
    often it writes each acronym-like word, and how often it writes each long form that it
    or the thesaurus gives. A long form introduced by another document is counted in that
    document only, so the name test of a merge may see fewer long forms than the whole text
    holds (the documents that use an acronym as a name rarely spell it out)."""

    pairs: list[tuple[str, str, int]]  # (acronym, long form as first written, times)
    acronyms: dict[str, int]
    phrases: dict[str, int]  # `_phrase_key` of a long form -> times
    thesaurus: str = ""  # thesaurus_fingerprint the phrases were counted for

    @classmethod
    def of(cls, texts: Iterable[str], thesaurus=None) -> "DocumentAcronyms":
        texts = list(texts)
        found: dict[tuple[str, str], list] = {}  # (acronym, folded long form) -> [first written, times]
        for text in texts:
            for acronym, long_form in pairs(text):
                entry = found.setdefault((acronym, fold(_clean(long_form))), [_clean(long_form), 0])
                entry[1] += 1
        counts = _Occurrences(texts)
        forms = [written for written, _ in found.values()]
        forms += [long_form for _, long_form, _ in (thesaurus.acronyms() if thesaurus is not None else ())]
        return cls(
            pairs=[(acronym, written, times) for (acronym, _), (written, times) in found.items()],
            acronyms={word: n for word, n in counts.acronyms().items() if is_acronym(word)},
            phrases={key: n for key in dict.fromkeys(map(_phrase_key, forms)) if (n := counts.phrase(key))},
            thesaurus=thesaurus_fingerprint(thesaurus),
        )

    def to_dict(self) -> dict:
        return {
            "extraction_version": EXTRACTION_VERSION,
            "thesaurus": self.thesaurus,
            "pairs": [list(p) for p in self.pairs],
            "acronyms": self.acronyms,
            "phrases": self.phrases,
        }

    @classmethod
    def from_dict(cls, data: dict, fingerprint: str) -> "DocumentAcronyms | None":
        """None when the summary was made by another extraction or for another thesaurus
        (`fingerprint`: `thesaurus_fingerprint` of the one in use)."""
        if data.get("extraction_version") != EXTRACTION_VERSION or data.get("thesaurus") != fingerprint:
            return None
        return cls([tuple(p) for p in data["pairs"]], data["acronyms"], data["phrases"], data["thesaurus"])


@dataclass
class AcronymDictionary:
    """Known acronyms and their long forms; `sources` says where each came from
    ("corpus" or "thesaurus:<concept id>")."""

    long_forms: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # names the documents write as acronyms

    @classmethod
    def build(cls, texts: Iterable[str] = (), thesaurus=None) -> "AcronymDictionary":
        """The pairs the texts introduce (the documents' own wording first), then the
        thesaurus's acronym labels for acronyms the texts leave out. An acronym the texts
        write more than `NAME_RATIO` times as often as its long form is how the documents
        name the thing ("MAIF" 700 times, "Mutuelle assurance des instituteurs de France"
        3 times): the acronym alone finds those pages, and its long form would only add
        words to the question — it is left out (listed in `skipped`)."""
        return cls.merge([DocumentAcronyms.of(texts, thesaurus)], thesaurus)

    @classmethod
    def merge(cls, documents: Iterable[DocumentAcronyms], thesaurus=None) -> "AcronymDictionary":
        """`build` from the documents' summaries, in document order (ties between long forms
        go to the first written, as in one text)."""
        forms: dict[str, Counter] = defaultdict(Counter)
        written: dict[tuple[str, str], str] = {}  # (acronym, folded long form) -> its first written form
        acronym_counts: Counter = Counter()
        phrase_counts: Counter = Counter()
        for document in documents:
            for acronym, long_form, times in document.pairs:
                key = fold(long_form)
                written.setdefault((acronym, key), long_form)
                forms[acronym][key] += times
            acronym_counts.update(document.acronyms)
            phrase_counts.update(document.phrases)
        # Counter.most_common keeps insertion order on ties
        candidates = [
            (acronym, written[acronym, counted.most_common(1)[0][0]], "corpus") for acronym, counted in forms.items()
        ]
        candidates += [
            (acronym, long_form, f"thesaurus:{concept}")
            for acronym, long_form, concept in (thesaurus.acronyms() if thesaurus is not None else ())
        ]
        dictionary = cls()
        for acronym, long_form, source in candidates:
            if acronym in dictionary.long_forms or acronym in dictionary.skipped:
                continue
            if acronym_counts[acronym] > NAME_RATIO * phrase_counts[_phrase_key(long_form)]:
                dictionary.skipped[acronym] = long_form
                continue
            dictionary.long_forms[acronym] = long_form
            dictionary.sources[acronym] = source
        return dictionary

    def __len__(self) -> int:
        return len(self.long_forms)

    def __contains__(self, acronym: str) -> bool:
        return acronym in self.long_forms

    def _pattern(self) -> re.Pattern | None:
        if not self.long_forms:
            return None
        pattern = getattr(self, "_compiled", None)
        if pattern is None or pattern[0] != len(self.long_forms):
            names = sorted(self.long_forms, key=len, reverse=True)  # "OPTAM-CO" before "OPTAM"
            pattern = (
                len(self.long_forms),
                re.compile(r"(?<![\w/&-])(" + "|".join(map(re.escape, names)) + r")(?![\w/&-])"),
            )
            self._compiled = pattern
        return pattern[1]

    def found(self, text: str) -> dict[str, str]:
        """The known acronyms the text writes (case-sensitive, whole words), in order, with
        the long form `resolve` adds — none when the text already writes it out."""
        pattern = self._pattern()
        if pattern is None or not text:
            return {}
        folded = " ".join(fold(text).split())
        result = {}
        for match in pattern.finditer(text):
            acronym = match.group(1)
            long_form = self.long_forms[acronym]
            if acronym in result or " ".join(fold(long_form).split()) in folded:
                continue
            result[acronym] = long_form
        return result

    def resolve(self, text: str) -> str:
        """Each known acronym the text writes gets its long form beside it, once:
        "ma garantie ITT" → "ma garantie ITT (incapacité temporaire totale)"."""
        return self.resolve_traced(text)[0]

    def resolve_traced(self, text: str) -> tuple[str, dict[str, str]]:
        """The resolved text, and the acronyms resolved (acronym → long form)."""
        todo = self.found(text)
        if not todo:
            return text, {}
        done: set[str] = set()

        def add(match: re.Match) -> str:
            acronym = match.group(1)
            if acronym not in todo or acronym in done:
                return match.group(0)
            done.add(acronym)
            return f"{acronym} ({todo[acronym]})"

        return self._pattern().sub(add, text), todo
