import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def run_cli(store, *args):
    env = {**os.environ, "RAG_ASSETS_STORE": str(store)}
    return subprocess.run(
        [sys.executable, "-m", "rag_assets.cli", *args], env=env, capture_output=True, text=True, timeout=300
    )


def test_search_json_ranks_deductibles_first(sample_kb):
    settings, _, _ = sample_kb
    done = run_cli(settings.store, "search", "franchise inondation zone A", "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)
    assert "5 000" in hits[0]["text"]
    assert {"parent_id", "heading_path", "pages", "rrf_score", "ranks", "best_child"} <= set(hits[0])


def test_search_text_output_names_section_and_pages(sample_kb):
    settings, _, _ = sample_kb
    done = run_cli(settings.store, "search", "préavis résiliation MX-200", "-k", "3")
    assert done.returncode == 0, done.stderr
    assert "MX-200" in done.stdout and "fused " in done.stdout


@pytest.mark.slow  # the CLI ingesting in a subprocess
@pytest.mark.dagster_run
def test_ingest_reports_bad_file_by_name_and_fails(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    done = run_cli(tmp_path / "kb", "ingest", str(bad))
    assert done.returncode == 1
    assert "notes.txt" in done.stdout and "unsupported file type" in done.stdout


def _ingest_env(tmp_path):
    return {**os.environ, "RAG_ASSETS_STORE": str(tmp_path / "kb"), "DAGSTER_HOME": str(tmp_path / "dagster")}


@pytest.mark.slow  # the CLI ingesting in a subprocess
@pytest.mark.dagster_run
def test_ingest_piped_prints_each_stage_as_it_completes_and_a_summary_per_document(tmp_path):
    import re
    import shutil
    import time

    from rag_assets.settings import SAMPLES_DIR
    from rag_assets.versions import CODE_VERSIONS

    docs = tmp_path / "docs"
    docs.mkdir()
    names = ["contrat-maintenance-MX-200.docx", "note-interne-procedure.md"]
    for name in names:
        shutil.copy(SAMPLES_DIR / name, docs / name)
    process = subprocess.Popen(
        [sys.executable, "-m", "rag_assets.cli", "ingest", str(docs)],
        env=_ingest_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines = []  # (seconds since start, line) as they arrive through the pipe
    started = time.monotonic()
    for line in process.stdout:
        lines.append((time.monotonic() - started, line.rstrip("\n")))
    process.wait(timeout=300)
    stderr = process.stderr.read()
    assert process.returncode == 0, stderr
    text = [line for _, line in lines]
    for number, name in enumerate(sorted(names), start=1):
        stage_lines = [line for line in text if line.startswith(f"[{number}/2] {name}  ")]
        assert [line.split("  ")[1] for line in stage_lines] == list(CODE_VERSIONS), text
        assert all(re.search(r"  \d+\.\d s$", line) for line in stage_lines), stage_lines
        summary = [line for line in text if line.startswith(f"[{number}/2] indexed   ") and name in line]
        assert len(summary) == 1, text
        assert text.index(summary[0]) > text.index(stage_lines[-1])
        assert "warning" in summary[0]
    assert sum(bool(re.search(r"  children  \d+ children", line)) for line in text) == len(names), text
    assert any("docling_document  1 table" in line for line in text), text
    # Lines reach the pipe as stages complete, not all at once at the end.
    first_stage = next(t for t, line in lines if " source_document " in line)
    last_summary = max(t for t, line in lines if " indexed " in line)
    assert last_summary - first_stage > 1.0, lines


def _failed_check_run():
    """A real Dagster run stopped by a blocking check, seen through the instance event listener."""
    import uuid

    from dagster import (
        AssetCheckResult,
        AssetCheckSeverity,
        AssetCheckSpec,
        DagsterInstance,
        Definitions,
        MaterializeResult,
        asset,
        define_asset_job,
    )

    from rag_assets.orchestration.ingest_runs import RunEvents

    @asset(
        name="parents",
        check_specs=[
            AssetCheckSpec("parents_cover_body", asset="parents", blocking=True),
            AssetCheckSpec("no_table_split", asset="parents", blocking=True),
        ],
    )
    def parents():
        return MaterializeResult(
            metadata={"parents": 12},
            check_results=[
                AssetCheckResult(
                    check_name="parents_cover_body",
                    passed=False,
                    severity=AssetCheckSeverity.ERROR,
                    description='2 body items in no parent: #/texts/41 (p. 12) "Franchise …"',
                ),
                AssetCheckResult(check_name="no_table_split", passed=True, description="3 tables, each in one parent"),
            ],
        )

    @asset(name="children", deps=[parents])
    def children():
        return MaterializeResult(metadata={"children": 30})

    job = Definitions(assets=[parents, children], jobs=[define_asset_job("j")]).resolve_job_def("j")
    reports = []
    with DagsterInstance.ephemeral() as instance:
        run_id = str(uuid.uuid4())
        events = RunEvents("doc-1", Path("police.pdf"), reports.append)
        instance.add_event_listener(run_id, events)
        result = job.execute_in_process(instance=instance, raise_on_error=False, run_id=run_id)
    return result, reports


def test_a_failed_blocking_check_is_reported_by_its_description():
    from rag_assets.commands.ingest import stage_line, summary_lines
    from rag_assets.dagster_records import failed_checks, failure_message
    from rag_assets.orchestration.ingest_runs import IngestOutcome

    result, reports = _failed_check_run()
    assert not result.success
    description = 'parents_cover_body: 2 body items in no parent: #/texts/41 (p. 12) "Franchise …"'
    assert failure_message(result.all_events) == description
    assert [(r.stage, r.status, r.message) for r in reports] == [("parents", "failed", description)]
    assert stage_line(reports[0], 1, 1).startswith(f"[1/1] police.pdf  parents  FAILED: {description}, 12 parents")
    outcome = IngestOutcome(
        "doc-1",
        Path("police.pdf"),
        "failed",
        failure_message(result.all_events),
        failed_checks=failed_checks(result.all_events),
        metadata={"parents": reports[0].metadata},
    )
    lines = summary_lines(outcome, 1, 1)
    assert lines[0].startswith("[1/1] failed    police.pdf  0 warnings")
    assert lines[1] == f"          error: {description}"


def test_stage_and_summary_lines_show_the_figures_present_and_skip_the_rest():
    from rag_assets.commands.ingest import stage_line, summary_lines
    from rag_assets.orchestration.ingest_runs import IngestOutcome, StageReport

    full = {
        "pages": 70,
        "tables": 14,
        "ocr_pages": 0,
        "repaired_pages": 2,
        "tokens_per_page": 412.4,
        "warnings": ["p. 3: garbled text layer, OCR'd", "p. 9: font repaired"],
        "seconds": 40.0,
    }
    report = StageReport("d", Path("/x/maif_auto-moto-vam_2016.pdf"), "docling_document", "done", 41.23, full)
    assert stage_line(report, 3, 12) == (
        "[3/12] maif_auto-moto-vam_2016.pdf  docling_document  70 pages, 14 tables, "
        "0 OCR'd pages, 2 repaired pages, 412 tokens/page, 2 warnings  41.2 s"
    )
    bare = StageReport("d", Path("a.md"), "docling_document", "done", None, {})
    assert stage_line(bare, 1, 1) == "[1/1] a.md  docling_document  done"
    outcome = IngestOutcome(
        "d",
        Path("/x/maif.pdf"),
        "indexed",
        metadata={"docling_document": full, "parents": {"parents": 9, "tables": 99}},
    )
    lines = summary_lines(outcome, 3, 12)
    assert lines[0] == (
        "[3/12] indexed   /x/maif.pdf  70 pages, 14 tables, 0 OCR'd pages, 2 repaired pages, "
        "2 warnings, 412 tokens/page  [d]"
    )
    assert lines[1:] == ["          warning: p. 3: garbled text layer, OCR'd", "          warning: p. 9: font repaired"]
    markdown = IngestOutcome("d", Path("b.md"), "unchanged", metadata={"source_document": {"warnings": "- renamed"}})
    assert summary_lines(markdown, 1, 1) == ["[1/1] unchanged b.md  1 warning  [d]", "          warning: renamed"]
