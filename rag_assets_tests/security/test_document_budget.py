"""Issue 13, probe 4: no budget per document. A 475 KB DOCX expanding to 127 MB of XML, a
PPTX likewise, 50 MB of nested <div>, one 20 MB line of Markdown, a PDF of 1 text page and
4,999 blank pages each ran 3–5 min at 1.6–5.2 GB before being killed; a 693-byte PDF with
one 14,400 × 14,400 pt page took 4.6 GB then MemoryError; a failed file was retried by
every re-index. Each now fails its own partition, naming the limit and the value, while the
other documents ingest; a refusal is not tried again until the file or the budget changes."""

from __future__ import annotations

import re
import shutil
import time

import pytest

from rag_assets.commands.ingest import summary_lines
from rag_assets.document_budget import Budget
from rag_assets.errors import BudgetExceeded
from rag_assets.parsing.budget import check_before_conversion, check_tokens, is_memory_failure
from rag_assets.settings import SAMPLES_DIR
from rag_assets_tests.security.hostile_files import (
    MB,
    blank_pages_pdf,
    docx_bomb,
    giant_page_pdf,
    long_markdown,
    nested_html,
    one_line_markdown,
    pptx_bomb,
)
from rag_assets_tests.support.stores import make_settings

NORMAL = "note-provisionnement-non-vie.md"
EXPECTED = {  # file -> what its refusal says (limit and value)
    "bombe.docx": r"bombe\.docx: archive expands \d[\d,]*× \(\d+ KB → 127\.\d MB\), over the 100× expansion limit "
    r"\(RAG_ASSETS_MAX_ARCHIVE_RATIO\)",
    "bombe.pptx": r"bombe\.pptx: archive expands \d[\d,]*× \(\d+ KB → 127\.\d MB\), over the 100× expansion limit "
    r"\(RAG_ASSETS_MAX_ARCHIVE_RATIO\)",
    "pages-blanches.pdf": r"pages-blanches\.pdf: document has 5,000 pages, over the 2,000-page limit "
    r"\(RAG_ASSETS_MAX_PAGES\)",
    "page-geante.pdf": r"page-geante\.pdf: page 1 is 14,400 × 14,400 pt, over the 5,000-pt page size limit "
    r"\(RAG_ASSETS_MAX_PAGE_PT\)",
    "ligne.md": r"ligne\.md: document has 20,971,5\d\d characters of text, over the 10,000,000-character limit "
    r"\(RAG_ASSETS_MAX_CHARACTERS\)",
}


def _with_limit(settings, **limits):
    return settings.model_copy(update={"budget": settings.budget.model_copy(update=limits)})


# -- the checks themselves (no Dagster, small files) ----------------------------------------------


def test_checks_before_conversion_name_the_limit_and_the_value(tmp_path):
    budget = Budget(max_pages=20, max_page_pt=5000, max_characters=1_000_000, max_archive_ratio=100)
    cases = [
        (
            blank_pages_pdf(tmp_path / "p.pdf", pages=30),
            "document has 30 pages, over the 20-page limit (RAG_ASSETS_MAX_PAGES)",
        ),
        (
            giant_page_pdf(tmp_path / "g.pdf", side_pt=6000),
            "page 1 is 6,000 × 6,000 pt, over the 5,000-pt page size limit (RAG_ASSETS_MAX_PAGE_PT)",
        ),
        (
            docx_bomb(tmp_path / "b.docx", expanded_bytes=8 * MB),
            "over the 100× expansion limit (RAG_ASSETS_MAX_ARCHIVE_RATIO)",
        ),
        (
            pptx_bomb(tmp_path / "b.pptx", expanded_bytes=8 * MB),
            "over the 100× expansion limit (RAG_ASSETS_MAX_ARCHIVE_RATIO)",
        ),
        (
            one_line_markdown(tmp_path / "l.md", size=2 * MB),
            "document has 2,097,161 characters of text, over the 1,000,000-character limit (RAG_ASSETS_MAX_CHARACTERS)",
        ),
    ]
    for path, message in cases:
        with pytest.raises(BudgetExceeded) as caught:
            check_before_conversion(path, path.name, budget)
        assert message in str(caught.value) and str(caught.value).startswith(f"{path.name}: "), str(caught.value)
        assert caught.value.setting in str(caught.value) and caught.value.value is not None
    for sample in SAMPLES_DIR.iterdir():  # the real documents are well within the defaults
        if sample.suffix in (".pdf", ".docx", ".md", ".html"):
            check_before_conversion(sample, sample.name, Budget())


