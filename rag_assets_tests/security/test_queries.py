"""Issue 13, probe 5: a 100 KB query took 43 s to search and 84 s to ask and was logged in
full; an empty query returned five arbitrary hits; a lone surrogate raised
UnicodeEncodeError. Questions are now checked and cleaned before either engine."""

from __future__ import annotations

import time

import pytest

from rag_assets.answering.log import LOGGED_QUESTION_CHARS, AnswerLog, log_path_for
from rag_assets.retrieve.limits import QueryRefused, checked_question, clean_question
from rag_assets.settings import load_settings

HUGE = ("franchise inondation zone A " * 4000)[: 100 * 1024]  # 100 KB


def test_a_100_kb_question_is_refused_at_once():
    started = time.perf_counter()
    with pytest.raises(
        QueryRefused,
        match=r"102,400 characters long, over the 2,000-character limit "
        r"\(RAG_ASSETS_MAX_QUERY_CHARS\)",
    ):
        checked_question(HUGE)
    print(f"\n100 KB question refused in {(time.perf_counter() - started) * 1000:.2f} ms")


@pytest.mark.parametrize("question", ["", "   ", "\u200b\u200d\ufeff", "\x00\x1b", None])
def test_an_empty_question_is_refused(question):
    with pytest.raises(QueryRefused, match="question is empty"):
        checked_question(question)


def test_too_many_words_are_refused():
    with pytest.raises(QueryRefused, match=r"201 words, over the 200-word limit \(RAG_ASSETS_MAX_QUERY_TERMS\)"):
        checked_question("mot " * 201)
    settings = load_settings().model_copy(update={"max_query_terms": 500, "max_query_chars": 5000})
    assert checked_question("mot " * 201, settings) == ("mot " * 201).strip()


def test_questions_are_cleaned_before_the_engines():
    assert clean_question("franchise \ud800inondation") == "franchise inondation"  # lone surrogate
    assert clean_question("fran\u200bchise\u00ad zone\u202eA") == "franchise zoneA"  # invisible characters
    assert clean_question("franchise\x1b[31m\nzone\tA") == "franchise [31m zone A"  # control characters
    assert clean_question("e\u0301te\u0301") == "été"  # NFC


def test_the_knowledge_base_and_ask_refuse_and_clean(kb):
    for call in (lambda: kb.search(HUGE), lambda: kb.ask(HUGE, offline=True)):
        started = time.perf_counter()
        with pytest.raises(QueryRefused, match="over the 2,000-character limit"):
            call()
        print(f"\n100 KB question refused by the knowledge base in {(time.perf_counter() - started) * 1000:.2f} ms")
    with pytest.raises(QueryRefused, match="question is empty"):
        kb.search("")
    with pytest.raises(QueryRefused, match="question is empty"):
        kb.ask("  \u200b ", offline=True)
    hits = kb.search("franchise \ud800inondation zone A", k=3)  # once a UnicodeEncodeError
    assert hits and "Franchise" in " ".join(hits[0].heading_path + [hits[0].text])


def test_the_answer_log_keeps_a_bounded_prefix_of_the_question(kb):
    question = "Quelle est la franchise pour une inondation en zone A" + " indemnisation" * 40 + " ?"
    assert len(question) > LOGGED_QUESTION_CHARS
    answer = kb.ask(question, offline=True)
    record = next(
        r for r in reversed(AnswerLog(log_path_for(kb.store.root)).read()) if r["answer_id"] == answer.answer_id
    )
    assert record["question"].startswith(question[:LOGGED_QUESTION_CHARS])
    assert len(record["question"]) < LOGGED_QUESTION_CHARS + 40 and record["question"] != question


@pytest.mark.parametrize("command", [["search"], ["ask", "--offline"]])
def test_the_cli_refuses_before_opening_anything(command, tmp_path, capsys):
    from rag_assets.cli import main

    store = tmp_path / "no-store"
    assert main(["--store", str(store), command[0], HUGE, *command[1:]]) == 2
    assert "refused: question is 102,400 characters long" in capsys.readouterr().err
    assert not store.exists()  # neither the engines nor a model were loaded
