"""The import contracts of pyproject.toml ([tool.importlinter]) hold, and they bite."""

import shutil
import subprocess
import sys
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT), "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )


def _lint_with(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess:
    """The contracts checked on a copy of the package where ``module`` (a path under
    rag_assets/, created if absent) ends with ``line``."""
    shutil.copytree(PROJECT_ROOT / "rag_assets", tmp_path / "rag_assets", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    path = tmp_path / "rag_assets" / module
    path.write_text((path.read_text() if path.exists() else "") + f"\n{line}  # noqa: E402,F401\n")
    return _lint(tmp_path)


def test_contracts_are_kept():
    result = _lint(PROJECT_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_dagster_import_on_the_read_side_breaks_them(tmp_path):
    result = _lint_with(tmp_path, "retrieve/fusion.py", "import dagster")
    assert result.returncode != 0
    assert "rag_assets.retrieve is not allowed to import dagster" in result.stdout


def test_an_import_of_a_higher_layer_is_a_cycle_and_breaks_them(tmp_path):
    # answering reads retrieve: retrieve reading answering closes a cycle
    result = _lint_with(tmp_path, "retrieve/fusion.py", "import rag_assets.answering.ask")
    assert result.returncode != 0
    assert "rag_assets.retrieve is not allowed to import rag_assets.answering" in result.stdout
    assert ".retrieve -> .answering" in result.stdout  # the acyclic contract names the import to remove


def test_the_write_side_importing_the_read_side_breaks_them(tmp_path):
    result = _lint_with(tmp_path, "ingest/stages.py", "import rag_assets.retrieve.query")
    assert result.returncode != 0
    assert "rag_assets.ingest is not allowed to import rag_assets.retrieve" in result.stdout


def test_the_read_side_importing_the_write_side_breaks_them(tmp_path):
    result = _lint_with(tmp_path, "retrieve/fusion.py", "import rag_assets.parsing.convert")
    assert result.returncode != 0
    assert "rag_assets.retrieve is not allowed to import rag_assets.parsing" in result.stdout


def test_a_top_level_module_left_out_of_the_layers_breaks_them(tmp_path):
    result = _lint_with(tmp_path, "unplaced.py", "import rag_assets.errors")
    assert result.returncode != 0
    assert "- rag_assets.unplaced" in result.stdout


def test_celery_runs_importing_ingest_runs_is_a_cycle_and_breaks_them(tmp_path):
    result = _lint_with(tmp_path, "orchestration/celery_runs.py", "import rag_assets.orchestration.ingest_runs")
    assert result.returncode != 0
    assert "rag_assets.orchestration.celery_runs -> rag_assets.orchestration.ingest_runs" in result.stdout


def test_a_definition_importing_what_drives_it_is_a_cycle_and_breaks_them(tmp_path):
    # orchestration runs the definitions: a definition reading orchestration closes a cycle
    result = _lint_with(tmp_path, "defs/ingestion/jobs.py", "import rag_assets.orchestration.planner")
    assert result.returncode != 0
    assert "rag_assets.defs is not allowed to import rag_assets.orchestration" in result.stdout


def test_dagster_in_benchmarking_beside_the_instance_benchmark_breaks_them(tmp_path):
    result = _lint_with(tmp_path, "benchmarking/plot.py", "import dagster")
    assert result.returncode != 0
    assert "rag_assets.benchmarking is not allowed to import dagster" in result.stdout