def test_allocation_failures_are_recognised():
    assert is_memory_failure(MemoryError())
    assert is_memory_failure(RuntimeError("std::bad_alloc"))
    try:
        try:
            raise MemoryError()
        except MemoryError as inner:
            raise ValueError("page 1 failed to parse") from inner
    except ValueError as outer:
        assert is_memory_failure(outer)
    assert not is_memory_failure(ValueError("PDF is corrupt"))


# -- through Dagster: each hostile document fails its own partition ------------------------------


@pytest.fixture(scope="module")
def budget_store(tmp_path_factory):
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance

    root = tmp_path_factory.mktemp("budget")
    docs = root / "docs"
    docs.mkdir()
    docx_bomb(docs / "bombe.docx")
    pptx_bomb(docs / "bombe.pptx")
    blank_pages_pdf(docs / "pages-blanches.pdf")
    giant_page_pdf(docs / "page-geante.pdf")
    one_line_markdown(docs / "ligne.md")
    shutil.copy(SAMPLES_DIR / NORMAL, docs / NORMAL)
    settings = make_settings(root)
    instance = open_instance(settings)
    started = time.monotonic()
    outcomes = {o.path.name: o for o in ingest([docs], settings, instance)}
    print(f"\ningest of {len(outcomes)} documents: {time.monotonic() - started:.1f} s")
    yield settings, instance, docs, outcomes
    instance.dispose()


def _seconds(outcome) -> str:
    return ", ".join(f"{s.stage} {s.status} {s.seconds:.2f} s" for s in outcome.stages if s.seconds is not None)


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_each_hostile_document_is_refused_by_its_limit_while_another_ingests(budget_store):
    _, _, _, outcomes = budget_store
    assert outcomes[NORMAL].status == "indexed", outcomes[NORMAL].message
    for name, pattern in EXPECTED.items():
        outcome = outcomes[name]
        print(f"{name}: {outcome.status} [{_seconds(outcome)}] {outcome.message}")
        assert outcome.status == "refused"
        assert re.fullmatch(pattern, outcome.message), outcome.message
        assert [(s.stage, s.status) for s in outcome.stages] == [
            ("source_document", "done"),
            ("docling_document", "failed"),
        ]
        lines = summary_lines(outcome, 1, 1)  # what `rag-assets ingest` prints: refused, not a crash
        assert lines[0].startswith("[1/1] refused") and lines[1].strip().startswith("refused: ")
        assert not any("Traceback" in line or "Error" in line for line in lines)


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_a_refusal_is_not_tried_again_until_the_file_or_the_budget_changes(budget_store):
    from rag_assets.orchestration.ingest_runs import ingest

    settings, instance, docs, first = budget_store
    again = {o.path.name: o for o in ingest([docs], settings, instance)}
    assert again[NORMAL].status == "unchanged"
    for name in EXPECTED:
        assert again[name].status == "refused" and again[name].message == first[name].message
        # at once: the stage fails from the recorded refusal, no conversion process
        assert [(s.stage, s.status) for s in again[name].stages] == [("docling_document", "failed")]
        print(f"{name} again: [{_seconds(again[name])}]")
    record = settings.store / "documents" / again["page-geante.pdf"].document_id / "refused.json"
    assert record.exists()

    # another budget: tried again (and refused by the new limit)
    [docx] = ingest([docs / "bombe.docx"], _with_limit(settings, max_archive_ratio=150), instance)
    assert docx.status == "refused" and "over the 150× expansion limit" in docx.message
    # other bytes: tried again
    giant_page_pdf(docs / "page-geante.pdf", side_pt=14000)
    [giant] = ingest([docs / "page-geante.pdf"], settings, instance)
    assert giant.status == "refused" and "page 1 is 14,000 × 14,000 pt" in giant.message
    assert ("source_document", "done") in [(s.stage, s.status) for s in giant.stages]


