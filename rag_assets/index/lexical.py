"""Tantivy lexical index of children, with French and English analyzers (`rag_assets.text.analysis`).

Analyzers are not saved with an index, so they are registered on every open. User
queries are never given to Tantivy's query parser (it raises on ordinary text such as
"c'est-à-dire" or "S/P:"): they are analyzed here and turned into term queries.
"""

from __future__ import annotations

import contextlib
import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import tantivy

from rag_assets.index.filters import SearchFilters, date_number
from rag_assets.index.rows import read_rows
from rag_assets.store import KnowledgeStore, file_lock
from rag_assets.text.analysis import analyzer
from rag_assets.text.thesaurus import load_thesaurus

TEXT_FIELDS = {"fr": "text_fr", "en": "text_en"}
# the thesaurus's everyday words of the concepts a child names (`indexed_fields`), apart from its
# own words: document frequencies, phrases and the words a passage "holds" stay the document's
EVERYDAY_FIELDS = {"fr": "everyday_fr", "en": "everyday_en"}
PHRASE_MIN_TERMS = 4
_WORDS = re.compile(r"\w+")  # the simple tokenizer's split, to keep word offsets


def _schema(everyday: bool = True) -> tantivy.Schema:
    """The index's fields; without `everyday`, those of indexes built before the everyday words."""
    builder = tantivy.SchemaBuilder()
    for name in ("child_id", "parent_id", "document_id", "version", "language", "document_type", "allowed_groups"):
        builder.add_text_field(name, stored=True, tokenizer_name="raw")
    builder.add_integer_field("effective_date", stored=True, indexed=True, fast=True)
    for language, field_name in TEXT_FIELDS.items():
        builder.add_text_field(field_name, stored=False, tokenizer_name=f"{language}_stem")
        if everyday:
            builder.add_text_field(EVERYDAY_FIELDS[language], stored=False, tokenizer_name=f"{language}_stem")
    return builder.build()


@dataclass
class LexicalDoc:
    child_id: str
    parent_id: str
    document_id: str
    language: str
    document_type: str | None
    allowed_groups: list[str]
    effective_date: str | None
    text: str


def indexed_fields(text: str, language: str) -> dict[str, str]:
    """What BM25 indexes of a child: its text, and apart the everyday words (the thesaurus's
    hidden labels) of the concepts it names, "pare-brise" for "bris des glaces". The passage
    is found in a policyholder's words without the question being expanded, which moves
    every other question's ranking too."""
    language = language if language in TEXT_FIELDS else "fr"
    words = load_thesaurus().everyday_words(text, language)
    return {TEXT_FIELDS[language]: text, **({EVERYDAY_FIELDS[language]: " ; ".join(words)} if words else {})}


def stored_entries(searcher: tantivy.Searcher) -> list[dict]:
    """The stored fields of every entry (its text is not stored)."""
    if not searcher.num_docs:
        return []
    return [
        searcher.doc(a).to_dict() for _, a in searcher.search(tantivy.Query.all_query(), limit=searcher.num_docs).hits
    ]


def children_texts(store_root: Path) -> Callable[[str], dict[tuple[str, str], str]]:
    """document_id -> {(child_id, version): the text `lexical_index` indexes}, from the store's
    children files (the index stores no text)."""
    store = KnowledgeStore(store_root)

    def texts(document_id: str) -> dict[tuple[str, str], str]:
        path = store.children_path(document_id)
        if not path.exists():
            return {}
        return {(c["child_id"], c["version"]): c["contextualized"] for c in read_rows(path)}

    return texts


def _entry(doc: LexicalDoc, version: str) -> tantivy.Document:
    language = doc.language if doc.language in TEXT_FIELDS else "fr"
    return tantivy.Document(
        child_id=doc.child_id,
        parent_id=doc.parent_id,
        document_id=doc.document_id,
        version=version,
        language=language,
        document_type=doc.document_type or "",
        allowed_groups=list(doc.allowed_groups),
        effective_date=date_number(doc.effective_date),
        **indexed_fields(doc.text, language),
    )


