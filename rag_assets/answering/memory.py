"""Thread memory: the messages of a conversation, per `thread_id`, kept as JSON under
the knowledge store (`answers/threads/<thread id>.json`). The router reads the last
three to turn a follow-up into a standalone question."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from rag_assets.hashing import short_id
from rag_assets.store import file_lock, read_json, write_json_atomic

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
MAX_MESSAGE_CHARS = 2000


class ThreadStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def _path(self, thread_id: str) -> Path:
        safe = _SAFE.sub("-", thread_id).strip("-.")[:60] or "thread"
        return self.root / f"{safe}-{short_id(thread_id, length=8)}.json"

    def messages(self, thread_id: str) -> list[dict]:
        path = self._path(thread_id)
        return read_json(path)["messages"] if path.exists() else []

    def last(self, thread_id: str | None, n: int = 3) -> list[dict]:
        return self.messages(thread_id)[-n:] if thread_id else []

    def append(self, thread_id: str | None, *messages: dict) -> None:
        if not thread_id:
            return
        path = self._path(thread_id)
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with file_lock(self.root / ".lock"):
            stored = self.messages(thread_id)
            for message in messages:
                stored.append({"role": message["role"], "content": str(message["content"])[:MAX_MESSAGE_CHARS],
                               "at": now})
            write_json_atomic(path, {"thread_id": thread_id, "messages": stored})


def thread_store_for(store_root: Path) -> ThreadStore:
    return ThreadStore(Path(store_root) / "answers" / "threads")
