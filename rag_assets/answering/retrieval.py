"""Retrieval per sub-question: the hybrid search (and the reranker when one is
configured), the relevance gate, one reformulation when the gate refuses, then "no source
found".

RRF scores only rank; they say nothing about whether anything relevant was found. Whether
the sources answer is a calibrated decision (`answering/gate.py`): the probability, from the
retrieval's own signals, that they do. The relevance of a parent, one of those signals and
what orders and keeps parents, is the IDF-weighted share of the question's terms present in
it (title, headings and text, analysed like the lexical index): a question about the
capital of Australia covers none of "australie", which the corpus never saw and which
therefore weighs the most. The terms that chose the documents searched (the scope: "APICIL",
"TNS", "IPID", often only in a file name) count as present in their parents: they were
found, in the document's identity. With a reranker (`kb.rerank(question, hits)` returning
scores in [0, 1], or `options.reranker`), its score is the relevance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from rag_assets.answering.citations import document_amendments
from rag_assets.answering.figures import figures, wanted_kinds
from rag_assets.answering.gate import GateModel
from rag_assets.answering.model import FOUND, NO_SOURCE, SubQuestion
from rag_assets.answering.premium import asks_price, states_premium
from rag_assets.answering.terms import TermWeights
from rag_assets.index.amendments import FOLDER, GROUPS, Amendments
from rag_assets.index.filters import reader_groups
from rag_assets.index.records import PUBLIC_GROUP
from rag_assets.retrieve.branches import branches_of_text
from rag_assets.retrieve.limits import QueryRefused
from rag_assets.retrieve.query import analyze, content_terms
from rag_assets.text.language import detect_language as language_of


@dataclass
class RetrievalOptions:
    # the least probability that the retrieved evidence answers (answering/gate.py); None:
    # the fitted gate's own threshold
    threshold: float | None = None
    gate_model: str = ""  # a gate model file instead of the packaged one
    # reranked: other parents kept when relevance >= keep_ratio * best (and >= 0.75 * rerank_threshold)
    keep_ratio: float = 0.6
    # no reranker: the hybrid order, parents covering >= this * best (evaluations/tuning.md)
    hybrid_keep_ratio: float = 0.4
    candidates: int = 10  # parents asked from the hybrid search per query
    # no reranker: each engine's best parents join the hybrid top as well (the dense engine's
    # second is the evidence the fused order puts 4th or 6th when the question's story words
    # swamp BM25; evaluations/tuning.md)
    engine_seats: int = 2
    reranker: Callable[[str, list], Sequence[float]] | None = None
    rerank_threshold: float = 0.3
    follow_amendments: bool = True


# why an amendment is refused (index/amendments.py), as an answer's alert says it
REFUSED_RULES = {
    FOLDER: "le second n'est ni dans le dossier du premier ni en dessous",
    GROUPS: "le premier est lisible par des groupes qui ne peuvent pas lire le second",
}
# what a refusal of a price question says (answering/premium.py)
PRICE_UNSTATED = (
    "Les documents ne donnent pas le prix de l'assurance : la cotisation figure aux conditions "
    "particulières ou à l'échéancier de votre contrat."
)
GATE_PASSAGES = 3  # the first parents whose best passage the gate reads


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
        self._unheld: tuple[str, ...] = ()  # of those, the insurer or contract the reader says they hold
        self._scope_terms: tuple[str, ...] = ()  # terms of the last question that chose its documents
        self._scope_documents: tuple[str, ...] = ()  # the documents they chose (none: every document)
        self._naming: frozenset[str] = frozenset()  # those of the question being retrieved
        asked_scope = kb.scope(asked) if asked else None
        self._asked_unknown: tuple[str, ...] = asked_scope.unknown_names if asked_scope else ()
        self._asked_unheld: tuple[str, ...] = asked_scope.unheld if asked_scope else ()

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

    def relevance(self, question: str, hit, naming: bool = True) -> float:
        """`naming`: the terms that chose the documents count as found (see above)."""
        language = self._language(hit.document_id, hit.text)
        terms = content_terms(question, language)
        found = self._parent_terms(hit.parent_id, language)
        return self.weights.coverage(terms, found | self._naming if naming else found, language)

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

    # ------------------------------------------------------------- searching
    def _search(self, query: str, k: int, filters: dict | None = None) -> list:
        try:
            trace = self.kb.retrieve(query, filters=filters, groups=self.groups)
        except QueryRefused as exc:  # a rewritten or reformulated query over a limit finds nothing
            self.alerts.append(f"Recherche refusée ({exc}).")
            return []
        self._unknown_names = tuple(dict.fromkeys(self._asked_unknown + trace.scope.unknown_names))
        self._unheld = tuple(dict.fromkeys(self._asked_unheld + trace.scope.unheld))
        self._scope_terms = trace.scope.terms
        self._scope_documents = trace.scope.document_ids
        scope = trace.scope.describe({d: self.kb.document(d).get("title") or d for d in trace.scope.document_ids})
        if scope and scope not in self.scopes:
            self.scopes.append(scope)  # the answer says which documents the question was limited to
        return self._without_refused_amendments(self.kb.hits(trace, k))

    @cached_property
    def amendments(self) -> Amendments:
        return document_amendments(self.kb)

    def _without_refused_amendments(self, hits: list) -> list:
        """A document whose sidecar says it amends another, a claim refused (a file from another
        folder, or readable more widely), does not answer while the reader may read the document
        it claims to replace: what it says is said of that document, without the right to."""
        refused = {r.amending: r for r in self.amendments.refused if self._visible(r.amended)}
        for document_id in dict.fromkeys(h.document_id for h in hits if h.document_id in refused):
            relation = refused[document_id]
            alert = (
                f"« {self.kb.document(document_id).get('title') or document_id} » se présente comme modifiant "
                f"« {self.kb.document(relation.amended).get('title') or relation.amended} » sans en avoir le "
                f"droit ({REFUSED_RULES[relation.rule]}) : il est écarté de cette réponse."
            )
            if alert not in self.alerts:
                self.alerts.append(alert)
        return [h for h in hits if h.document_id not in refused]

    def reformulate(self, question: str) -> str:
        """Once: with a model, its keyword query; without, the question's content words."""
        if self.llm is not None:
            try:
                languages = [
                    d.get("language")
                    for d in (self.kb.document(d) for d in self.kb.document_ids())
                    if d.get("language")
                ]
                corpus = "anglais" if languages and languages.count("en") > len(languages) / 2 else "français"
                result = self.llm.complete(
                    [
                        {
                            "role": "system",
                            "content": "Reformule la question en une requête de recherche documentaire "
                            f"en {corpus} (la langue des documents) : mots-clés et synonymes du "
                            "domaine de l'assurance, sans y répondre.",
                        },
                        {"role": "user", "content": question},
                    ],
                    "reformulate",
                    REFORMULATE_SCHEMA,
                    max_tokens=120,
                )
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
        """What the relevance gate decides on (`answering/gate.py`), recorded with the sub-question."""
        agreement = None
        for hit in hits:
            ranks = [hit.ranks.get(engine) for engine in ("bm25", "dense")]
            if all(r is not None for r in ranks):
                worst = max(ranks)
                if agreement is None or worst < agreement[0]:
                    agreement = (worst, hit)
        best_id = max(scores, key=scores.get) if scores else None
        language = language_of(question)
        terms = content_terms(question, language)
        idf = sum(self.weights.idf(t, language) for t in terms)
        best_engine = {
            engine: max((h.best_child[engine]["score"] for h in hits if engine in h.best_child), default=0.0)
            for engine in ("bm25", "dense")
        }
        features = {
            "coverage": max(scores.values(), default=0.0),
            "content_coverage": max((self.relevance(question, h, naming=False) for h in hits), default=0.0),
            "child_coverage": max((self.child_coverage(question, h) for h in hits[:GATE_PASSAGES]), default=0.0),
            "agreement": 1.0 / agreement[0] if agreement else 0.0,
            "dense": best_engine["dense"],
            "bm25": min(1.0, best_engine["bm25"] / idf) if idf else 0.0,
            "off_lines": self._off_lines(question, language),
            "unknown_names": float(min(2, len(set(self._unknown_names) - set(self._unheld)))),
            "terms": math.log1p(len(terms)),
        }
        return {
            "coverage": round(features["coverage"], 4),
            "best_parent": best_id,
            "agreement_rank": agreement[0] if agreement else None,
            "unknown_names": list(self._unknown_names),
            "unheld": list(self._unheld),
            "features": {k: round(v, 4) for k, v in features.items()},
        }

    def _off_lines(self, question: str, language: str) -> float:
        """1 when the question speaks of lines of insurance (`retrieve/branches.py`) that none of
        the documents searched covers (those it names, else every visible one): "mon chien"
        against the home and car policies of the insurer the reader named, "mon assurance vie"
        against a store of health policies."""
        asked = branches_of_text(question, language)
        if not asked:
            return 0.0
        searched = self._scope_documents or [d for d in self.kb.document_ids() if self._visible(d)]
        held = set().union(*(self.kb.branches(d) for d in searched)) if searched else set()
        return 0.0 if asked & held else 1.0

    @cached_property
    def gate(self) -> GateModel:
        return GateModel.load(self.options.gate_model) if self.options.gate_model else GateModel.load()

    def _passes(self, gate: dict) -> str | None:
        """Why the gate lets the sub-question through ("reranker", "calibrated"), or None; the
        gate's probability and model are recorded with its features."""
        if gate["unheld"]:
            return None  # the reader's own contract is not among the documents: they cannot answer for it
        if self._reranking:
            return "reranker" if gate["coverage"] >= self.options.rerank_threshold else None
        gate["probability"] = round(self.gate.probability(gate["features"]), 4)
        gate["model"] = self.gate.version
        threshold = self.gate.threshold if self.options.threshold is None else self.options.threshold
        return "calibrated" if gate["probability"] >= threshold else None

    def assess(self, question: str, k: int) -> tuple[list, dict, dict]:
        """The first pass: the hybrid top `k`, each parent's relevance, and the gate's
        evidence (what `rag-assets fit-gate` fits the gate on)."""
        hits = self._search(question, k)
        self._naming = frozenset(self._scope_terms)
        scores = dict(zip([h.parent_id for h in hits], self._scores(question, hits)))
        return hits, scores, self.gate_evidence(question, hits, scores)

    def retrieve(self, question: str, budget: int) -> Retrieved:
        sub = SubQuestion(text=question, queries=[question])
        k = max(self.options.candidates, budget * 2)
        hits, scores, sub.gate = self.assess(question, k)
        sub.scope_terms = list(self._scope_terms)
        best = max(scores.values(), default=0.0)
        if not self._passes(sub.gate):
            query = self.reformulate(question)
            sub.reformulated = True
            sub.queries.append(query)
            asked_names, asked_unheld, asked_documents = self._unknown_names, self._unheld, self._scope_documents
            more = self._search(query, k * 2)
            # the reader's names stay unknown, and the documents they named stay the ones searched:
            # a reformulation opening on "Groupama" no longer writes it as a name
            self._unknown_names = tuple(dict.fromkeys(asked_names + self._unknown_names))
            self._unheld = tuple(dict.fromkeys(asked_unheld + self._unheld))
            self._scope_documents = asked_documents
            known = {h.parent_id for h in hits}
            hits += [h for h in more if h.parent_id not in known]
            # the reformulation may translate the question into the documents' language: a
            # parent counts when it covers the question or its reformulation
            scores = {
                h.parent_id: max(a, b) for h, a, b in zip(hits, self._scores(question, hits), self._scores(query, hits))
            }
            best = max(scores.values(), default=0.0)
            sub.gate = self.gate_evidence(question, hits, scores)
        sub.best_score = round(best, 4)
        sub.gate["decision"] = self._passes(sub.gate) or "refused"
        if sub.gate["decision"] != "refused" and asks_price(question) and not any(states_premium(h.text) for h in hits):
            sub.gate["decision"] = "refused"
            sub.gate["price_unstated"] = True
            self.alerts.append(PRICE_UNSTATED)
        if sub.gate["decision"] == "refused":
            sub.status = NO_SOURCE
            sub.scores = {p: round(s, 4) for p, s in scores.items()}
            return Retrieved(sub, [])
        if self._reranking:
            floor = min(max(self.options.rerank_threshold * 0.75, best * self.options.keep_ratio), best)
            order = {h.parent_id: i for i, h in enumerate(hits)}
            kept = sorted(
                (h for h in hits if scores[h.parent_id] >= floor),
                key=lambda h: (-round(scores[h.parent_id], 2), order[h.parent_id]),
            )[:budget]
        else:
            # the hybrid ranking places the evidence better than the share of the question's
            # words a section holds (evaluations/tuning.md): the lexical score only drops what
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
        return [
            h
            for h in hits
            if h.parent_id not in known
            and scores[h.parent_id] >= floor
            and min(h.ranks.get(engine) or math.inf for engine in ("bm25", "dense")) <= self.options.engine_seats
        ]

    def _holding_wanted_figure(self, question: str, hits: list, kept: list, scores: dict, floor: float) -> list:
        """A question asking for an amount, rate or duration ("entre quels montants…") whose
        kept parents hold no figure of that kind: the best further candidate holding one joins
        them (the guarantee's own chapter says "le montant choisi figure au bulletin", the
        synthesis table five ranks down gives "Entre 900 € et 50 000 €")."""
        wanted = wanted_kinds(question)
        if not wanted or any(self._holds_kind(h, wanted) for h in kept):
            return []
        known = {h.parent_id for h in kept}
        extra = next(
            (
                h
                for h in hits
                if h.parent_id not in known and scores[h.parent_id] >= floor and self._holds_kind(h, wanted)
            ),
            None,
        )
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
        amends, amended_by = self.amendments.amends, self.amendments.amended_by
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
