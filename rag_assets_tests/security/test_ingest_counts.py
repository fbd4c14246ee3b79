"""Counts at ingest that say what happened. A copy of a refused document under another
name was reported "duplicate … indexed once", counted ready, exit 0, while nothing was
indexed; a file rewritten during ingest left a 0-byte stored copy under the sha of its
earlier bytes (hashed in one read, copied in another)."""

from __future__ import annotations

import shutil

import pytest

from rag_assets.commands.ingest import totals_line
from rag_assets.errors import DocumentError
from rag_assets.hashing import copy_hashed, sha256_file
from rag_assets.ingest.sources import ingest_source, store_copy
from rag_assets.settings import SAMPLES_DIR
from rag_assets.store import KnowledgeStore
from rag_assets_tests.security.hostile_files import MB, one_line_markdown
from rag_assets_tests.support.stores import make_settings

NORMAL = "note-provisionnement-non-vie.md"


# -- a copy is counted as its original ----------------------------------------------------------


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """A folder holding a refused Markdown (over a small character limit), a DOCX that is not
    one (fails), a normal note, and a copy of each under another name, ingested once."""
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance

    root = tmp_path_factory.mktemp("copies")
    docs = root / "docs"
    docs.mkdir()
    one_line_markdown(docs / "ligne.md", size=40_000)
    (docs / "aleatoire.docx").write_bytes(b"not a zip archive " * 200)
    shutil.copy(SAMPLES_DIR / NORMAL, docs / NORMAL)
    for name in ("ligne.md", "aleatoire.docx", NORMAL):
        shutil.copy(docs / name, docs / f"une-copie-de-{name}")  # after its original, in name order
    settings = make_settings(root)
    settings = settings.model_copy(update={"budget": settings.budget.model_copy(update={"max_characters": 30_000})})
    instance = open_instance(settings)
    outcomes = {o.path.name: o for o in ingest([docs], settings, instance)}
    yield settings, instance, docs, outcomes
    instance.dispose()


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_a_copy_of_a_refused_or_failed_document_is_counted_as_its_original(copies):
    _, _, _, outcomes = copies
    for name, status in (("ligne.md", "refused"), ("aleatoire.docx", "failed")):
        original, copy = outcomes[name], outcomes[f"une-copie-de-{name}"]
        print(f"{copy.path.name}: {copy.status}: {copy.message}")
        assert original.status == status and copy.status == status
        assert copy.document_id == original.document_id
        assert copy.message == f"same content as {original.document_id}, which was {status}: {original.message}"
    ready_copy = outcomes[f"une-copie-de-{NORMAL}"]
    assert ready_copy.status == "duplicate" and "indexed once" in ready_copy.message
    assert totals_line(list(outcomes.values())) == "2 document(s) ready, 2 failed, 2 refused (over a budget or a link)"


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_a_copy_given_alone_is_counted_as_its_original_was(copies):
    from rag_assets.orchestration.ingest_runs import ingest

    settings, instance, docs, first = copies
    [copy] = ingest([docs / "une-copie-de-ligne.md"], settings, instance)
    assert copy.status == "refused" and first["ligne.md"].message in copy.message
    assert totals_line([copy]) == "0 document(s) ready, 0 failed, 1 refused (over a budget or a link)"
    [copy] = ingest([docs / f"une-copie-de-{NORMAL}"], settings, instance)
    assert copy.status == "duplicate" and totals_line([copy]).startswith("1 document(s) ready, 0 failed")


# -- what is stored is what was hashed -----------------------------------------------------------


class GrowingSource:
    """A sink that appends to the file being copied on its first write: the file grows
    between two reads of the copy, every time."""

    def __init__(self, source):
        self.source, self.written = source, bytearray()

    def write(self, block: bytes) -> None:
        if not self.written:
            with open(self.source, "ab") as handle:
                handle.write(b"# ajout\n" * 1000)
        self.written += block


def test_a_file_that_changes_while_it_is_copied_is_refused_naming_it(tmp_path):
    source = one_line_markdown(tmp_path / "note.md", size=3 * MB)
    with pytest.raises(DocumentError) as caught:
        copy_hashed(source, GrowingSource(source))
    assert str(caught.value) == (
        f"{source}: file changed while it was read (3,145,737 bytes when the copy began, "
        "3,153,737 when it ended); try again"
    )


def test_the_stored_copy_is_named_by_the_hash_of_its_bytes(tmp_path):
    store = KnowledgeStore(tmp_path / "knowledge")
    source = one_line_markdown(tmp_path / "note.md", size=3 * MB)
    record = ingest_source(store, "note", source, 10 * MB)
    stored = tmp_path / "knowledge" / "sources" / record.sha256 / "note.md"
    assert record.stored_path == str(stored) and sha256_file(stored) == record.sha256 == sha256_file(source)
    assert record.size_bytes == stored.stat().st_size == source.stat().st_size
    # emptied after it was validated: refused, nothing stored, no part left behind
    source.write_bytes(b"")
    with pytest.raises(DocumentError, match="note.md: file is empty"):
        store_copy(store, source, "note.md")
    assert sorted(p.name for p in store.sources_dir.iterdir()) == [record.sha256]
