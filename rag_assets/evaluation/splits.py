"""The fixed dev/test split of every golden question set: anything tuned (fusion weights,
answer thresholds, which retrieval component stays on) is chosen on dev; figures are
reported on test.

dev = odd question numbers, test = even ones. Fixed by the ids, so a question keeps its
side whatever is added later; the sets are written document by document, so alternation
also balances each document (golden-insurance: at most 2 questions apart per document,
checked by rag_assets_tests/evaluation/test_splits.py).
"""

from __future__ import annotations

import re

SPLITS = ("dev", "test")


def _number(qid: str) -> int | None:
    digits = re.findall(r"\d+", qid)
    return int(digits[-1]) if digits else None


def split_of(qid: str) -> str:
    number = _number(qid)
    return "dev" if number is not None and number % 2 else "test"


def check_split(split: str) -> str:
    if split and split not in SPLITS:
        raise ValueError(f"split must be dev or test, not {split!r}")
    return split


def in_split(questions: list, split: str = "") -> list:
    """The questions (anything with an ``id``) of ``split``; all of them for ""."""
    check_split(split)
    return [q for q in questions if not split or split_of(q.id) == split]
