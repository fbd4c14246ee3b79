"""Golden question sets: JSONL, one question a line.

    {"id": "s01", "question": "…", "evidence": [{"document": "police-habitation-multirisque.pdf",
     "quote": "…verbatim…"}], "answer": "5 000 €", "question_type": "numeric", "content_type": "table",
     "trap": null, "groups": [], "language": "fr"}

* ``evidence``: documents (path relative to the collection root) and verbatim quotes;
  empty only for a question whose right behaviour is to refuse (``trap: out-of-corpus``).
* ``answer``: optional expected answer (for answer metrics, when an LLM is configured).
* ``question_type``: factual | numeric | definition | procedure | comparison | temporal | multi-hop
  | list | formula (free vocabulary; breakdowns group by it).
* ``content_type``: where the evidence lives: text | table | formula | list.
* ``trap``: null, or out-of-corpus | false-number | near-miss-term | acronym-only
  (refusal or false-premise questions: the retrieval target is the passage that shows
  the premise is wrong, if any).
* ``groups``: the reader's groups for this question (restricted documents), default none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from rag_assets.evaluation.evidence import Evidence

TRAP_KINDS = ("out-of-corpus", "false-number", "near-miss-term", "acronym-only")
CONTENT_TYPES = ("text", "table", "formula", "list")
REQUIRED = ("id", "question", "question_type", "content_type")


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    evidence: tuple[Evidence, ...]
    question_type: str
    content_type: str
    answer: str | None = None
    trap: str | None = None
    groups: tuple[str, ...] = ()
    language: str | None = None
    notes: str | None = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def judged(self) -> bool:
        """Has evidence, so retrieval metrics apply (an out-of-corpus trap has none)."""
        return bool(self.evidence)


def parse_question(raw: dict, where: str) -> Question:
    missing = [k for k in REQUIRED if not raw.get(k)]
    if missing:
        raise ValueError(f"{where}: missing {', '.join(missing)}")
    trap = raw.get("trap") or None
    if trap is not None and trap not in TRAP_KINDS:
        raise ValueError(f"{where}: trap {trap!r} is not one of {', '.join(TRAP_KINDS)}")
    if raw["content_type"] not in CONTENT_TYPES:
        raise ValueError(f"{where}: content_type {raw['content_type']!r} is not one of {', '.join(CONTENT_TYPES)}")
    evidence = []
    for item in raw.get("evidence") or []:
        if "chunk_id" in item or "parent_id" in item:
            raise ValueError(f"{where}: evidence must be document + quote, never a chunk id")
        if not item.get("document") or not item.get("quote"):
            raise ValueError(f"{where}: each evidence item needs a document and a verbatim quote")
        evidence.append(Evidence(str(item["document"]), str(item["quote"])))
    if not evidence and trap != "out-of-corpus":
        raise ValueError(f"{where}: no evidence (only an out-of-corpus trap may have none)")
    known = {
        "id",
        "question",
        "evidence",
        "answer",
        "question_type",
        "content_type",
        "trap",
        "groups",
        "language",
        "notes",
    }
    return Question(
        id=str(raw["id"]),
        question=str(raw["question"]),
        evidence=tuple(evidence),
        question_type=str(raw["question_type"]),
        content_type=str(raw["content_type"]),
        answer=raw.get("answer"),
        trap=trap,
        groups=tuple(raw.get("groups") or ()),
        language=raw.get("language"),
        notes=raw.get("notes"),
        extra={k: v for k, v in raw.items() if k not in known},
    )


def load_questions(path: Path) -> list[Question]:
    questions, seen = [], set()
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip() or line.lstrip().startswith("//"):
                continue
            question = parse_question(json.loads(line), f"{path.name}:{number}")
            if question.id in seen:
                raise ValueError(f"{path.name}:{number}: duplicate id {question.id}")
            seen.add(question.id)
            questions.append(question)
    return questions
