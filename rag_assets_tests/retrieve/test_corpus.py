"""The client reads parents and children by id from the published files, and merges the
acronym summaries the parents stage stored instead of reading every parent's text."""

import shutil

import polars as pl

from rag_assets.retrieve.knowledge_base import KnowledgeBase
from rag_assets.store import ACRONYMS_FILE
from rag_assets.text.acronyms import AcronymDictionary
from rag_assets.text.thesaurus import load_thesaurus


def _texts(kb: KnowledgeBase) -> list[str]:
    return [
        text
        for entry in kb.published_versions().values()
        for text in pl.read_parquet(kb.store.root / entry["path"] / "parents.parquet")["text"].to_list()
    ]


def test_stored_acronym_summaries_merge_to_the_dictionary_of_the_whole_text(kb, sample_kb, tmp_path):
    folders = [kb.store.root / entry["path"] for entry in kb.published_versions().values()]
    assert folders and all((folder / ACRONYMS_FILE).exists() for folder in folders)  # written by the parents stage
    whole = AcronymDictionary.build(_texts(kb), load_thesaurus())
    assert "PSAP" in kb.acronyms and kb.acronyms.long_forms == whole.long_forms and kb.acronyms.skipped == whole.skipped

    # a store without the summaries (made before them): the client makes them from the text
    settings, _, _ = sample_kb
    copy = tmp_path / "store"
    shutil.copytree(settings.store, copy, ignore=shutil.ignore_patterns("dagster", ACRONYMS_FILE))
    assert KnowledgeBase.open(copy, embedder=settings.embedder).acronyms.long_forms == whole.long_forms


def test_parents_are_read_when_asked(kb):
    assert not kb.corpus._cache  # nothing read at open
    hits = kb.search("hypothèses du modèle de Mack", k=3)
    # a search reads the rows it shows, not whole documents, and keeps them
    assert not kb.corpus._cache
    shown = {h.parent_id for h in hits} | {c["child_id"] for h in hits for c in h.best_child.values()}
    assert shown <= {key for _, _, _, key in kb.corpus._rows}
    parent = kb.parent(hits[0].parent_id)
    assert not kb.corpus._cache  # looked up from the rows the search read
    assert parent["text"] == hits[0].text and parent["document_title"] == hits[0].document_title
    whole = KnowledgeBase.open(kb.store.root, embedder=kb.embedder_spec)  # reads each document whole
    for hit in hits:
        assert whole.parent(hit.parent_id) == kb.parent(hit.parent_id)
        for child in hit.best_child.values():
            assert whole.child(child["child_id"]) == kb.child(child["child_id"])
    assert set(whole.corpus._cache) == {h.document_id for h in hits}
    every = list(kb.iter_parents())
    assert len(every) == sum(e["parents"] for e in kb.published_versions().values())
    unseen = every[-1]  # found by id alone, whatever document holds it
    fresh = KnowledgeBase.open(kb.store.root, embedder=kb.embedder_spec)
    assert fresh.parent(unseen["parent_id"]) == unseen
    assert [p["ordinal"] for p in fresh.parents_of(unseen["document_id"])] == sorted(
        p["ordinal"] for p in every if p["document_id"] == unseen["document_id"]
    )
    assert fresh.child_count() == sum(e["children"] for e in kb.published_versions().values())


def test_a_documents_lines_of_insurance_read_its_headings_alone(kb):
    """A question naming an insurer reads the lines of insurance of each of its documents: from
    their heading paths alone, no document read whole nor kept (a first question naming an
    insurer of a hundred documents took seconds decoding every parent)."""
    for document_id in kb.document_ids():
        read = sorted(map(tuple, kb.corpus.heading_paths(document_id)))
        assert read == sorted(tuple(p["heading_path"]) for p in kb.parents_of(document_id))
    fresh = KnowledgeBase.open(kb.store.root, embedder=kb.embedder_spec)
    assert all(isinstance(fresh.branches(d), frozenset) for d in fresh.document_ids())
    assert not fresh.corpus._cache
    assert fresh.corpus.heading_paths("no-such-document") == []
