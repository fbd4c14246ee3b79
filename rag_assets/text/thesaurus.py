"""Thesaurus expansion for BM25: the policy's words for the policyholder's.

A user writes "délai de carence" where the notice writes "délai d'attente", "arrêt de
travail" where it writes "incapacité temporaire totale", "pare-brise" where it writes
"bris de glace". BM25 only finds the words written, so a concept of the thesaurus
recognised in the question adds its other labels as weighted query terms:

- the question's own terms keep their weight (1.0) and are never lowered;
- a concept's preferred label adds its terms at 0.95, its alternative and hidden labels
  at 0.85; its broader, narrower and related concepts' preferred labels only on request
  (``relations=True``, at 0.7);
- at most 12 terms are added: preferred labels first, then alternative, then hidden
  labels, each in the order the question names the concepts.

The thesaurus is SKOS-like JSON — ``{"concepts": [{"id", "prefLabel": {"fr": …},
"altLabel": {"fr": […]}, "hiddenLabel": {…}, "broader": […], "narrower": […],
"related": […], "sources": [{"document", "quote"}]}]}`` — read from
``$RAG_ASSETS_THESAURUS`` (a file, or a folder of ``*.json`` files), by default
``data/thesaurus/`` of the project. Labels are analysed exactly as the lexical index
analyses text (case, accents and stop words do not count: "DÉGÂTS DES EAUX" is
"dégâts eaux"), and a multi-word label matches the same analysed terms, contiguous, in
the question. The French stemmer does not always join a singular and its plural
("dégât" and "dégâts" differ): a thesaurus lists both when both are written. A label written as an
acronym ("PTIA") only matches that acronym as written (case-sensitive, whole word).
Alternative labels are the documents' own wordings; hidden labels are the words a
policyholder writes that no document does ("appart"), each backed by the concept's
definition in ``sources``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Protocol

from rag_assets.hashing import short_id
from rag_assets.settings import PROJECT_ROOT
from rag_assets.text.acronyms import is_acronym
from rag_assets.text.analysis import analyze
from rag_assets.text.language import detect_language

ENV = "RAG_ASSETS_THESAURUS"
DEFAULT_PATH = PROJECT_ROOT / "data" / "thesaurus"
WEIGHTS = {"prefLabel": 0.95, "altLabel": 0.85, "hiddenLabel": 0.85}
RELATION_WEIGHT = 0.7
MAX_ADDED = 12
LABEL_KINDS = ("prefLabel", "altLabel", "hiddenLabel")
RELATIONS = ("broader", "narrower", "related")
_KEYS = {"id", *LABEL_KINDS, *RELATIONS, "sources", "definition", "scopeNote", "notation"}
_WORD = re.compile(r"\w+")


class Question(Protocol):
    """What expansion reads of an analysed question (`rag_assets.retrieve.query.AnalyzedQuery`)."""

    @property
    def text(self) -> str: ...

    @property
    def language(self) -> str: ...


class ThesaurusError(ValueError):
    """A malformed thesaurus file; the message names the file and the concept."""


@dataclass(frozen=True)
class Concept:
    id: str
    labels: dict[str, tuple[tuple[str, str], ...]]  # kind -> ((language, label), …)
    relations: dict[str, tuple[str, ...]]  # broader / narrower / related -> concept ids
    sources: tuple[dict, ...]
    origin: str = ""  # the file it was read from

    def pref_label(self, language: str = "fr") -> str:
        labels = dict(self.labels["prefLabel"])
        return labels.get(language) or next(iter(labels.values()))

    def all_labels(self) -> Iterable[tuple[str, str, str]]:
        """(kind, language, label) of every label."""
        for kind in LABEL_KINDS:
            for language, label in self.labels.get(kind, ()):
                yield kind, language, label


class Expansion(dict):
    """Analysed term -> BM25 weight: the question's own terms at 1.0, the added terms at
    their label's weight. Also says what was recognised, for the retrieval trace."""

    def __init__(self, original: Iterable[str] = ()):
        super().__init__((term, 1.0) for term in original)
        self.concepts: list[dict] = []  # {"id", "label", "kind"} of each concept recognised
        self.added: dict[str, float] = {}  # analysed term -> weight, the terms the thesaurus added
        self.words: dict[str, float] = {}  # a written word per added term -> weight (what `LexicalIndex.search` takes)

    def trace(self) -> dict:
        return {"concepts": list(self.concepts), "added": dict(self.added)}