def test_a_refusal_made_by_other_conversion_code_is_tried_again(tmp_path, monkeypatch):
    # golden-shared: the Solvency II directive, refused over 4,096 MB while Docling buffered 100
    # pages between stages, fits since 4 are; the standing refusal must not outlive that code
    from rag_assets.ingest import refusals
    from rag_assets.store import KnowledgeStore
    from rag_assets.versions import CODE_VERSIONS

    settings = make_settings(tmp_path)
    store = KnowledgeStore(settings.store)
    exc = BudgetExceeded(
        "directive.pdf",
        "conversion used 4,107 MB, over the 4,096 MB memory limit",
        setting="RAG_ASSETS_MAX_MEMORY_MB",
        limit=4096,
        value=4107,
    )
    refusals.record_refusal(store, "directive", "ab" * 32, settings, exc)
    assert str(refusals.standing_refusal(store, "directive", "ab" * 32, settings)) == str(exc)
    monkeypatch.setitem(CODE_VERSIONS, "docling_document", "next")
    assert refusals.standing_refusal(store, "directive", "ab" * 32, settings) is None
    monkeypatch.undo()
    monkeypatch.setattr(refusals, "PAGES_IN_FLIGHT", 2)
    assert refusals.standing_refusal(store, "directive", "ab" * 32, settings) is None


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_memory_over_its_limit_stops_the_conversion(budget_store):
    """50 MB of nested <div>: the reader's tree grows until the memory limit stops it."""
    from rag_assets.orchestration.ingest_runs import ingest

    settings, instance, docs, _ = budget_store
    folder = docs.parent / "memoire"
    folder.mkdir()
    nested_html(folder / "imbrique.html")
    shutil.copy(SAMPLES_DIR / "note-interne-procedure.md", folder / "autre-note.md")
    started = time.monotonic()
    outcomes = {o.path.name: o for o in ingest([folder], _with_limit(settings, max_memory_mb=1200), instance)}
    print(
        f"\nnested HTML + a note under a 1,200 MB limit: {time.monotonic() - started:.1f} s; "
        f"{_seconds(outcomes['imbrique.html'])}; {outcomes['imbrique.html'].message}"
    )
    assert outcomes["autre-note.md"].status == "indexed", outcomes["autre-note.md"].message
    nested = outcomes["imbrique.html"]
    assert nested.status == "refused"
    assert nested.message.startswith("imbrique.html: conversion ")
    assert "the 1,200 MB memory limit (RAG_ASSETS_MAX_MEMORY_MB); stopped" in nested.message


# -- tokens: what embedding costs ------------------------------------------------------------------


def test_tokens_over_the_limit_are_refused_naming_the_limit_and_the_value():
    budget = Budget(max_tokens=2000)
    check_tokens(2000, "l.md", budget)
    with pytest.raises(BudgetExceeded) as caught:
        check_tokens(2001, "l.md", budget)
    assert str(caught.value) == (
        "l.md: document has 2,001 tokens of text, over the 2,000-token limit (RAG_ASSETS_MAX_TOKENS)"
    )
    assert (caught.value.setting, caught.value.limit, caught.value.value) == ("RAG_ASSETS_MAX_TOKENS", 2000, 2001)