class LexicalIndex:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.schema = _schema()
        self._lock_path = self.directory.parent / "locks" / "tantivy.lock"
        self._analyzers = {language: analyzer(language) for language in TEXT_FIELDS}
        try:
            self.index = tantivy.Index(self.schema, path=str(self.directory), reuse=True)
        except ValueError as error:
            if "schema does not match" not in str(error):
                raise
            self._rebuild_older_index()
            self.index = tantivy.Index(self.schema, path=str(self.directory), reuse=True)
        self._register(self.index)

    def _register(self, index: tantivy.Index) -> None:
        for language, text_analyzer in self._analyzers.items():
            index.register_tokenizer(f"{language}_stem", text_analyzer)

    def _rebuild_older_index(self) -> None:
        """An index built before the everyday words (another schema) is rebuilt with the
        current fields, under the writers' lock: every entry whose child's text is in the
        store's children files, with its stored fields. An entry whose text is not there (a
        version since replaced in those files) is left out; `lexical_index`, whose code
        version moved with the schema, indexes the document again."""
        with file_lock(self._lock_path):
            try:  # another process may have rebuilt it while this one waited
                tantivy.Index(self.schema, path=str(self.directory), reuse=True)
                return
            except ValueError:
                pass
            older = tantivy.Index(_schema(everyday=False), path=str(self.directory), reuse=True)
            self._register(older)
            entries = stored_entries(older.searcher())
            rebuilt = self.directory.with_name(self.directory.name + ".rebuilt")
            shutil.rmtree(rebuilt, ignore_errors=True)
            rebuilt.mkdir()
            index = tantivy.Index(self.schema, path=str(rebuilt))
            self._register(index)
            texts_of = children_texts(self.directory.parent)
            texts: dict[str, dict[tuple[str, str], str]] = {}
            writer = index.writer(heap_size=50_000_000, num_threads=1)
            for fields in entries:
                document_id = fields["document_id"][0]
                if document_id not in texts:
                    texts[document_id] = texts_of(document_id)
                text = texts[document_id].get((fields["child_id"][0], fields["version"][0]))
                if text is not None:
                    writer.add_document(tantivy.Document(**fields, **indexed_fields(text, fields["language"][0])))
            writer.commit()
            writer.wait_merging_threads()
            replaced = self.directory.with_name(self.directory.name + ".replaced")
            shutil.rmtree(replaced, ignore_errors=True)
            self.directory.rename(replaced)
            rebuilt.rename(self.directory)
            shutil.rmtree(replaced, ignore_errors=True)

    # writing -----------------------------------------------------------------
    def stage_version(self, document_id: str, version: str, docs: Iterable[LexicalDoc], keep: set[str]) -> int:
        """Add one version of a document's entries beside the versions in `keep` (the
        published one) in one commit; entries of any other version of this document,
        and earlier entries of this same version, are deleted in that commit."""
        with self._writer() as writer:
            writer.delete_documents_by_query(self._versions_query(document_id, keep - {version}, exclude=True))
            count = 0
            for doc in docs:
                writer.add_document(_entry(doc, version))
                count += 1
        return count

    def add(self, entries: Iterable[tuple[str, LexicalDoc]]) -> None:
        """Add (version, doc) entries in one commit: bulk loads, as the benchmark's."""
        with self._writer() as writer:
            for version, doc in entries:
                writer.add_document(_entry(doc, version))

    def drop_versions_except(self, document_id: str, version: str | None) -> None:
        keep = {version} if version else set()
        with self._writer() as writer:
            writer.delete_documents_by_query(self._versions_query(document_id, keep, exclude=True))

    def delete_document(self, document_id: str) -> None:
        self.drop_versions_except(document_id, None)

    def _versions_query(self, document_id: str, versions: set[str], exclude: bool) -> tantivy.Query:
        clauses = [(tantivy.Occur.Must, tantivy.Query.term_query(self.schema, "document_id", document_id))]
        occur = tantivy.Occur.MustNot if exclude else tantivy.Occur.Must
        clauses += [(occur, tantivy.Query.term_query(self.schema, "version", v)) for v in sorted(versions)]
        return tantivy.Query.boolean_query(clauses)

    @contextlib.contextmanager
    def _writer(self):
        """One writer at a time (file lock across processes); one commit per use, so a
        reader sees the state before or after it, never between."""
        with file_lock(self._lock_path):
            writer = self.index.writer(heap_size=50_000_000, num_threads=1)
            try:
                yield writer
                writer.commit()
                writer.wait_merging_threads()
            except BaseException:
                writer.rollback()
                raise
        self.index.reload()

    # reading -----------------------------------------------------------------
    def analyze(self, text: str, language: str) -> list[str]:
        return self._analyzers[language].analyze(text)

    def _filter_clauses(self, filters: SearchFilters) -> list[tuple[tantivy.Occur, tantivy.Query]]:
        def any_of(field_name: str, values) -> tantivy.Query:
            return tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, field_name, v)) for v in values]
            )

        clauses = [(tantivy.Occur.Must, any_of("allowed_groups", filters.groups))]
        for field_name, values in (
            ("document_id", filters.document_ids),
            ("document_type", filters.document_types),
            ("language", filters.languages),
        ):
            if values:
                clauses.append((tantivy.Occur.Must, any_of(field_name, values)))
        if filters.effective_from or filters.effective_to:
            lower = date_number(filters.effective_from) if filters.effective_from else 0
            upper = date_number(filters.effective_to) if filters.effective_to else 99991231
            clauses.append(
                (
                    tantivy.Occur.Must,
                    tantivy.Query.range_query(self.schema, "effective_date", tantivy.FieldType.Integer, lower, upper),
                )
            )
        return clauses

    def build_query(
        self,
        text: str,
        filters: SearchFilters,
        weights: dict[str, float] | None = None,
        language: str | None = None,
        everyday: bool = True,
    ) -> tantivy.Query | None:
        """OR of the analyzed query terms in each language field (and, with `everyday`, its
        everyday-word field), AND the filters.

        `weights` maps raw query words (before analysis) to a boost, for query expansion.
        `language` is the query's: its stop words are dropped from every field, or a French
        question's "de", "en", "du" become rare, heavy terms of the English field and rank
        first whatever English page quotes French names (a list of company legal forms).
        """
        weights = weights or {}
        should: list[tuple[tantivy.Occur, tantivy.Query]] = []
        words = [(w, weights.get(w, 1.0)) for w in text.split()]
        words += [(w, b) for w, b in weights.items() if w not in text.split()]
        if language in self._analyzers:
            words = [(" ".join(w for w in _WORDS.findall(word) if self.analyze(w, language)), b) for word, b in words]
        for field_language, field_name in TEXT_FIELDS.items():
            if filters.languages and field_language not in filters.languages:
                continue
            names = (field_name, EVERYDAY_FIELDS[field_language]) if everyday else (field_name,)
            for word, boost in words:
                for token in self.analyze(word, field_language):
                    for name in names:
                        query = tantivy.Query.term_query(self.schema, name, token)
                        should.append(
                            (tantivy.Occur.Should, tantivy.Query.boost_query(query, boost) if boost != 1.0 else query)
                        )
        if not should:
            return None
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, tantivy.Query.boolean_query(should)), *self._filter_clauses(filters)]
        )

    def phrase_query(
        self, text: str, filters: SearchFilters, min_terms: int = PHRASE_MIN_TERMS
    ) -> tantivy.Query | None:
        """The query's words in order (stop words keep their place), in any language field;
        None for short queries, where a phrase says little more than its terms."""
        words = _WORDS.findall(text)
        phrases = []
        for language, field_name in TEXT_FIELDS.items():
            if filters.languages and language not in filters.languages:
                continue
            terms = [
                (offset, tokens[0]) for offset, word in enumerate(words) if (tokens := self.analyze(word, language))
            ]
            if len(terms) >= min_terms:
                phrases.append(
                    (
                        tantivy.Occur.Should,
                        tantivy.Query.phrase_query(self.schema, field_name, terms)
                        if len(terms) > 1
                        else tantivy.Query.term_query(self.schema, field_name, terms[0][1]),
                    )
                )
        if not phrases:
            return None
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, tantivy.Query.boolean_query(phrases)), *self._filter_clauses(filters)]
        )

    def holds(self, text: str, filters: SearchFilters) -> bool:
        """Some child of the filtered documents writes ``text`` (its words in order, one word too)."""
        query = self.phrase_query(text, filters, min_terms=1)
        return query is not None and self.index.searcher().search(query, limit=1, count=True).count > 0

    def search(
        self,
        text: str,
        filters: SearchFilters,
        limit: int = 20,
        weights=None,
        phrase: bool = False,
        language: str | None = None,
        everyday: bool = True,
    ) -> list[dict]:
        """BM25 over the analyzed terms, the everyday words too unless `everyday` is off;
        with `phrase`, only children holding the exact phrase."""
        query = (
            self.phrase_query(text, filters)
            if phrase
            else self.build_query(text, filters, weights, language, everyday=everyday)
        )
        if query is None:
            return []
        searcher = self.index.searcher()
        hits = []
        for rank, (score, address) in enumerate(searcher.search(query, limit=limit).hits, start=1):
            doc = searcher.doc(address)
            hits.append(
                {
                    "child_id": doc["child_id"][0],
                    "parent_id": doc["parent_id"][0],
                    "document_id": doc["document_id"][0],
                    "version": doc["version"][0],
                    "score": float(score),
                    "rank": rank,
                }
            )
        return hits

    def doc_freq(self, term: str, language: str = "fr") -> int:
        """Children holding an analysed term."""
        try:
            return int(self.index.searcher().doc_freq(TEXT_FIELDS.get(language, "text_fr"), term))
        except Exception:  # an empty index
            return 0

    def idf(self, term: str, language: str = "fr") -> float:
        """log(1 + N / (df + 0.5)) of an analysed term over the children (a term the
        index never saw weighs the most)."""
        n = max(1, int(self.index.searcher().num_docs))
        return math.log(1.0 + n / (self.doc_freq(term, language) + 0.5))

    def versions(self) -> dict[str, set[str]]:
        """document_id -> version stamps present (one, when consistent)."""
        searcher = self.index.searcher()
        result: dict[str, set[str]] = {}
        if searcher.num_docs == 0:
            return result
        hits = searcher.search(tantivy.Query.all_query(), limit=searcher.num_docs).hits
        for _, address in hits:
            doc = searcher.doc(address)
            result.setdefault(doc["document_id"][0], set()).add(doc["version"][0])
        return result

    def holding(self, terms: list[str], document_id: str, version: str, language: str = "fr") -> int:
        """Children of a document's version holding one of the analysed `terms`."""
        field_name = TEXT_FIELDS.get(language, "text_fr")
        query = tantivy.Query.boolean_query(
            [
                (
                    tantivy.Occur.Must,
                    tantivy.Query.boolean_query(
                        [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, field_name, t)) for t in terms]
                    ),
                ),
                (tantivy.Occur.Must, self._versions_query(document_id, {version}, exclude=False)),
            ]
        )
        return self.index.searcher().search(query, limit=1, count=True).count

    def count(self, document_id: str, version: str | None = None) -> int:
        query = tantivy.Query.term_query(self.schema, "document_id", document_id)
        if version:
            query = self._versions_query(document_id, {version}, exclude=False)
        return self.index.searcher().search(query, limit=1, count=True).count
