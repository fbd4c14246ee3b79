"""Retrieval per sub-question: the hybrid search (and the reranker when one is
configured), a relevance score with an absolute meaning, one reformulation when the
best score is under the threshold, then "no source found".

RRF scores only rank; they say nothing about whether anything relevant was found. The
relevance of a parent is the IDF-weighted share of the question's terms present in it
(title, headings and text, analysed like the lexical index): a question about the
capital of Australia covers none of "australie", which the corpus never saw and which
therefore weighs the most. The terms that chose the documents searched (the scope: "APICIL",
"TNS", "IPID", often only in a file name) count as present in their parents: they were
found, in the document's identity. With a reranker (`kb.rerank(question, hits)` returning
scores in [0, 1], or `options.reranker`), its score is the relevance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rag_assets.answering.model import FOUND, NO_SOURCE, SubQuestion
from rag_assets.answering.citations import document_relations
from rag_assets.answering.figures import figures, wanted_kinds
from rag_assets.answering.terms import TermWeights
from rag_assets.language import detect_language as language_of
from rag_assets.retrieve.query import analyze, content_terms
from rag_assets.index.records import PUBLIC_GROUP
from rag_assets.index.filters import reader_groups
from rag_assets.retrieve.limits import QueryRefused


@dataclass
class RetrievalOptions:
    # minimum relevance of the best parent: golden-insurance dev, the midpoint between the
    # highest out-of-corpus question refused by it alone (0.44, "fonds euros … Allianz Vie")
    # and the lowest answerable one above it (0.50, "Je prête mon voilier…")
    threshold: float = 0.47
    # either way, the parent both engines agree on best must have a passage (child) covering
    # at least this share of the question: out-of-corpus questions on a named insurer
    # ("mon chien chez MAIF", "en PNO chez Mila") cover a section by its scope words only
    # (golden-insurance dev: 0.05 out of corpus, 0.10 the lowest answerable)
    min_child_coverage: float = 0.08
    # ... or, for long questions whose circumstances no section holds: a parent both engines
    # rank in their top `agreement_rank`, covering at least `agreement_threshold`, and no
    # name in the question that no document contains ("chez Groupama"); rank 4 since "chez AXA"
    # is such a name (dev: 2 answerable of 50 let through, no out-of-corpus question)
    agreement_rank: int = 4
    agreement_threshold: float = 0.3
    # a long question's circumstances sit in no section: the share it needs shrinks so that
    # the parent still covers this many of its terms' worth (0.3 up to 11 terms, 0.25 at 14)
    agreement_terms: float = 3.5
    keep_ratio: float = 0.6  # reranked: other parents kept when relevance >= keep_ratio * best (and >= 0.75 * threshold)
    # no reranker: the hybrid order, parents covering >= this * best (golden-insurance dev,
    # before the scope words counted: 0.5 dropped a leading evidence parent covering 0.49 of
    # the best, 0.3 let an out-of-corpus question find a sentence; since, 0.3-0.5 tie)
    hybrid_keep_ratio: float = 0.4
    candidates: int = 10  # parents asked from the hybrid search per query
    # no reranker: each engine's best parents join the hybrid top as well (the dense engine's
    # second is the evidence the fused order puts 4th or 6th when the question's story words
    # swamp BM25; golden-insurance: citation 90/98 -> 92/98 at 2 as at 3, none lost; a
    # false premise less flagged, 14/17: the extra parent names the formula the question
    # gives, for another guarantee)
    engine_seats: int = 2
    reranker: object | None = None  # callable(question, hits) -> list[float]
    rerank_threshold: float = 0.3
    follow_amendments: bool = True


@dataclass
class Retrieved:
    sub: SubQuestion
    hits: list = field(default_factory=list)  # ParentHit, best first


REFORMULATE_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
    "additionalProperties": False,
}


class Retriever:
    def __init__(self, kb, groups=None, options: RetrievalOptions | None = None, llm=None, asked: str | None = None):
        """`asked`: the reader's own message, when what is searched is a model's rewriting of
        it: a name it writes that no document contains ("Chez Groupama, …") stays unknown
        even where the rewriting dropped it."""
        self.kb = kb
        self.groups = list(reader_groups(groups))  # a string is one group
        self.options = options or RetrievalOptions()
        self.llm = llm
        self.weights = TermWeights(kb)
        self.alerts: list[str] = []
        self.scopes: list[str] = []
        self.llm_results: list = []
        self._terms_cache: dict[tuple[str, str], set[str]] = {}
        self._unknown_names: tuple[str, ...] = ()  # names of the last question no document contains
        self._scope_terms: tuple[str, ...] = ()  # terms of the last question that chose its documents
        self._naming: frozenset[str] = frozenset()  # those of the question being retrieved
        self._asked_unknown: tuple[str, ...] = kb.scope(asked).unknown_names if asked else ()

    # ---------------------------------------------------------------- scoring
    def _language(self, document_id: str, text: str) -> str:
        record = self.kb.document(document_id)
        return record.get("language") or language_of(text)

    def _parent_terms(self, parent_id: str, language: str) -> set[str]:
        key = (parent_id, language)
        if key not in self._terms_cache:

            parent = self.kb.parent(parent_id)
            title = self.kb.document(parent["document_id"]).get("title") or parent.get("document_title", "")
            text = "\n".join([title, *parent.get("heading_path", []), parent["text"]])
            self._terms_cache[key] = set(analyze(text, language))
        return self._terms_cache[key]

    def relevance(self, question: str, hit) -> float:
        language = self._language(hit.document_id, hit.text)
        terms = content_terms(question, language)
        return self.weights.coverage(terms, self._parent_terms(hit.parent_id, language) | self._naming, language)

    def _scores(self, question: str, hits: list) -> list[float]:
        reranker = self.options.reranker or getattr(self.kb, "rerank", None)
        if reranker is not None and hits:
            try:
                return [float(s) for s in reranker(question, hits)]
            except Exception as exc:
                self.alerts.append(f"Reranker indisponible ({type(exc).__name__}: {exc}) ; score lexical utilisé.")
                self.options.reranker = None
        return [self.relevance(question, h) for h in hits]

    @property
    def _reranking(self) -> bool:
        return bool(self.options.reranker or getattr(self.kb, "rerank", None))

    @property
    def _threshold(self) -> float:
        return self.options.rerank_threshold if self._reranking else self.options.threshold

    # ------------------------------------------------------------- searching
    def _search(self, query: str, k: int, filters: dict | None = None) -> list:
        try:
            trace = self.kb.retrieve(query, filters=filters, groups=self.groups)
        except QueryRefused as exc:  # a rewritten or reformulated query over a limit finds nothing
            self.alerts.append(f"Recherche refusée ({exc}).")
            return []
        self._unknown_names = tuple(dict.fromkeys(self._asked_unknown + trace.scope.unknown_names))
        self._scope_terms = trace.scope.terms
        scope = trace.scope.describe({d: self.kb.document(d).get("title") or d for d in trace.scope.document_ids})
        if scope and scope not in self.scopes:
            self.scopes.append(scope)  # the answer says which documents the question was limited to
        return self.kb.hits(trace, k)

    def reformulate(self, question: str) -> str:
        """Once: with a model, its keyword query; without, the question's content words."""
        if self.llm is not None:
            try:
                languages = [d.get("language") for d in (self.kb.document(d) for d in self.kb.document_ids()) if d.get("language")]
                corpus = "anglais" if languages and languages.count("en") > len(languages) / 2 else "français"
                result = self.llm.complete(
                    [{"role": "system", "content": "Reformule la question en une requête de recherche documentaire "
                                                   f"en {corpus} (la langue des documents) : mots-clés et synonymes du "
                                                   "domaine de l'assurance, sans y répondre."},
                     {"role": "user", "content": question}], "reformulate", REFORMULATE_SCHEMA, max_tokens=120)
                self.llm_results.append(result)
                query = str((result.data or {}).get("query") or "").strip() if isinstance(result.data, dict) else ""
                if query and query != question:
                    return query
            except Exception as exc:
                self.alerts.append(f"Reformulation par le modèle impossible ({type(exc).__name__}) ; règles utilisées.")
        words = [w.strip("?!.,;:«»\"'()") for w in question.split()]
        language = language_of(question)
        kept = [w for w in words if w and content_terms(w, language)]
        return " ".join(kept) or question

    def child_coverage(self, question: str, hit) -> float:
        """The question's coverage by the hit's best child (either engine's), its context
        counting partly: a long question's circumstances rarely sit in one section, its
        key terms do in one passage."""
        language = self._language(hit.document_id, hit.text)
        terms = content_terms(question, language)
        best = 0.0
        for child in hit.best_child.values():
            best = max(best, self.weights.coverage(terms, set(analyze(child.get("text", ""), language)), language))
        return best

    def gate_evidence(self, question: str, hits: list, scores: dict) -> dict:
        """What the relevance gate decides on, recorded with the sub-question."""
        agreement = None
        for hit in hits:
            ranks = [hit.ranks.get(engine) for engine in ("bm25", "dense")]
            if all(r is not None for r in ranks):
                worst = max(ranks)
                if agreement is None or worst < agreement[0]:
                    agreement = (worst, hit)
        best_id = max(scores, key=scores.get) if scores else None
        return {
            "coverage": round(max(scores.values(), default=0.0), 4),
            "best_parent": best_id,
            "agreement_rank": agreement[0] if agreement else None,
            "agreement_coverage": round(scores.get(agreement[1].parent_id, 0.0), 4) if agreement else None,
            "agreement_child_coverage": round(self.child_coverage(question, agreement[1]), 4) if agreement else None,
            "unknown_names": list(self._unknown_names),
            "terms": len(content_terms(question)),
        }

    def _passes(self, gate: dict) -> str | None:
        """Why the gate lets the sub-question through ("coverage", "agreement"), or None."""
        if gate["unknown_names"]:
            return None  # "chez Groupama", "Harmonie Mutuelle": no document is about what is asked
        if gate["agreement_child_coverage"] is not None and gate["agreement_child_coverage"] < self.options.min_child_coverage:
            return None
        if gate["coverage"] >= self._threshold:
            return "coverage"
        if not self._reranking and not gate["unknown_names"] and gate["agreement_rank"] is not None \
                and gate["agreement_rank"] <= self.options.agreement_rank \
                and gate["agreement_coverage"] >= min(self.options.agreement_threshold,
                                                      self.options.agreement_terms / max(1, gate["terms"])):
            return "agreement"
        return None

    def retrieve(self, question: str, budget: int) -> Retrieved:
        sub = SubQuestion(text=question, queries=[question])
        k = max(self.options.candidates, budget * 2)
        hits = self._search(question, k)
        sub.scope_terms = list(self._scope_terms)
        self._naming = frozenset(self._scope_terms)
        scores = dict(zip([h.parent_id for h in hits], self._scores(question, hits)))
        sub.gate = self.gate_evidence(question, hits, scores)
        best = max(scores.values(), default=0.0)
        if not self._passes(sub.gate):
            query = self.reformulate(question)
            sub.reformulated = True
            sub.queries.append(query)
            asked_names = self._unknown_names
            more = self._search(query, k * 2)
            # the reader's names stay unknown: a reformulation opening on "Groupama" no longer
            # writes it as a name
            self._unknown_names = tuple(dict.fromkeys(asked_names + self._unknown_names))
            known = {h.parent_id for h in hits}
            hits += [h for h in more if h.parent_id not in known]
            # the reformulation may translate the question into the documents' language: a
            # parent counts when it covers the question or its reformulation
            scores = {h.parent_id: max(a, b) for h, a, b in
                      zip(hits, self._scores(question, hits), self._scores(query, hits))}
            best = max(scores.values(), default=0.0)
            sub.gate = self.gate_evidence(question, hits, scores)
        sub.best_score = round(best, 4)
        sub.gate["decision"] = self._passes(sub.gate) or "refused"
        if sub.gate["decision"] == "refused":
            sub.status = NO_SOURCE
            sub.scores = {p: round(s, 4) for p, s in scores.items()}
            return Retrieved(sub, [])
        if self._reranking:
            floor = min(max(self._threshold * 0.75, best * self.options.keep_ratio), best)
            order = {h.parent_id: i for i, h in enumerate(hits)}
            kept = sorted((h for h in hits if scores[h.parent_id] >= floor),
                          key=lambda h: (-round(scores[h.parent_id], 2), order[h.parent_id]))[:budget]
        else:
            # the hybrid ranking places the evidence better than the share of the question's
            # words a section holds (golden-insurance: 82 % of the questions have it in the
            # hybrid top 3, 73 % in the 3 best-covering): the lexical score only drops what
            # covers far less of the question than the best
            floor = best * self.options.hybrid_keep_ratio
            kept = [h for h in hits if scores[h.parent_id] >= floor][:budget]
            kept += self._engine_seats(hits, kept, scores, floor)
        kept += self._holding_wanted_figure(question, hits, kept, scores, floor)
        if self.options.follow_amendments:
            kept += self._related(question, kept, scores, floor)
        sub.status = FOUND
        sub.parent_ids = [h.parent_id for h in kept]
        sub.scores = {h.parent_id: round(scores[h.parent_id], 4) for h in kept}
        return Retrieved(sub, kept)

    def _engine_seats(self, hits: list, kept: list, scores: dict, floor: float) -> list:
        """The parents either engine ranks in its top `engine_seats` that the fused top left
        out (above the same coverage floor), in the hybrid order."""
        known = {h.parent_id for h in kept}
        return [h for h in hits if h.parent_id not in known and scores[h.parent_id] >= floor
                and min(h.ranks.get(engine) or math.inf for engine in ("bm25", "dense")) <= self.options.engine_seats]

    def _holding_wanted_figure(self, question: str, hits: list, kept: list, scores: dict, floor: float) -> list:
        """A question asking for an amount, rate or duration ("entre quels montants…") whose
        kept parents hold no figure of that kind: the best further candidate holding one joins
        them (the guarantee's own chapter says "le montant choisi figure au bulletin", the
        synthesis table five ranks down gives "Entre 900 € et 50 000 €")."""
        wanted = wanted_kinds(question)
        if not wanted or any(self._holds_kind(h, wanted) for h in kept):
            return []
        known = {h.parent_id for h in kept}
        extra = next((h for h in hits if h.parent_id not in known and scores[h.parent_id] >= floor
                      and self._holds_kind(h, wanted)), None)
        return [extra] if extra is not None else []

    def _holds_kind(self, hit, wanted: frozenset[str]) -> bool:
        return any(f.kind in wanted for f in figures(self.kb.parent(hit.parent_id)["text"]))

    def _visible(self, document_id: str) -> bool:
        record = self.kb.document(document_id)
        allowed = set(record.get("allowed_groups") or [PUBLIC_GROUP])
        return bool(allowed & ({PUBLIC_GROUP} | set(self.groups)))

    def _related(self, question: str, kept: list, scores: dict, floor: float) -> list:
        """When a selected section's document is amended by (or amends) another visible
        document, bring that document's best section too: a later amendment must be seen
        next to the clause it replaces, and the replaced clause can be mentioned."""
        amends, amended_by = document_relations(self.kb)
        present = {h.document_id for h in kept}
        wanted = []
        for document_id in list(present):
            for other in amended_by.get(document_id, []) + amends.get(document_id, []):
                if other not in present and other not in wanted and self._visible(other):
                    wanted.append(other)
        extra = []
        for document_id in wanted:
            hits = self._search(question, 3, filters={"document_ids": [document_id]})
            if not hits:
                continue
            best_hit = max(hits, key=lambda h: self.relevance(question, h))
            score = self._scores(question, [best_hit])[0]
            if score >= floor:
                scores[best_hit.parent_id] = score
                extra.append(best_hit)
        return extra
