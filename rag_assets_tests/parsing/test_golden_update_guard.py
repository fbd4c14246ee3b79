"""The golden-file rewrite (RAG_ASSETS_UPDATE_GOLDEN) is refused when CI is set: a rewritten golden
file passes whatever the product does, so in CI it would hide every regression of the PDF stages."""

from __future__ import annotations

import os
import subprocess
import sys

from rag_assets_tests.support.paths import PROJECT_ROOT, UPDATE_GOLDEN


def _collect(**env: str) -> subprocess.CompletedProcess:
    """pytest started as CI starts it, collecting this module only (the check comes before collection)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", UPDATE_GOLDEN)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--collect-only", "-p", "no:cacheprovider", __file__],
        cwd=PROJECT_ROOT,
        env={**environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_golden_update_in_ci_stops_the_run() -> None:
    result = _collect(CI="true", **{UPDATE_GOLDEN: "1"})
    assert result.returncode == 4, result.stdout + result.stderr  # pytest's usage error
    assert f"{UPDATE_GOLDEN} is set in CI" in result.stderr


def test_golden_update_outside_ci_and_ci_without_it_run() -> None:
    for env in ({UPDATE_GOLDEN: "1"}, {"CI": "true"}, {"CI": "false", UPDATE_GOLDEN: "1"}):
        result = _collect(**env)
        assert result.returncode == 0, (env, result.stdout + result.stderr)