@dataclass
class Thesaurus:
    concepts: dict[str, Concept] = field(default_factory=dict)
    files: tuple[str, ...] = ()

    # -- loading ---------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | Path | None = None) -> "Thesaurus":
        """The thesaurus at `path`, else ``$RAG_ASSETS_THESAURUS``, else ``data/thesaurus/``
        (empty when that default folder is absent). A file, or every ``*.json`` of a folder."""
        explicit = path if path is not None else (os.environ.get(ENV) or None)
        target = Path(explicit) if explicit is not None else DEFAULT_PATH
        if not target.exists():
            if explicit is not None:
                raise ThesaurusError(f"thesaurus {target} does not exist (from {'argument' if path else ENV})")
            return cls()
        files = sorted(target.rglob("*.json")) if target.is_dir() else [target]
        stamp = tuple((str(f.resolve()), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
        return _load_files(stamp)

    @classmethod
    def from_dicts(cls, documents: Iterable[tuple[str, object]]) -> "Thesaurus":
        """From parsed JSON documents, each with the name errors will give (its file)."""
        concepts: dict[str, Concept] = {}
        names = []
        for origin, data in documents:
            names.append(origin)
            if not isinstance(data, dict) or not isinstance(data.get("concepts"), list):
                raise ThesaurusError(f'{origin}: expected an object with a list under "concepts"')
            for number, raw in enumerate(data["concepts"], start=1):
                concept = _concept(raw, origin, number)
                if concept.id in concepts:
                    raise ThesaurusError(
                        f"{origin}: concept {concept.id!r} is defined twice (also in {concepts[concept.id].origin})"
                    )
                concepts[concept.id] = concept
        for concept in concepts.values():
            for relation, targets in concept.relations.items():
                for target in targets:
                    if target not in concepts:
                        raise ThesaurusError(
                            f"{concept.origin}: concept {concept.id!r}: {relation} names unknown concept {target!r}"
                        )
                    if target == concept.id:
                        raise ThesaurusError(f"{concept.origin}: concept {concept.id!r}: {relation} names itself")
        return cls(concepts, tuple(names))

    def __len__(self) -> int:
        return len(self.concepts)

    # -- reading ---------------------------------------------------------------------------

    def acronyms(self) -> list[tuple[str, str, str]]:
        """(acronym, long form, concept id) of every preferred or alternative label written as
        an acronym; the long form is the concept's preferred label (its first non-acronym
        label when that is one)."""
        found = []
        for concept in self.concepts.values():
            labels = list(concept.all_labels())
            long_forms = [label for _, language, label in labels if not is_acronym(label)]
            if not long_forms:
                continue
            preferred = concept.pref_label()
            long_form = preferred if not is_acronym(preferred) else long_forms[0]
            # hidden labels are the users' words, not the documents': they name no acronym
            found += [
                (label, long_form, concept.id)
                for kind, _, label in labels
                if is_acronym(label) and kind != "hiddenLabel"
            ]
        return found

    def everyday_words(self, text: str, language: str = "fr") -> list[str]:
        """The hidden labels in `language` (a policyholder's words that no document writes)
        of the concepts the text names, each once, in the text's order: what the lexical
        index writes beside a passage (`rag_assets.index.lexical.indexed_fields`)."""
        words: list[str] = []
        for entry in self.recognise(text, language):
            for kind, label_language, label in self.concepts[entry["id"]].all_labels():
                if kind == "hiddenLabel" and label_language == language and label not in words:
                    words.append(label)
        return words

    def fingerprint(self) -> str:
        """A hash of every concept's labels: what an index built with this thesaurus depends on."""
        return short_id(sorted((c.id, *label) for c in self.concepts.values() for label in c.all_labels()), length=12)

    def _index(self, language: str) -> "_LabelIndex":
        cache = self.__dict__.setdefault("_indexes", {})
        if language not in cache:
            cache[language] = _LabelIndex.of(self, language)
        return cache[language]

    def recognise(self, text: str, language: str = "fr") -> list[dict]:
        """The concepts whose labels the text writes: {"id", "label", "kind"}, in the order
        of the text, leftmost-longest (a label inside a longer one found there does not count)."""
        index = self._index(language)
        sequence = analyze(text, language)
        found: list[tuple[int, dict]] = []
        position = 0
        while position < len(sequence):
            match = index.longest(sequence, position)
            if match is None:
                position += 1
                continue
            length, entries = match
            found += [(position, entry) for entry in entries]
            position += length
        for acronym, entries in index.acronyms.items():
            hit = re.search(rf"(?<![\w/&-]){re.escape(acronym)}(?![\w/&-])", text)
            if hit:
                # place it where it is written, among the analysed matches
                where = len(analyze(text[: hit.start()], language))
                found += [(where, entry) for entry in entries]
        found.sort(key=lambda item: item[0])
        seen, result = set(), []
        for _, entry in found:
            if entry["id"] not in seen:
                seen.add(entry["id"])
                result.append(entry)
        return result

    def expand(
        self,
        query: Question | str,
        relations: bool = False,
        limit: int = MAX_ADDED,
        weights: dict[str, float] | None = None,
        relation_weight: float = RELATION_WEIGHT,
    ) -> Expansion:
        """BM25 term weights for the question: its own terms at 1.0, the labels of the
        concepts it names at their kind's weight (``weights`` overrides `WEIGHTS`), their
        related concepts' preferred labels when ``relations``; at most ``limit`` terms added,
        never one of the question's own."""
        text, language = (query, detect_language(query)) if isinstance(query, str) else (query.text, query.language)
        own = analyze(text, language)
        expansion = Expansion(dict.fromkeys(own))
        weights = {**WEIGHTS, **(weights or {})}
        index = self._index(language)
        recognised = self.recognise(text, language)
        expansion.concepts = recognised
        # (-weight, kind: pref < alt < hidden < relation, concept order, label order, term)
        candidates: list[tuple[float, int, int, int, str]] = []
        for order, entry in enumerate(recognised):
            concept = self.concepts[entry["id"]]
            labels = [(weights[kind], LABEL_KINDS.index(kind), label) for kind, _, label in concept.all_labels()]
            if relations:
                labels += [
                    (relation_weight, len(LABEL_KINDS), self.concepts[target].pref_label(language))
                    for relation in RELATIONS
                    for target in concept.relations.get(relation, ())
                ]
            rank = 0
            for weight, kind, label in labels:
                for term in index.terms(label):
                    candidates.append((-weight, kind, order, rank, term))
                    rank += 1
        for negative_weight, _, _, _, term in sorted(candidates):
            if term in expansion:
                continue  # the question's own term (1.0), or already added at a higher weight
            if len(expansion.added) >= limit:
                break
            expansion[term] = expansion.added[term] = -negative_weight
            expansion.words[index.surface[term]] = -negative_weight
        return expansion


@dataclass
class _LabelIndex:
    """Labels analysed in one language: analysed term sequence -> concepts, and a written
    word for each analysed term (the lexical index analyses the words it is given)."""

    language: str
    sequences: dict[tuple[str, ...], list[dict]]
    acronyms: dict[str, list[dict]]
    surface: dict[str, str]
    longest_label: int

    @classmethod
    def of(cls, thesaurus: Thesaurus, language: str) -> "_LabelIndex":
        sequences: dict[tuple[str, ...], list[dict]] = {}
        acronyms: dict[str, list[dict]] = {}
        surface: dict[str, str] = {}
        for concept in thesaurus.concepts.values():
            for kind, _, label in concept.all_labels():
                entry = {"id": concept.id, "label": label, "kind": kind}
                for word in _WORD.findall(label):
                    terms = analyze(word, language)
                    if len(terms) == 1:
                        surface.setdefault(terms[0], word)
                target = (
                    acronyms.setdefault(label, [])
                    if is_acronym(label)
                    else sequences.setdefault(tuple(analyze(label, language)), [])
                )
                if tuple(analyze(label, language)) and all(e["id"] != concept.id for e in target):
                    target.append(entry)
        sequences.pop((), None)
        return cls(language, sequences, acronyms, surface, max(map(len, sequences), default=0))

    def longest(self, sequence: list[str], start: int) -> tuple[int, list[dict]] | None:
        for length in range(min(self.longest_label, len(sequence) - start), 0, -1):
            entries = self.sequences.get(tuple(sequence[start : start + length]))
            if entries:
                return length, entries
        return None

    def terms(self, label: str) -> list[str]:
        """The label's analysed terms that a written word gives back (to search for them)."""
        return [t for t in dict.fromkeys(analyze(label, self.language)) if t in self.surface]


def _concept(raw: object, origin: str, number: int) -> Concept:
    where = f"{origin}: concept #{number}"
    if not isinstance(raw, dict):
        raise ThesaurusError(f"{where}: expected an object, got {type(raw).__name__}")
    concept_id = raw.get("id")
    if not isinstance(concept_id, str) or not concept_id.strip():
        raise ThesaurusError(f'{where}: "id" must be a non-empty string')
    where = f"{origin}: concept {concept_id!r}"
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ThesaurusError(f"{where}: unknown keys {unknown} (allowed: {sorted(_KEYS)})")
    labels: dict[str, tuple[tuple[str, str], ...]] = {}
    for kind in LABEL_KINDS:
        value = raw.get(kind, {})
        if not isinstance(value, dict):
            raise ThesaurusError(
                f"{where}: {kind} must map a language to {'a label' if kind == 'prefLabel' else 'a list of labels'}"
            )
        pairs = []
        for language, written in value.items():
            items = [written] if kind == "prefLabel" else written
            if (
                kind == "prefLabel"
                and not isinstance(written, str)
                or kind != "prefLabel"
                and not isinstance(written, list)
            ):
                raise ThesaurusError(
                    f"{where}: {kind}[{language!r}] must be "
                    f"{'a string' if kind == 'prefLabel' else 'a list of strings'}"
                )
            for label in items:
                if not isinstance(label, str) or not label.strip():
                    raise ThesaurusError(f"{where}: {kind}[{language!r}] holds an empty or non-string label")
                if not is_acronym(label) and not analyze(label, language if language in ("fr", "en") else "fr"):
                    raise ThesaurusError(f"{where}: {kind} {label!r} has no searchable word (only stop words)")
                pairs.append((language, label.strip()))
        labels[kind] = tuple(pairs)
    if not labels["prefLabel"]:
        raise ThesaurusError(f"{where}: a prefLabel is required")
    relations = {}
    for relation in RELATIONS:
        value = raw.get(relation, [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ThesaurusError(f"{where}: {relation} must be a list of concept ids")
        relations[relation] = tuple(value)
    sources = raw.get("sources", [])
    if not isinstance(sources, list):
        raise ThesaurusError(f'{where}: sources must be a list of {{"document", "quote"}}')
    for source in sources:
        if not isinstance(source, dict) or not all(
            isinstance(source.get(k), str) and source[k].strip() for k in ("document", "quote")
        ):
            raise ThesaurusError(f'{where}: each source needs a non-empty "document" and "quote"')
    return Concept(concept_id, labels, relations, tuple(sources), origin)


@lru_cache(maxsize=8)
def _load_files(stamp: tuple[tuple[str, int, int], ...]) -> Thesaurus:
    documents = []
    for name, _, _ in stamp:
        try:
            documents.append((name, json.loads(Path(name).read_text(encoding="utf-8"))))
        except json.JSONDecodeError as error:
            raise ThesaurusError(f"{name}: not valid JSON ({error})") from error
    return Thesaurus.from_dicts(documents)


def load_thesaurus(path: str | Path | None = None) -> Thesaurus:
    """`Thesaurus.load` (cached while the files are unchanged)."""
    return Thesaurus.load(path)


def expand(
    query: Question | str, thesaurus: Thesaurus | None = None, *, relations: bool = False, limit: int = MAX_ADDED
) -> Expansion:
    """Term weights for BM25 (see `Thesaurus.expand`); the default thesaurus when none is given."""
    return (thesaurus if thesaurus is not None else load_thesaurus()).expand(query, relations=relations, limit=limit)
