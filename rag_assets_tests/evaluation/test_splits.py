from collections import Counter
from types import SimpleNamespace

import pytest

from rag_assets.evaluation import targets
from rag_assets.evaluation.questions import load_questions
from rag_assets.evaluation.splits import in_split, queries_in_split, split_of


def test_split_is_fixed_by_the_question_number():
    assert [split_of(q) for q in ("gi001", "gi002", "s13", "x")] == ["dev", "test", "dev", "test"]
    questions = [SimpleNamespace(id=f"q{i}") for i in range(1, 7)]
    assert [q.id for q in in_split(questions, "dev")] == ["q1", "q3", "q5"]
    assert len(in_split(questions, "")) == 6
    with pytest.raises(ValueError):
        in_split(questions, "train")


def _sides(name: str) -> dict[str, Counter]:
    sides: dict[str, Counter] = {}
    for question in load_questions(targets.GOLDEN[name].questions_path):
        document = question.evidence[0].document if question.evidence else "(none)"
        sides.setdefault(document, Counter())[split_of(question.id)] += 1
    return sides


@pytest.mark.parametrize("name", sorted(targets.GOLDEN))
def test_every_document_with_two_questions_is_on_both_sides(name):
    assert all(c["dev"] and c["test"] for c in _sides(name).values() if c.total() >= 2), _sides(name)


def test_golden_insurance_is_balanced_document_by_document():
    """The sets are written document by document, so alternation stratifies: dev and test
    differ by at most 2 questions for each of the 12 real PDFs."""
    assert all(abs(c["dev"] - c["test"]) <= 2 for c in _sides("golden-insurance").values())


def test_benchmark_queries_are_numbered_by_their_position():
    """Benchmark ids are no sequence numbers (PIAF's are memory addresses, all even): a
    query's number is its line among the judged queries, so both sides get half."""
    ids = ["p140295443291376", "p140295460356960", "p140295443291808", "p140295460357608", "p1402"]
    assert queries_in_split(ids, "dev") == ids[0::2]
    assert queries_in_split(ids, "test") == ids[1::2]
    assert queries_in_split(ids) == ids
    with pytest.raises(ValueError):
        queries_in_split(ids, "train")
