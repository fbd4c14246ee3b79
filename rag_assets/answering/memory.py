"""Thread memory: the messages of a conversation, kept as JSON under the knowledge store
(`answers/threads/<thread id>-<hash>.json`). The router reads the last three to turn a
follow-up into a standalone question.

Threads belong to someone. A thread records its owner — the user asking and their groups,
public included — and is stored under its id *and* that owner, so another user, or the same
user with other groups, who uses the same id gets a thread of their own, never another
reader's history; a caller without a user identity gets no memory at all (`ask`). Each
answer remembered names the documents of its sources; the history handed to the router (and
so to a model) leaves out answers drawn from a document the current reader may not see,
should a document's groups change under an existing thread.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Callable

from rag_assets.hashing import short_id
from rag_assets.index.filters import reader_groups
from rag_assets.index.records import PUBLIC_GROUP
from rag_assets.retrieve.limits import QueryRefused
from rag_assets.store import file_lock, read_json, write_json_atomic

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_MESSAGE_CHARS = 2000
MAX_ID_CHARS = 200  # a thread id or a user name: a key, not a text


def _key(value) -> str:
    """Lone surrogates (an argument the locale could not decode) made '?': no file or log line can hold them."""
    return str(value).encode("utf-8", "replace").decode("utf-8")


def identifier(value, what: str) -> str:
    """`value` (a thread id, a user) as a key (`_key`), stripped. QueryRefused, naming `what`,
    when empty or over MAX_ID_CHARS."""
    text = _key(value).strip()
    if not text:
        raise QueryRefused(f"{what} is empty")
    if len(text) > MAX_ID_CHARS:
        raise QueryRefused(f"{what} is {len(text):,} characters long, over the {MAX_ID_CHARS}-character limit")
    return text


def thread_owner(user: str, groups) -> dict:
    """Who a thread belongs to: the user and their groups, public included, sorted."""
    return {"user": identifier(user, "user"), "groups": sorted({PUBLIC_GROUP, *reader_groups(groups)})}


class ThreadStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def _path(self, thread_id: str, owner: dict) -> Path:
        thread_id = identifier(thread_id, "thread id")
        safe = _SAFE.sub("-", thread_id).strip("-.")[:60] or "thread"
        return self.root / f"{safe}-{short_id(thread_id, owner, length=12)}.json"

    def messages(self, thread_id: str, owner: dict) -> list[dict]:
        """The thread's messages, when it belongs to `owner` (else none: another reader's)."""
        path = self._path(thread_id, owner)
        if not path.exists():
            return []
        stored = read_json(path)
        return stored["messages"] if stored.get("owner") == owner else []

    def last(
        self, thread_id: str | None, owner: dict, n: int = 3, visible: Callable[[str], bool] | None = None
    ) -> list[dict]:
        """The last `n` messages `owner` may be shown: an answer drawn from a document
        `visible` refuses is left out."""
        if not thread_id:
            return []
        kept = [
            m
            for m in self.messages(thread_id, owner)
            if visible is None or all(visible(d) for d in m.get("document_ids") or [])
        ]
        return [{"role": m["role"], "content": m["content"]} for m in kept[-n:]]

    def append(self, thread_id: str | None, owner: dict, *messages: dict) -> None:
        if not thread_id:
            return
        thread_id = identifier(thread_id, "thread id")
        path = self._path(thread_id, owner)
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with file_lock(self.root / ".lock"):
            stored = self.messages(thread_id, owner)
            for message in messages:
                stored.append(
                    {
                        "role": message["role"],
                        "content": str(message["content"])[:MAX_MESSAGE_CHARS],
                        "document_ids": sorted(message.get("document_ids") or []),
                        "at": now,
                    }
                )
            write_json_atomic(path, {"thread_id": thread_id, "owner": owner, "messages": stored})


def thread_store_for(store_root: Path) -> ThreadStore:
    return ThreadStore(Path(store_root) / "answers" / "threads")
