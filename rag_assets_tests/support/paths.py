"""Where the project and the real documents of ../shared are, and the golden-file rewrite switch."""

from __future__ import annotations

from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
SHARED = PROJECT_ROOT.parent / "shared"
UPDATE_GOLDEN = "RAG_ASSETS_UPDATE_GOLDEN"  # rewrite golden files instead of comparing (parsing/test_golden_pages.py)


def refuse_golden_update_in_ci(environ) -> None:
    """In CI a rewritten golden file would pass whatever the product does: stop the run instead."""
    if environ.get(UPDATE_GOLDEN) and environ.get("CI", "").lower() not in ("", "0", "false"):
        raise pytest.UsageError(
            f"{UPDATE_GOLDEN} is set in CI (CI={environ['CI']}): golden files are rewritten on a developer's "
            "machine and the diff reviewed, never in CI"
        )
