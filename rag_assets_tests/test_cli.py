import json
import os
import subprocess
import sys


def run_cli(store, *args):
    env = {**os.environ, "RAG_ASSETS_STORE": str(store)}
    return subprocess.run([sys.executable, "-m", "rag_assets.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


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
    assert "MX-200" in done.stdout and "RRF" in done.stdout


def test_ingest_reports_bad_file_by_name_and_fails(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello")
    done = run_cli(tmp_path / "kb", "ingest", str(bad))
    assert done.returncode == 1
    assert "notes.txt" in done.stdout and "unsupported file type" in done.stdout
