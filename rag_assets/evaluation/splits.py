"""The fixed dev/test split of every golden question set and benchmark: anything tuned
(fusion weights, answer thresholds, which retrieval component stays on) is chosen on dev;
figures are reported on test.

dev = odd question numbers, test = even ones. A golden question's number is the one in its
id (gi001), so a question keeps its side whatever is added later; the sets are written
document by document, so alternation also balances each document (golden-insurance: at most
2 questions apart per document, checked by rag_assets_tests/evaluation/test_splits.py).
A benchmark query's number is its line among the benchmark's judged queries, in the
published file's order: benchmark ids are no sequence numbers (PIAF's are memory addresses,
all multiples of 8, so parity would put every query in test).
"""

from __future__ import annotations

import re

SPLITS = ("dev", "test")


def _number(qid: str) -> int | None:
    digits = re.findall(r"\d+", qid)
    return int(digits[-1]) if digits else None


def _side(number: int | None) -> str:
    return "dev" if number is not None and number % 2 else "test"


def split_of(qid: str) -> str:
    return _side(_number(qid))


def check_split(split: str) -> str:
    if split and split not in SPLITS:
        raise ValueError(f"split must be dev or test, not {split!r}")
    return split


def in_split(questions: list, split: str = "") -> list:
    """The questions (anything with an ``id``) of ``split``; all of them for ""."""
    check_split(split)
    return [q for q in questions if not split or split_of(q.id) == split]


def queries_in_split(ids: list[str], split: str = "") -> list[str]:
    """A benchmark's judged query ids, given in the published file's order, that fall in
    ``split`` (numbered by position, 1-based); all of them for ""."""
    check_split(split)
    return [qid for number, qid in enumerate(ids, start=1) if not split or _side(number) == split]
