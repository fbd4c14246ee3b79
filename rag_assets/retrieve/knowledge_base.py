"""The read side of a knowledge store built by the pipeline: search it, look its parts up.

Reads only materialized assets (no Dagster run needed). Answering reads this and sits above
it: `rag_assets.client.KnowledgeBase` adds `ask`.

    from rag_assets.retrieve.knowledge_base import KnowledgeBase
    kb = KnowledgeBase.open("data/knowledge")
    for hit in kb.search("franchise inondation zone A", k=3):
        print(hit.rrf_score, hit.heading_path, hit.pages)
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Self

from rag_assets.embedding import QueryVectorCache, get_embedder
from rag_assets.errors import StoreMismatchError
from rag_assets.index.dense import DenseIndex
from rag_assets.index.filters import SearchFilters
from rag_assets.index.lexical import LexicalIndex
from rag_assets.index.publication import pointer, read_publication
from rag_assets.index.records import PUBLIC_GROUP, document_identity, document_title, load_source_record
from rag_assets.recent import Recent
from rag_assets.retrieve.branches import branches_of_text, document_branches, held_lines
from rag_assets.retrieve.corpus import PublishedCorpus, document_acronyms
from rag_assets.retrieve.definitions import defined_term, glossary_text, writes_term
from rag_assets.retrieve.feedback import Feedback
from rag_assets.retrieve.fusion import PLAIN_RRF, Fusion, children_to_parents
from rag_assets.retrieve.limits import checked_question
from rag_assets.retrieve.query import AnalyzedQuery, analyze
from rag_assets.retrieve.reranking import reranker_from_spec
from rag_assets.retrieve.scope import DocumentIdentities, Scope, identity_text, take_turns
from rag_assets.settings import Settings, load_settings
from rag_assets.store import KnowledgeStore
from rag_assets.text.acronyms import AcronymDictionary, DocumentAcronyms, extract, thesaurus_fingerprint
from rag_assets.text.thesaurus import load_thesaurus


@dataclass(frozen=True)
class ChildHit:
    """One child an engine found (published version only)."""

    child_id: str
    parent_id: str
    document_id: str
    version: str
    score: float


@dataclass(frozen=True)
class FusedParent:
    parent_id: str
    score: float  # fused score (kb.fusion); phrase-holding parents lead whatever it says
    ranks: dict[str, int]  # engine -> rank of the parent in that engine's parent ranking


@dataclass
class RetrievalTrace:
    """Everything one retrieval did: what each engine found, how it was fused. `search`,
    answering and evaluation all read this (one retrieval path)."""

    query: AnalyzedQuery
    filters: SearchFilters
    scope: Scope  # the documents the question names (applied as a filter), and unknown names
    children: dict[str, list[ChildHit]]  # engine -> child hits, best first
    parents: dict[str, list[ChildHit]]  # engine -> parents ranked by their best child
    phrase: list[str]  # parents holding the question's quoted clause (≥4 terms in order)
    fused: list[FusedParent]
    excluded: list[dict] = field(default_factory=list)  # hits of an unpublished version, skipped
    seconds: dict[str, float] = field(default_factory=dict)
    expansions: dict = field(default_factory=dict)  # thesaurus: {"concepts": [...], "added": {term: weight}}
    acronyms: dict[str, str] = field(default_factory=dict)  # acronym -> long form added to the question
    feedback: dict[str, float] = field(default_factory=dict)  # PRF words added to the second BM25 pass
    glossary: list[str] = field(default_factory=list)  # definitions-section parents writing the asked term
    documents: dict[str, str] = field(default_factory=dict)  # parent id -> document id, of every hit

    def ranking(self, engine: str) -> list[str]:
        """Parent ids best first: "bm25", "dense" or "hybrid" (the fused list)."""
        if engine == "hybrid":
            return [f.parent_id for f in self.fused]
        return [h.parent_id for h in self.parents.get(engine, [])]


@dataclass
class ParentHit:
    parent_id: str
    document_id: str
    document_title: str
    heading_path: list[str]
    pages: list[int]
    text: str
    rrf_score: float
    ranks: dict[str, int]
    version: str
    best_child: dict[str, dict] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


NO_DOCUMENT = "(no document)"  # an id filters name when nothing matches: ids end with a hash, never so
# A term in more than this share of the children is a common word, not a name.
COMMON_SHARE = 0.02
GLOSSARY_LEAD = 2  # definitions of the asked term leading the ranking (a comparison's two policies)
GLOSSARY_DOCUMENTS_FROM = 5  # the documents of the first parents, whose definitions may lead
# Retrievals kept for a repeated question (a trace holds ~2 x candidates hits: ~100 kB each).
CACHED_RETRIEVALS = 64
# one thread a process embeds questions beside the retrieval (every embedder runs one call at a time)
_QUERY_EMBEDDING = ThreadPoolExecutor(1, thread_name_prefix="query-embedding")


class KnowledgeBase:
    def __init__(
        self,
        store: KnowledgeStore,
        embedder_spec: str,
        candidates: int = Settings.candidates_per_engine,
        fusion: Fusion | str = PLAIN_RRF,
        reranker: str | None = None,
        use_scope: bool = True,
        use_thesaurus: bool = True,
        use_acronyms: bool = True,
        use_prf: bool = False,
        use_definitions: bool = True,
        use_everyday: bool = True,
    ):
        self.store = store
        # callable(question, hits) -> scores in [0, 1], used by answering; None when not configured
        self.rerank = reranker_from_spec(reranker)
        self.embedder_spec = embedder_spec
        self.candidates = candidates
        self.fusion = Fusion.parse(fusion) if isinstance(fusion, str) else fusion
        self.use_scope = use_scope  # limit retrieval to the documents the question names
        # thesaurus terms for BM25, acronyms resolved before both engines
        self.use_thesaurus, self.use_acronyms = use_thesaurus, use_acronyms
        self.feedback = Feedback() if use_prf else None  # RM3-style second BM25 pass
        self.use_definitions = use_definitions  # a definition question's glossary entry leads
        self.use_everyday = use_everyday  # BM25 also reads the thesaurus's everyday words of each child
        self.acronyms = AcronymDictionary()  # merged from the published documents' summaries by `_refresh`
        self._acronym_summaries: dict[str, tuple[str, DocumentAcronyms]] = {}  # document id -> (version, acronyms)
        # document id -> the analysed terms naming it (title, file name, `identities`, synonyms) for scopes
        self._identity_terms = DocumentIdentities()
        self.dense = DenseIndex.of(store)
        self.lexical = LexicalIndex(store.tantivy_dir)
        self.published: dict[str, dict] = {}
        self.corpus = PublishedCorpus(store)  # parents and children, read by id when asked
        self.query_vectors = QueryVectorCache()  # a repeated question is not embedded again
        # a repeated question (same filters, groups, published versions) is not retrieved again
        self.retrievals: Recent[RetrievalTrace] = Recent(CACHED_RETRIEVALS)
        self.query_limits = load_settings()  # RAG_ASSETS_MAX_QUERY_*, read once, not at every question
        self.documents: dict[str, dict] = {}
        self.identities: dict[str, dict] = {}  # document id -> what names it (parsing/identity.py)
        # Hits skipped by the last search because their version is not the published one.
        self.last_excluded: list[dict] = []
        self._stamp: Hashable | None = None
        self._versions: tuple[tuple[str, str], ...] = ()  # (document id, published version), sorted
        self._branches: dict[tuple[str, str], frozenset[str]] = {}  # (document id, version) -> branches
        self._lock = threading.Lock()
        self._refresh(check=True)

    @classmethod
    def open(cls, path: str | Path | None = None, embedder: str | None = None) -> Self:
        settings = load_settings()
        root = Path(path) if path is not None else settings.store
        if not root.exists():
            raise FileNotFoundError(f"no knowledge store at {root}: run `rag-assets ingest PATH…` first")
        return cls.from_settings(settings.model_copy(update={"store": root}), embedder)

    @classmethod
    def from_settings(cls, settings, embedder: str | None = None, **overrides) -> Self:
        """The store and retrieval defaults of ``settings``; ``overrides``: constructor arguments."""
        options = dict(
            candidates=settings.candidates_per_engine,
            fusion=settings.fusion,
            reranker=settings.reranker,
            use_scope=settings.use_scope,
            use_thesaurus=settings.use_thesaurus,
            use_acronyms=settings.use_acronyms,
            use_prf=settings.use_prf,
            use_definitions=settings.use_definitions,
            use_everyday=settings.use_everyday,
        )
        return cls(KnowledgeStore.of(settings), embedder or settings.embedder, **{**options, **overrides})

    def retrieval_config(self) -> dict:
        """What shapes a ranking, for evaluation records."""
        return {
            "fusion": self.fusion.spec(),
            "candidates_per_engine": self.candidates,
            "scope": self.use_scope,
            "thesaurus": self.use_thesaurus,
            "acronyms": self.use_acronyms,
            "prf": self.feedback is not None,
            "definitions": self.use_definitions,
            "everyday": self.use_everyday,
        }

    def _refresh(self, check: bool = False) -> None:
        """(Re)load the published version of each document when publication changed."""
        stamp = pointer(self.store).stamp()
        if stamp == self._stamp:
            return
        publication = read_publication(self.store)
        documents, identities = {}, {}
        for document_id, entry in publication.items():
            if (self.published.get(document_id) or {}).get("version") == entry["version"]:
                documents[document_id] = self.documents[document_id]
                identities[document_id] = self.identities[document_id]
                continue
            record = load_source_record(self.store, document_id)
            folder = self.store.root / entry["path"]  # what the published version read
            documents[document_id] = {**record.to_dict(), "title": document_title(self.store, record, folder)}
            identities[document_id] = document_identity(self.store, record, folder)
        if check:
            self._check(publication)
        self.corpus.update(publication, {d: record["title"] for d, record in documents.items()})
        self.published, self.documents, self.identities = publication, documents, identities
        self._versions = tuple(sorted((document_id, entry["version"]) for document_id, entry in publication.items()))
        self._identity_terms = DocumentIdentities.of(
            {d: {**record, "identity": identities[d]} for d, record in documents.items()}, load_thesaurus()
        )
        if self.use_acronyms:  # the corpus's "Long Form (ACR)" pairs + the thesaurus's acronyms
            thesaurus = load_thesaurus()
            fingerprint = thesaurus_fingerprint(thesaurus)
            summaries = {}
            for document_id, entry in publication.items():
                kept = self._acronym_summaries.get(document_id)
                summaries[document_id] = (
                    kept
                    if kept and kept[0] == entry["version"]
                    else (entry["version"], document_acronyms(self.store, entry, thesaurus, fingerprint))
                )
            self._acronym_summaries = summaries
            self.acronyms = AcronymDictionary.merge((summary for _, summary in summaries.values()), thesaurus)
        self._stamp = stamp

    def _check(self, publication: dict[str, dict]) -> None:
        problems = []
        dense = self.dense.counts()  # one scan, not a query per document
        for document_id, entry in publication.items():
            version = entry["version"]
            counts = {
                "dense": dense.get((document_id, version), 0),
                "lexical": self.lexical.count(document_id, version),
            }
            if set(counts.values()) != {entry["children"]}:
                problems.append(
                    f"{document_id}: published version {version} has {entry['children']} children "
                    f"but the indexes hold {counts}"
                )
        if problems:
            raise StoreMismatchError(
                f"knowledge store {self.store.root} is inconsistent; re-materialize the listed documents:\n  "
                + "\n  ".join(problems)
            )

    def _published_only(self, hits: list[dict], engine: str, excluded: list[dict]) -> list[ChildHit]:
        kept = []
        for hit in hits:
            entry = self.published.get(hit["document_id"])
            if entry is None or entry["version"] != hit["version"]:
                excluded.append({**hit, "engine": engine, "published_version": entry["version"] if entry else None})
            else:
                self.corpus.note(hit["document_id"], hit["parent_id"], hit["child_id"])
                kept.append(
                    ChildHit(hit["child_id"], hit["parent_id"], hit["document_id"], hit["version"], float(hit["score"]))
                )
        return kept

    # -- look-ups: what readers may know of the store -----------------------------------

    def parent(self, parent_id: str) -> dict:
        """A published parent: ids, heading path, text, blocks, pages, document title."""
        parent = self.corpus.parent(parent_id)
        if parent is None:
            raise KeyError(parent_id)
        return parent

    def _parents(self, documents: dict[str, str | None]) -> dict[str, dict]:
        """Published parents by id (parent id -> its document id, when known), in that
        order, read together; `KeyError` for one not published."""
        found = self.corpus.parents(documents.items())
        missing = [parent_id for parent_id in documents if parent_id not in found]
        if missing:
            raise KeyError(missing[0])
        return {parent_id: found[parent_id] for parent_id in documents}

    def has_parent(self, parent_id: str) -> bool:
        return self.corpus.parent(parent_id) is not None

    def parents_of(self, document_id: str) -> list[dict]:
        """A published document's parents, in reading order."""
        return self.corpus.parents_of(document_id)

    def iter_parents(self):
        """Every published parent, document by document."""
        return self.corpus.iter_parents()

    def child(self, child_id: str) -> dict | None:
        """A published child (its text, not its contextualized form)."""
        return self.corpus.child(child_id)

    def child_count(self) -> int:
        """Children of the published versions."""
        return sum(entry["children"] for entry in self.published.values())

    def document(self, document_id: str) -> dict:
        """A published document's record (file, title, language, type, dates, groups, sha256)."""
        return self.documents.get(document_id, {})

    def identity(self, document_id: str) -> dict:
        """What names a published document, as read from it (title, insurer, distributor,
        product, branch, document_type, edition; parsing/identity.py); {} when it was not read."""
        return self.identities.get(document_id, {})

    def document_ids(self) -> list[str]:
        return sorted(self.documents)

    def published_versions(self) -> dict[str, dict]:
        """document id -> its publication entry (version, counts, path)."""
        return dict(self.published)

    def branches(self, document_id: str) -> frozenset[str]:
        """The lines of insurance a published document covers (`retrieve/branches.py`),
        counted once per published version."""
        entry = self.published.get(document_id)
        if entry is None:
            return frozenset()
        key = (document_id, entry["version"])
        if key not in self._branches:
            record = self.document(document_id)
            language = record.get("language") or "fr"
            # what names it, and the line it names ("Protection santé animale": animaux)
            read = self.identity(document_id)
            identity = f"{identity_text({**record, 'identity': read})} {read.get('branch') or ''}"
            headings = "\n".join(dict.fromkeys(h for path in self.corpus.heading_paths(document_id) for h in path))
            self._branches[key] = document_branches(
                lambda terms: self.lexical.holding(terms, document_id, entry["version"], language),
                entry["children"],
                identity,
                headings,
                language,
            )
        return self._branches[key]

    def idf(self, term: str, language: str = "fr") -> float:
        """IDF of an analysed term over the children of the lexical index."""
        return self.lexical.idf(term, language)

    # -- retrieval ------------------------------------------------------------------------

    def scope(self, question: str | AnalyzedQuery) -> Scope:
        """The documents ``question`` names, and the names in it no document contains."""
        query = question if isinstance(question, AnalyzedQuery) else AnalyzedQuery.of(question)
        if not self.use_scope:
            return Scope()
        with self._lock:
            self._refresh()
            scope = self._identity_terms.scope(
                query,
                lambda t: self.lexical.doc_freq(t, query.language) > 0,
                lambda t: self.lexical.doc_freq(t, query.language) > COMMON_SHARE * max(1, self.child_count()),
            )
            absent = self._defined_but_absent(query, scope)
            if absent:
                scope = dataclasses.replace(
                    scope, unknown_names=scope.unknown_names + absent, unheld=scope.unheld + absent
                )
            return self._of_asked_lines(query, scope)

    def _of_asked_lines(self, query: AnalyzedQuery, scope: Scope) -> Scope:
        """A contract the reader says they hold ("mon assurance auto") of a line none of the named
        documents covers is not among them (`unheld`). Of the named insurer's documents, those
        covering the lines of insurance the question speaks of ("ma mutuelle Allianz": its health
        policy, not its car or loan policies), when some do; a comparison keeps its sides."""
        held = held_lines(query.text, query.language)
        if scope.document_ids and held and not any(self.branches(d) & held for d in scope.document_ids):
            # "mon assurance auto Groupama" when Groupama's documents are its pet policy: the
            # reader's contract is not among them, whatever words they share
            return dataclasses.replace(scope, unheld=scope.unheld + tuple(sorted(held)))
        if len(scope.document_ids) < 2 or scope.groups:
            return scope
        asked = branches_of_text(query.text, query.language)
        covering = tuple(d for d in scope.document_ids if self.branches(d) & asked)
        if not covering or len(covering) == len(scope.document_ids):
            return scope
        return dataclasses.replace(scope, document_ids=covering)

    def _defined_but_absent(self, query: AnalyzedQuery, scope: Scope) -> tuple[str, ...]:
        """Acronyms the question spells out ("assuré en PNO (propriétaire non occupant) chez Mila")
        that the documents in scope write neither way, nor are named by: the reader describes a
        contract they do not hold (Mila's is a tenant's policy)."""
        defined = extract(query.text)
        if not defined:
            return ()
        ids = scope.document_ids or tuple(self.document_ids())
        # scopes are chosen over every published document; so is this check
        groups = tuple(sorted({g for d in ids for g in self.document(d).get("allowed_groups") or [PUBLIC_GROUP]}))
        filters = SearchFilters(document_ids=ids, groups=groups)
        return tuple(
            acronym
            for acronym, long_form in defined.items()
            if not any(
                set(analyze(acronym, query.language)) <= self._identity_terms.terms.get(d, frozenset()) for d in ids
            )
            and not any(self.lexical.holds(text, filters) for text in (acronym, long_form))
        )

    def retrieve(
        self,
        question: str | AnalyzedQuery,
        filters: dict | SearchFilters | None = None,
        groups=None,
        candidates: int | None = None,
        term_weights: dict[str, float] | None = None,
    ) -> RetrievalTrace:
        """BM25 and dense over children (``candidates`` each), collapsed to parents (best
        child per engine), fused by ``self.fusion`` (weighted RRF or normalized scores); parents holding a
        quoted clause of the question lead. Only hits of each document's published version
        count; others (a re-index in flight) are skipped and listed in the trace.

        A question asked again with the same filters, groups and options while the same
        versions are published gets the trace kept in `self.retrievals` (shared: read it,
        do not change it), its `seconds` those of the look-up."""
        begun = time.perf_counter()
        question = checked_question(question, self.query_limits)  # length, terms, empty, cleaned (QueryRefused)
        query = question if isinstance(question, AnalyzedQuery) else AnalyzedQuery.of(question)
        parsed = filters if isinstance(filters, SearchFilters) else SearchFilters.from_dict(filters, groups)
        limit = candidates or self.candidates
        with self._lock:
            self._refresh()
            parsed = self._of_identity(parsed)
            # what the retrieval is kept under: scope and thesaurus follow from it and the versions
            asked_filters, asked_weights = parsed, term_weights
            kept = self.retrievals.get(self._retrieval_key(query, parsed, limit, term_weights))
        if kept is not None:
            self.last_excluded = kept.excluded
            return dataclasses.replace(
                kept, seconds={**dict.fromkeys(kept.seconds, 0.0), "cache": time.perf_counter() - begun}
            )
        # acronyms resolved for both engines; thesaurus terms weighted for BM25
        text, acronyms = self.acronyms.resolve_traced(query.text) if self.use_acronyms else (query.text, {})
        seconds: dict[str, float] = {}
        # the question is embedded (the model loaded, on a first question) while the scope and
        # BM25 are worked out here: onnxruntime leaves the interpreter to this thread meanwhile
        embedding = _QUERY_EMBEDDING.submit(self._embed, text, seconds)
        scope = self.scope(query)
        sides: list[SearchFilters] = []
        if scope.document_ids and not parsed.document_ids:
            parsed = dataclasses.replace(parsed, document_ids=scope.document_ids)
            # a comparison: each side gets its own candidates, or the longer document crowds
            # the other out before the sides can take turns
            sides = [dataclasses.replace(parsed, document_ids=side) for side in scope.groups]
        expansion = load_thesaurus().expand(AnalyzedQuery.of(text, query.language)) if self.use_thesaurus else None
        term_weights = {**expansion.words, **(term_weights or {})} if expansion else term_weights
        excluded: list[dict] = []
        with self._lock:
            self._refresh()
            # the versions searched; the filters and weights asked, not those scope and thesaurus
            # made of them, or a question they change would never be found again
            key = self._retrieval_key(query, asked_filters, limit, asked_weights)
            # over-fetch: hits of an unpublished version are dropped after retrieval
            started = time.perf_counter()
            lexical = self._each_side(
                sides or [parsed],
                lambda f: self._published_only(
                    self.lexical.search(
                        text,
                        f,
                        limit=2 * limit,
                        weights=term_weights,
                        language=query.language,
                        everyday=self.use_everyday,
                    ),
                    "bm25",
                    excluded,
                )[:limit],
            )
            feedback = self._feedback(text, lexical, query.language) if self.feedback else {}
            if feedback:
                lexical = self._each_side(
                    sides or [parsed],
                    lambda f: self._published_only(
                        self.lexical.search(
                            text,
                            f,
                            limit=2 * limit,
                            weights={**feedback, **(term_weights or {})},
                            language=query.language,
                            everyday=self.use_everyday,
                        ),
                        "bm25",
                        excluded,
                    )[:limit],
                )
            seconds["bm25"] = time.perf_counter() - started
            vector = embedding.result()
            started = time.perf_counter()
            dense = self._each_side(
                sides or [parsed],
                lambda f: self._published_only(self.dense.search(vector, f, limit=2 * limit), "dense", excluded)[
                    :limit
                ],
            )
            seconds["dense"] = time.perf_counter() - started
            phrase = self._published_only(
                self.lexical.search(query.text, parsed, limit=limit, phrase=True), "phrase", excluded
            )
            term = defined_term(query.text) if self.use_definitions else None
            defining = (
                self._published_only(
                    self.lexical.search(term, parsed, limit=limit, language=query.language, everyday=self.use_everyday),
                    "definition",
                    excluded,
                )
                if term
                else []
            )
        started = time.perf_counter()
        children = {"bm25": lexical, "dense": dense}
        documents = {h.parent_id: h.document_id for hits in (lexical, dense, phrase, defining) for h in hits}
        parents = {engine: children_to_parents(hits) for engine, hits in children.items()}
        fused = [
            FusedParent(p, score, ranks)
            for p, score, ranks in self.fusion.fuse(
                {e: [(h.parent_id, h.score) for h in ranking] for e, ranking in parents.items()}
            )
        ]
        if sides:  # a comparison: both sides in the first places
            fused = take_turns(fused, scope.groups, lambda f: documents[f.parent_id])
        # A quoted clause (≥4 terms in order) is what the reader is looking for: the
        # parents holding it verbatim come first, whatever the fusion says.
        quoting = list(dict.fromkeys(h.parent_id for h in phrase))
        if quoting:
            by_id = {f.parent_id: f for f in fused}
            lead = [
                FusedParent(
                    p, by_id[p].score if p in by_id else 0.0, {**(by_id[p].ranks if p in by_id else {}), "phrase": rank}
                )
                for rank, p in enumerate(quoting, start=1)
            ]
            fused = lead + [f for f in fused if f.parent_id not in quoting]
        # only the definitions of documents the ranking already puts first: in a wide search,
        # another policy's glossary defines the same word for another contract
        leading = {documents[f.parent_id] for f in fused[:GLOSSARY_DOCUMENTS_FROM]}
        glossary = self._glossary_entries([h for h in defining if h.document_id in leading], term, query.language)
        if glossary:  # a definition question: the policy's definition of the term first
            by_id = {f.parent_id: f for f in fused}
            fused = [
                FusedParent(
                    p,
                    by_id[p].score if p in by_id else 0.0,
                    {**(by_id[p].ranks if p in by_id else {}), "definition": rank},
                )
                for rank, p in enumerate(glossary, start=1)
            ] + [f for f in fused if f.parent_id not in glossary]
        seconds["fusion"] = time.perf_counter() - started
        self.last_excluded = excluded
        trace = RetrievalTrace(
            query,
            parsed,
            scope,
            children,
            parents,
            quoting,
            fused,
            excluded,
            seconds,
            expansion.trace() if expansion else {},
            acronyms,
            feedback,
            glossary,
            documents,
        )
        self.retrievals.put(key, trace)
        return trace

    def _embed(self, text: str, seconds: dict[str, float]):
        started = time.perf_counter()
        vector = self.query_vectors.embed_query(get_embedder(self.embedder_spec), text)
        seconds["query_embedding"] = time.perf_counter() - started
        return vector

    def _of_identity(self, filters: SearchFilters) -> SearchFilters:
        """Filters by insurer or branch as the documents whose identity matches (an insurer
        filter "Allianz" holds "Allianz Vie" and "Allianz IARD"); none matching, none searched."""
        if not (filters.insurers or filters.branches):
            return filters

        def folded(text) -> str:
            return " ".join(analyze(str(text or ""), "fr"))

        def matches(document_id: str) -> bool:
            identity = self.identities.get(document_id) or {}
            names = [folded(identity.get(key)) for key in ("insurer", "distributor")]
            insurer = not filters.insurers or any(
                f" {folded(wanted)} " in f" {name} " for wanted in filters.insurers for name in names if name
            )
            branch = not filters.branches or folded(identity.get("branch")) in {folded(b) for b in filters.branches}
            return insurer and branch

        chosen = [d for d in (filters.document_ids or self.documents) if d in self.documents and matches(d)]
        # an id no document has: the engines read an empty tuple as "every document"
        return dataclasses.replace(filters, document_ids=tuple(chosen) or (NO_DOCUMENT,))

    def _retrieval_key(
        self, query: AnalyzedQuery, filters: SearchFilters, limit: int, term_weights: dict[str, float] | None
    ) -> Hashable:
        """What a retrieval's result depends on (the caller holds `self._lock`)."""
        options = tuple(sorted(self.retrieval_config().items()))
        weights = tuple(sorted((term_weights or {}).items()))
        return (query.text, query.language, filters, limit, weights, options, self._versions)

    def _glossary_entries(self, hits: list[ChildHit], term: str | None, language: str) -> list[str]:
        """Parents of a definitions section that write the term: each document's best one."""
        found: dict[str, str] = {}
        parents = self._parents({h.parent_id: h.document_id for h in hits})
        for parent_id, parent in parents.items():
            if parent["document_id"] not in found and writes_term(glossary_text(parent), term, language):
                found[parent["document_id"]] = parent_id
        return list(found.values())[:GLOSSARY_LEAD]

    @staticmethod
    def _each_side(sides: list[SearchFilters], search) -> list[ChildHit]:
        """One engine's hits over each side's filter, best first (one side: its hits as they are)."""
        if len(sides) == 1:
            return search(sides[0])
        return sorted((hit for side in sides for hit in search(side)), key=lambda hit: -hit.score)

    def _feedback(self, text: str, first: list[ChildHit], language: str) -> dict[str, float]:
        read = self.corpus.children((h.child_id, h.document_id) for h in first[: self.feedback.documents])
        top = [(h, read[h.child_id]) for h in first[: self.feedback.documents] if h.child_id in read]
        return self.feedback.expand(text, [child["text"] for _, child in top], [h.score for h, _ in top], language)

    def search(
        self,
        question: str | AnalyzedQuery,
        k: int = 5,
        filters: dict | None = None,
        groups=None,
        candidates: int | None = None,
        term_weights: dict[str, float] | None = None,
    ) -> list[ParentHit]:
        """Hybrid search: the first ``k`` parents of `retrieve`, with their text and the
        best child each engine found in them."""
        return self.hits(self.retrieve(question, filters, groups, candidates, term_weights), k)

    def hits(self, trace: RetrievalTrace, k: int = 5) -> list[ParentHit]:
        """The first ``k`` parents of a retrieval, with their text and best child per engine."""
        best = {engine: {h.parent_id: h for h in ranking} for engine, ranking in trace.parents.items()}
        shown = trace.fused[:k]
        # one read of each document file the shown parents and their best children are in
        parents = self._parents({f.parent_id: trace.documents.get(f.parent_id) for f in shown})
        children = self.corpus.children(
            (hits[f.parent_id].child_id, hits[f.parent_id].document_id)
            for f in shown
            for hits in best.values()
            if f.parent_id in hits
        )
        results = []
        for fused in shown:
            parent = parents[fused.parent_id]
            best_child = {}
            for engine, hits in best.items():
                if fused.parent_id in hits:
                    hit = hits[fused.parent_id]
                    best_child[engine] = {
                        "child_id": hit.child_id,
                        "score": hit.score,
                        "text": (children.get(hit.child_id) or {}).get("text", ""),
                    }
            results.append(
                ParentHit(
                    parent_id=fused.parent_id,
                    document_id=parent["document_id"],
                    document_title=parent["document_title"],
                    heading_path=list(parent["heading_path"]),
                    pages=list(parent["pages"]),
                    text=parent["text"],
                    rrf_score=fused.score,
                    ranks=fused.ranks,
                    version=self.published[parent["document_id"]]["version"],
                    best_child=best_child,
                )
            )
        return results
