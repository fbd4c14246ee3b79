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


def test_contracts_are_kept():
    result = _lint(PROJECT_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_dagster_import_on_the_read_side_breaks_them(tmp_path):
    shutil.copytree(PROJECT_ROOT / "rag_assets", tmp_path / "rag_assets", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    fusion = tmp_path / "rag_assets" / "retrieve" / "fusion.py"
    fusion.write_text(fusion.read_text() + "\nimport dagster  # noqa: E402,F401\n")
    result = _lint(tmp_path)
    assert result.returncode != 0
    assert "rag_assets.retrieve is not allowed to import dagster" in result.stdout
