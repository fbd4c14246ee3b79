"""Each Docling conversion runs in a process of its own, forked from a warm fork server,
and is stopped at its time limit (real processes, real conversions)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from rag_assets.errors import DocumentError
from rag_assets.parsing.convert import (
    DOCUMENT_FILE,
    MANIFEST_FILE,
    convert_and_save,
    convert_and_save_with_limit,
    start_conversion_server,
)
from rag_assets.settings import SAMPLES_DIR
from rag_assets_tests.support.stores import make_settings

SAMPLE_PDF = SAMPLES_DIR / "police-habitation-multirisque.pdf"
SAMPLE_DOCX = SAMPLES_DIR / "contrat-maintenance-MX-200.docx"
SAMPLE_MD = SAMPLES_DIR / "note-interne-procedure.md"


@pytest.fixture(scope="module", autouse=True)
def conversion_server():
    """The fork server imports Docling once (seconds); the limits below count from a warm start."""
    start_conversion_server()


def _long_pdf(path: Path, pages: int = 300) -> Path:
    """A text PDF whose conversion takes far longer than the limits used here (40 pages: ~6 s)."""
    from fpdf import FPDF

    pdf = FPDF(format="A4", unit="pt")
    for number in range(1, pages + 1):
        pdf.add_page()
        pdf.set_font("Helvetica", style="B", size=14)
        pdf.cell(0, 24, f"Article {number} - Garanties et franchises", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("Helvetica", size=10)
        for line in range(40):
            pdf.cell(
                0,
                14,
                f"Ligne {line} de l'article {number} : la franchise applicable au sinistre est de "
                f"{150 + line} euros par evenement.",
                new_x="LMARGIN",
                new_y="NEXT",
            )
    pdf.output(str(path))
    return path


def _process_tree_below(pid: int) -> dict[int, int]:
    """{process: its parent} of the processes descending from `pid` (from /proc): our fork
    server, the conversions it forked and what they run."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = {}, [pid]
    while frontier:
        children = [p for p, parent in parents.items() if parent in frontier]
        found.update((child, parents[child]) for child in children)
        frontier = children
    return found


@pytest.mark.slow  # converts in child processes, up to their time limit
def test_conversion_over_the_limit_is_stopped_with_file_and_limit(tmp_path):
    source = _long_pdf(tmp_path / "reglement-long.pdf")
    out_dir = tmp_path / "docling"
    before = set(_process_tree_below(os.getpid()))
    started = time.monotonic()
    with pytest.raises(DocumentError) as caught:
        convert_and_save_with_limit(source, "reglement-long.pdf", out_dir, {}, timeout_s=0.5)
    elapsed = time.monotonic() - started
    assert str(caught.value) == (
        "reglement-long.pdf: conversion took longer than the 0.5 s limit (RAG_ASSETS_CONVERT_TIMEOUT_S); stopped"
    )
    assert elapsed < 0.5 + 3, f"stopped {elapsed:.1f} s after the start"
    assert set(_process_tree_below(os.getpid())) == before  # the conversion process is gone
    assert not out_dir.exists() and not out_dir.with_name("docling.staging").exists()


@pytest.mark.slow  # converts in child processes, up to their time limit
def test_normal_documents_convert_as_in_process(tmp_path):
    for source in (SAMPLE_PDF, SAMPLE_DOCX):
        child_dir, here_dir = tmp_path / "child" / source.name, tmp_path / "here" / source.name
        provenance = {"document_id": source.name, "source_sha256": "abc"}
        manifest = convert_and_save_with_limit(source, source.name, child_dir, provenance, timeout_s=300)
        expected = convert_and_save(source, source.name, here_dir, provenance).manifest
        assert (child_dir / DOCUMENT_FILE).read_bytes() == (here_dir / DOCUMENT_FILE).read_bytes(), source.name
        assert json.loads((child_dir / MANIFEST_FILE).read_text()) == manifest
        assert {k: v for k, v in manifest.items() if k != "seconds"} == {
            k: v for k, v in expected.items() if k != "seconds"
        }
        assert sorted(p.relative_to(child_dir) for p in child_dir.rglob("*")) == sorted(
            p.relative_to(here_dir) for p in here_dir.rglob("*")
        )


def test_errors_raised_in_the_child_come_back_unchanged(tmp_path):
    empty = tmp_path / "vide.html"
    empty.write_text("<html><body></body></html>")
    with pytest.raises(DocumentError) as in_process:
        convert_and_save(empty, "vide.html", tmp_path / "here", {})
    with pytest.raises(DocumentError) as in_child:
        convert_and_save_with_limit(empty, "vide.html", tmp_path / "child", {}, timeout_s=300)
    assert type(in_child.value) is DocumentError
    assert str(in_child.value) == str(in_process.value) == "vide.html: document converted to nothing: no text"
    assert (in_child.value.path, in_child.value.reason) == (in_process.value.path, in_process.value.reason)
    assert "Traceback" in str(in_child.value.__cause__)  # the child's traceback, for the logs


def test_a_conversion_process_that_dies_is_reported_with_its_signal(tmp_path):
    source = _long_pdf(tmp_path / "crash.pdf")
    before = _process_tree_below(os.getpid())  # the fork server is running (fixture)

    def kill_the_conversion():  # as the OOM killer would
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the new process forked by a process that was there
            new = [p for p, parent in _process_tree_below(os.getpid()).items() if p not in before and parent in before]
            if new:
                time.sleep(0.3)
                os.kill(new[-1], signal.SIGKILL)
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_conversion)
    killer.start()
    with pytest.raises(DocumentError) as caught:
        convert_and_save_with_limit(source, "crash.pdf", tmp_path / "docling", {}, timeout_s=120)
    killer.join()
    assert str(caught.value) == "crash.pdf: conversion process died (signal 9)"


def test_record_collections_are_converted_in_process(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "title": "Franchise", "text": "La franchise est de 150 euros."}\n')
    before = set(_process_tree_below(os.getpid()))
    manifest = convert_and_save_with_limit(corpus, "corpus.jsonl", tmp_path / "docling", {}, timeout_s=1e-6)
    assert manifest["tables"] == 0 and (tmp_path / "docling" / DOCUMENT_FILE).exists()
    assert set(_process_tree_below(os.getpid())) == before  # no conversion process


@pytest.mark.slow  # converts in child processes, up to their time limit
@pytest.mark.dagster_run
def test_ingest_one_document_over_the_limit_fails_alone(tmp_path):
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance

    docs = tmp_path / "docs"
    docs.mkdir()
    _long_pdf(docs / "reglement-long.pdf")
    shutil.copy(SAMPLE_MD, docs / SAMPLE_MD.name)
    settings = make_settings(tmp_path).model_copy(update={"convert_timeout_s": 5})
    with open_instance(settings) as instance:
        started = time.monotonic()
        outcomes = {o.path.name: o for o in ingest([docs], settings, instance)}
        elapsed = time.monotonic() - started
    slow, fast = outcomes["reglement-long.pdf"], outcomes[SAMPLE_MD.name]
    assert slow.status == "refused"  # over a budget (time)
    assert slow.message == (
        "reglement-long.pdf: conversion took longer than the 5 s limit (RAG_ASSETS_CONVERT_TIMEOUT_S); stopped"
    )
    assert [(s.stage, s.status) for s in slow.stages] == [("source_document", "done"), ("docling_document", "failed")]
    assert fast.status == "indexed", fast.message
    assert elapsed < 120
