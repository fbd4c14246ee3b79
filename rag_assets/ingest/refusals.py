"""Documents refused for a budget: not tried again until they or the budget change.

A conversion over one of its limits (pages, page size, characters, archive expansion,
memory, time) costs up to that limit every time it is tried; a nightly re-index would pay
it forever. The refusal is recorded beside the document's artifacts,

    <store>/documents/<document_id>/refused.json   sha256 of the file, the budget, the message

and the source stage fails at once with the same message while the file's bytes, the
budget and the conversion code are those recorded. A changed file, budget or conversion
code (which may need less: see PAGES_IN_FLIGHT) is tried again.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from rag_assets.errors import BudgetExceeded
from rag_assets.parsing.budget import PAGES_IN_FLIGHT
from rag_assets.store import KnowledgeStore, read_json, write_json_atomic
from rag_assets.versions import CODE_VERSIONS

REFUSED_FILE = "refused.json"


def budget_of(settings) -> dict:
    """Every limit a conversion ran under, and the code that ran: a change to any of them is a
    reason to try again."""
    return {
        **settings.budget.model_dump(),
        "convert_timeout_s": settings.convert_timeout_s,
        "pages_in_flight": PAGES_IN_FLIGHT,
        "code_version": CODE_VERSIONS["docling_document"],
    }


def refusal_path(store: KnowledgeStore, document_id: str) -> Path:
    return store.document_dir(document_id) / REFUSED_FILE


def record_refusal(store: KnowledgeStore, document_id: str, sha256: str, settings, exc: BudgetExceeded) -> None:
    write_json_atomic(
        refusal_path(store, document_id),
        {
            "sha256": sha256,
            "budget": budget_of(settings),
            "message": str(exc),
            "file": exc.path,
            "reason": exc.reason,
            "setting": exc.setting,
            "limit": exc.limit,
            "value": exc.value,
            "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        },
    )


def standing_refusal(store: KnowledgeStore, document_id: str, sha256: str, settings) -> BudgetExceeded | None:
    """The recorded refusal when it still applies (same bytes, same budget), else None."""
    path = refusal_path(store, document_id)
    if not path.exists():
        return None
    refusal = read_json(path)
    if refusal.get("sha256") != sha256 or refusal.get("budget") != budget_of(settings):
        return None
    return BudgetExceeded(
        refusal["file"],
        refusal["reason"],
        setting=refusal.get("setting", ""),
        limit=refusal.get("limit"),
        value=refusal.get("value"),
    )


def clear_refusal(store: KnowledgeStore, document_id: str) -> None:
    refusal_path(store, document_id).unlink(missing_ok=True)
