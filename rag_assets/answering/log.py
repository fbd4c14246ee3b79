"""Every answer is logged as one JSON line under the knowledge store
(`answers/log.jsonl`): question, route, sub-questions, parent ids, sources, model and
endpoint, latency, token usage, verdicts and alerts."""

from __future__ import annotations

import json
from pathlib import Path

from rag_assets.answering.model import Answer
from rag_assets.store import file_lock


def log_path_for(store_root: Path) -> Path:
    return Path(store_root) / "answers" / "log.jsonl"


# a log keeps a bounded prefix of what was asked, whatever was asked
LOGGED_QUESTION_CHARS = 500


def _prefix(text: str | None) -> str | None:
    if text is None or len(text) <= LOGGED_QUESTION_CHARS:
        return text
    return text[:LOGGED_QUESTION_CHARS] + f"… [{len(text):,} characters]"


def log_record(answer: Answer) -> dict:
    return {
        "answer_id": answer.answer_id,
        "at": answer.created_at,
        "thread_id": answer.thread_id,
        "memory": answer.memory,
        "question": _prefix(answer.question),
        "route": {
            "kind": answer.route.kind,
            "intent": answer.route.intent,
            "method": answer.route.method,
            "standalone_question": _prefix(answer.route.standalone_question),
            "rewritten": answer.route.rewritten,
            "budget": answer.route.budget,
        },
        "sub_questions": [
            {
                "text": _prefix(s.text),
                "status": s.status,
                "queries": [_prefix(q) for q in s.queries],
                "best_score": s.best_score,
                "parent_ids": s.parent_ids,
            }
            for s in answer.sub_questions
        ],
        "parent_ids": list(dict.fromkeys(s.parent_id for s in answer.sources)),
        "sources": [{"source_id": s.source_id, "name": s.name} for s in answer.sources],
        "cited": [s.source_id for s in answer.cited],
        "mode": answer.mode,
        "model": answer.model,
        "endpoint": answer.endpoint,
        "attempts": answer.attempts,
        "latency_s": answer.latency_s,
        "usage": answer.usage,
        "verdicts": [
            {
                "paragraph": n,
                "verdict": p.verdict,
                "source_ids": p.source_ids,
                "quote_found": p.quote_found,
                "unsupported_numbers": p.unsupported_numbers,
            }
            for n, p in enumerate(answer.paragraphs, 1)
        ],
        "missing_information": answer.missing_information,
        "alerts": answer.alerts,
        "answer": answer.text,
    }


class AnswerLog:
    def __init__(self, path: Path):
        self.path = Path(path)

    def write(self, answer: Answer) -> dict:
        record = log_record(answer)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, ensure_ascii=False, default=str)
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
        return record

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]
