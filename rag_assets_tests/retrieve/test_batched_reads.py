"""`search` reads the parents and children it shows together, and serves a repeated question
from its recent retrievals; what it returns is what a retrieval and one look-up per parent
and child return, and a change of the published versions is retrieved afresh."""

import shutil

from rag_assets.index.publication import pointer
from rag_assets.retrieve.knowledge_base import KnowledgeBase, ParentHit, RetrievalTrace

# (question, filters, groups): a phrase, scoped questions, a filter, a reader's groups
QUESTIONS = [
    ("franchise inondation zone A", None, None),
    ("hypothèses du modèle de Mack", None, None),
    ("Qu'est-ce que la PSAP ?", None, None),
    ("« le gestionnaire vérifie la déclaration de sinistre »", None, None),
    ("préavis résiliation", {"document_type": "amendment"}, None),
    ("seuil de délégation du gestionnaire visioexpertise", None, ["claims"]),
]


def _one_by_one(kb: KnowledgeBase, trace: RetrievalTrace, k: int) -> list[dict]:
    """The first k parents of a retrieval, each parent and best child looked up by id alone."""
    best = {engine: {h.parent_id: h for h in ranking} for engine, ranking in trace.parents.items()}
    hits = []
    for fused in trace.fused[:k]:
        parent = kb.parent(fused.parent_id)
        children = {engine: hits[fused.parent_id] for engine, hits in best.items() if fused.parent_id in hits}
        hit = ParentHit(
            parent_id=fused.parent_id,
            document_id=parent["document_id"],
            document_title=parent["document_title"],
            heading_path=list(parent["heading_path"]),
            pages=list(parent["pages"]),
            text=parent["text"],
            rrf_score=fused.score,
            ranks=fused.ranks,
            version=kb.published_versions()[parent["document_id"]]["version"],
            best_child={
                engine: {"child_id": c.child_id, "score": c.score, "text": kb.child(c.child_id)["text"]}
                for engine, c in children.items()
            },
        )
        hits.append(hit.to_dict())
    return hits


def test_search_returns_what_one_look_up_per_parent_and_child_returns(kb):
    whole = KnowledgeBase.open(kb.store.root, embedder=kb.embedder_spec)  # documents read whole
    for question, filters, groups in QUESTIONS:
        searched = [h.to_dict() for h in kb.search(question, k=10, filters=filters, groups=groups)]
        assert searched == _one_by_one(whole, whole.retrieve(question, filters, groups), 10), question
        assert searched and all(h["text"] and h["best_child"] for h in searched), question
    assert not kb.corpus._cache  # the rows shown were read, not their documents


def test_a_repeated_question_is_served_from_the_recent_retrievals(kb):
    question = "franchise inondation zone A"
    first = kb.retrieve(question)
    embedded = kb.query_vectors.misses + kb.query_vectors.hits
    again = kb.retrieve(question)
    assert kb.retrievals.hits == 1 and kb.query_vectors.misses + kb.query_vectors.hits == embedded
    assert (again.fused, again.children, again.phrase) == (first.fused, first.children, first.phrase)
    assert set(again.seconds) == {*first.seconds, "cache"} and again.seconds["bm25"] == 0.0
    assert [h.to_dict() for h in kb.hits(again, 5)] == [h.to_dict() for h in kb.hits(first, 5)]
    # other groups, filters or candidates are another retrieval
    kb.retrieve(question, groups=["claims"])
    kb.retrieve(question, filters={"document_type": "amendment"})
    kb.retrieve(question, candidates=10)
    assert kb.retrievals.hits == 1 and len(kb.retrievals) == 4


def test_a_question_scope_or_thesaurus_changes_is_served_from_the_recent_retrievals_too(kb):
    """Scope narrows the filters and the thesaurus adds term weights after the look-up: the
    retrieval is kept under what was asked, so such a question is found again."""
    client = type(kb)(kb.store, kb.embedder_spec, use_thesaurus=True)
    asked = [
        *QUESTIONS,
        ("Dans le contrat de maintenance MX-200, quel est le préavis de résiliation ?", None, None),
        ("franchise dégât des eaux", None, None),
    ]
    first = {q: [h.to_dict() for h in client.search(q, k=10, filters=f, groups=g)] for q, f, g in asked}
    traces = [client.retrieve(q, f, g) for q, f, g in asked]
    assert any(t.scope.document_ids for t in traces) and any(t.expansions.get("added") for t in traces)
    assert client.retrievals.hits == len(asked)
    again = {q: [h.to_dict() for h in client.search(q, k=10, filters=f, groups=g)] for q, f, g in asked}
    assert client.retrievals.hits == 2 * len(asked) and again == first


def test_a_change_of_the_published_versions_is_retrieved_afresh(kb, tmp_path):
    copy = tmp_path / "store"
    shutil.copytree(kb.store.root, copy, ignore=shutil.ignore_patterns("dagster"))
    client = KnowledgeBase.open(copy, embedder=kb.embedder_spec)
    question = "franchise inondation zone A"
    [withdrawn] = {h.document_id for h in client.search(question, k=1)}
    pointer(client.store).edit(lambda publication: publication.pop(withdrawn, None) is not None)
    hits = client.search(question, k=5)
    assert client.retrievals.hits == 0 and hits and withdrawn not in {h.document_id for h in hits}