@pytest.mark.slow  # ingests through Dagster
@pytest.mark.dagster_run
def test_a_document_over_the_token_limit_is_refused_before_embedding(budget_store):
    """Under the character limit, over the token limit: refused at the children stage, nothing
    embedded, the refusal recorded and repeated at once while the file and the budget stand."""
    from rag_assets.orchestration.ingest_runs import ingest

    settings, instance, docs, _ = budget_store
    folder = docs.parent / "jetons"
    folder.mkdir()
    long_markdown(folder / "long.md", characters=40_000)
    shutil.copy(SAMPLES_DIR / NORMAL, folder / NORMAL)
    settings = _with_limit(settings, max_tokens=5000)
    outcomes = {o.path.name: o for o in ingest([folder], settings, instance)}
    assert outcomes[NORMAL].status in ("indexed", "duplicate"), outcomes[NORMAL].message
    long = outcomes["long.md"]
    print(f"\nlong.md: [{_seconds(long)}] {long.message}")
    assert long.status == "refused"
    assert re.fullmatch(
        r"long\.md: document has \d{1,2},\d{3} tokens of text, over the 5,000-token limit "
        r"\(RAG_ASSETS_MAX_TOKENS\)",
        long.message,
    ), long.message
    assert [(s.stage, s.status) for s in long.stages][-1] == ("children", "failed")
    assert "dense_embeddings" not in [s.stage for s in long.stages]
    assert (settings.store / "documents" / long.document_id / "refused.json").exists()
    [again] = ingest([folder / "long.md"], settings, instance)
    assert again.status == "refused" and again.message == long.message
    assert [(s.stage, s.status) for s in again.stages] == [("children", "failed")]
    # a larger budget: tried again, and indexed
    [larger] = ingest([folder / "long.md"], _with_limit(settings, max_tokens=50_000), instance)
    assert larger.status == "indexed", larger.message
    assert not (settings.store / "documents" / long.document_id / "refused.json").exists()


@pytest.mark.slow  # converts and tokenizes 9.9 M characters
def test_a_markdown_under_the_character_limit_is_refused_by_the_default_token_limit(budget_store):
    from rag_assets.orchestration.ingest_runs import ingest

    settings, instance, docs, _ = budget_store
    folder = docs.parent / "long"
    folder.mkdir()
    long_markdown(folder / "reglement.md")  # 9.9 M characters, under the 10 M-character limit
    started = time.monotonic()
    [outcome] = ingest([folder], settings, instance)
    print(f"\n9.9 M characters: {time.monotonic() - started:.1f} s [{_seconds(outcome)}] {outcome.message}")
    assert outcome.status == "refused" and "-token limit (RAG_ASSETS_MAX_TOKENS)" in outcome.message
    assert "dense_embeddings" not in [s.stage for s in outcome.stages]


# -- memory held just under the limit ------------------------------------------------------------


def test_memory_held_near_its_limit_stops_the_conversion(tmp_path):
    """Nested <div>: the reader's memory levels off under the limit; held over the plateau
    fraction for the plateau time, the conversion is stopped (small settings: any conversion
    process holds more than 5 % of 4,096 MB)."""
    from rag_assets.parsing.convert import convert_and_save_with_limit

    source = nested_html(tmp_path / "imbrique.html", size=1 * MB)
    budget = Budget(max_memory_mb=4096, memory_plateau_fraction=0.05, memory_plateau_s=2)
    started = time.monotonic()
    with pytest.raises(BudgetExceeded) as caught:
        convert_and_save_with_limit(source, source.name, tmp_path / "out", {}, 300, budget=budget)
    print(f"\n{time.monotonic() - started:.1f} s: {caught.value}")
    assert re.fullmatch(
        r"imbrique\.html: conversion held [\d,]+ MB, over 5 % of the 4,096 MB memory limit, for 2 s "
        r"\(RAG_ASSETS_MEMORY_PLATEAU_FRACTION, RAG_ASSETS_MEMORY_PLATEAU_S\); stopped",
        str(caught.value),
    ), str(caught.value)
    assert caught.value.setting == "RAG_ASSETS_MEMORY_PLATEAU_S"
    assert not (tmp_path / "out").exists()
