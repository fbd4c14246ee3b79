"""Issue 13, probe 1: restricted text leaked through thread memory. A `claims` reader asked
in thread t1; a reader without the group continued t1 and, with a model configured, the
restricted answer went to the model as history and came back in the second reader's
rewritten question and answer. Threads now belong to their owner (the reader's groups).

Then two users with the same groups continuing the same thread id shared its memory (Bob's
"Et en zone B ?" was rewritten with Alice's address), and their appends interleaved in one
file; a lone-surrogate thread id crashed `ask`. A thread now belongs to a user *and* their
groups; a caller naming no user gets no memory, and is told."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys

import pytest

from rag_assets.answering import ask
from rag_assets.answering.log import AnswerLog, log_path_for
from rag_assets.answering.memory import MAX_ID_CHARS, ThreadStore, identifier, thread_owner
from rag_assets.retrieve.limits import QueryRefused
from rag_assets_tests.answering.openai_stub import (
    ScriptedOpenAI,
    allowed_ids,
    catalogue,
    retrieve_route,
    scripted_endpoint,
)
from rag_assets_tests.support.paths import PROJECT_ROOT

RESTRICTED_TITLE = "Procédure de déclaration des sinistres climatiques"  # allowed_groups: [claims]
RESTRICTED_TEXT = (
    "Une expertise est missionnée dès que le montant estimé des dommages dépasse le seuil de délégation du gestionnaire"
)
MARKERS = [RESTRICTED_TITLE, "seuil de délégation", "visioexpertise", "expertise est missionnée"]
ADDRESS = "12 rue des Lilas, 44000 Nantes"
ZONE_A = "Quelle est la franchise pour une inondation en zone A ?"


def echo_route(body: dict) -> dict:
    """A model that rewrites the follow-up with everything the thread gave it: whatever
    history reaches it comes back in the standalone question."""
    user = body["messages"][-1]["content"]
    return {
        "json": {
            "kind": "retrieve",
            "standalone_question": " ".join(user.split())[-1500:],
            "sub_questions": [" ".join(user.split())[-1500:]],
            "need": "targeted",
        }
    }


def answer_from_first_source(body: dict) -> dict:
    """Cites the first source offered, quoting its name (so the answer holds what it was given)."""
    ids = allowed_ids(body)
    names = catalogue(body)
    return {
        "json": {
            "paragraphs": [{"sub_question": 1, "text": f"D'après {names[ids[0]]}.", "source_ids": [ids[0]]}],
            "missing_information": [],
        }
    }


def answer_restricted(body: dict) -> dict:
    restricted = next(i for i, name in catalogue(body).items() if RESTRICTED_TITLE in name)
    return {
        "json": {
            "paragraphs": [{"sub_question": 1, "text": RESTRICTED_TEXT + ".", "source_ids": [restricted]}],
            "missing_information": [],
        }
    }


def verify_any(body: dict) -> dict:
    source = body["response_format"]["json_schema"]["schema"]["properties"]["checks"]["items"]["properties"][
        "source_id"
    ]["enum"][0]
    return {"json": {"checks": [{"paragraph": 1, "verdict": "supported", "source_id": source, "quote": "x"}]}}


def test_another_reader_continuing_a_thread_never_sees_its_restricted_history(kb, tmp_path):
    thread = f"t1-{tmp_path.name}"
    question = "Quand une expertise est-elle missionnée pour un sinistre climatique ?"
    script = {"route": [retrieve_route(question)], "answer": [answer_restricted], "verify": [verify_any]}
    with ScriptedOpenAI(script) as server:
        first = ask(
            kb, question, thread_id=thread, user_groups=["claims"], user="alice", endpoints=[scripted_endpoint(server)]
        )
    assert RESTRICTED_TEXT in first.text  # the claims reader got the restricted answer, remembered in t1

    script = {"route": [echo_route], "answer": [answer_from_first_source], "verify": [verify_any]}
    with ScriptedOpenAI(script) as server:
        second = ask(
            kb,
            "Et en période de crise ?",
            thread_id=thread,
            user_groups=[],
            user="alice",
            endpoints=[scripted_endpoint(server)],
        )
        carried = json.dumps(server.requests, ensure_ascii=False)
    received = json.dumps(second.to_dict(), ensure_ascii=False, default=str)
    assert server.requests, "the second reader's ask went to the model"
    for marker in MARKERS:
        assert marker not in carried, f"{marker!r} sent to the model for a reader without the group"
        assert marker not in received, f"{marker!r} returned to a reader without the group"
    assert "(aucun)" in server.requests[0]["messages"][-1]["content"]  # a thread of its own: no history

    # the owner continues t1 with its history
    script = {"route": [echo_route], "answer": [answer_from_first_source], "verify": [verify_any]}
    with ScriptedOpenAI(script) as server:
        ask(
            kb,
            "Et en période de crise ?",
            thread_id=thread,
            user_groups=["claims"],
            user="alice",
            endpoints=[scripted_endpoint(server)],
        )
        assert RESTRICTED_TEXT in server.requests[0]["messages"][-1]["content"]


def test_a_thread_is_stored_under_its_owner_and_filtered_to_what_the_reader_may_see(tmp_path):
    threads = ThreadStore(tmp_path)
    claims, public = thread_owner("alice", ["claims"]), thread_owner("alice", None)
    assert claims == {"user": "alice", "groups": ["claims", "public"]} and public["groups"] == ["public"]
    assert thread_owner("alice", "claims") == claims
    threads.append(
        "t1",
        claims,
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "restricted answer", "document_ids": ["doc-claims"]},
        {"role": "assistant", "content": "public answer", "document_ids": ["doc-public"]},
    )
    assert threads.last("t1", public) == []  # same id, other groups: another thread
    assert threads.last("t1", thread_owner("bob", ["claims"])) == []  # same id and groups, another user
    assert [m["content"] for m in threads.last("t1", claims)] == ["q", "restricted answer", "public answer"]
    # should a document's groups change under a thread, its answers are left out of the history
    visible = {"doc-public": True, "doc-claims": False}.get
    assert [m["content"] for m in threads.last("t1", claims, visible=visible)] == ["q", "public answer"]


def test_two_users_with_the_same_groups_continuing_one_thread_id_share_nothing(kb, tmp_path):
    thread = f"foyer-{tmp_path.name}"
    question = f"J'habite au {ADDRESS} : quelle est la franchise pour une inondation en zone A ?"
    follow_up = "Et en zone B ?"

    def as_user(user: str, text: str, route) -> tuple:
        script = {"route": [route], "answer": [answer_from_first_source], "verify": [verify_any]}
        with ScriptedOpenAI(script) as server:
            answer = ask(
                kb, text, thread_id=thread, user_groups=["claims"], user=user, endpoints=[scripted_endpoint(server)]
            )
        return answer, server.requests_for("route")[0]["messages"][-1]["content"], server.requests

    alice, _, _ = as_user("alice", question, retrieve_route(question))
    assert alice.memory
    bob, history, requests = as_user("bob", follow_up, echo_route)
    assert bob.memory and "(aucun)" in history  # a thread of his own: no history
    for carried in (
        json.dumps(requests, ensure_ascii=False),
        json.dumps(bob.to_dict(), ensure_ascii=False, default=str),
    ):
        assert ADDRESS not in carried and "J'habite" not in carried
    # Alice continues her thread; Bob his, holding his own follow-up and nothing of hers
    alice, history, _ = as_user("alice", follow_up, echo_route)
    assert ADDRESS in history and ADDRESS in alice.route.standalone_question
    _, history, _ = as_user("bob", "Et en zone C ?", echo_route)
    assert follow_up in history and ADDRESS not in history


def test_an_anonymous_caller_gets_no_memory_and_is_told(kb, tmp_path):
    thread = f"anonyme-{tmp_path.name}"
    script = {"route": [echo_route], "answer": [answer_from_first_source], "verify": [verify_any]}
    with ScriptedOpenAI(script) as server:
        first = ask(kb, f"J'habite au {ADDRESS} : {ZONE_A}", thread_id=thread, endpoints=[scripted_endpoint(server)])
        second = ask(
            kb, "Et en zone B ?", thread_id=thread, user_groups=["claims"], endpoints=[scripted_endpoint(server)]
        )
        routed = server.requests_for("route")
    assert len(routed) == 2 and all("(aucun)" in r["messages"][-1]["content"] for r in routed)  # nothing read
    for answer in (first, second):
        assert answer.to_dict()["memory"] is False and answer.thread_id == thread
        assert any(f"Fil « {thread} » sans mémoire" in alert for alert in answer.alerts), answer.alerts
    assert not list((kb.store.root / "answers" / "threads").glob(f"anonyme-{tmp_path.name}*"))  # nothing kept
    assert AnswerLog(log_path_for(kb.store.root)).read()[-1]["memory"] is False


def _append_as(root: str, user: str, thread: str, count: int, start) -> None:
    threads, owner = ThreadStore(root), thread_owner(user, ["claims"])
    start.wait()  # both processes append at once
    for i in range(count):
        threads.append(thread, owner, {"role": "user", "content": f"{user} {i}"})


def test_two_users_appending_at_once_to_one_thread_id_each_keep_their_own(tmp_path):
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    workers = [
        context.Process(target=_append_as, args=(str(tmp_path), user, "t1", 24, start)) for user in ("alice", "bob")
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    assert [w.exitcode for w in workers] == [0, 0]
    threads = ThreadStore(tmp_path)
    for user in ("alice", "bob"):
        held = [m["content"] for m in threads.messages("t1", thread_owner(user, ["claims"]))]
        assert held == [f"{user} {i}" for i in range(24)]
    assert len(list(tmp_path.glob("t1-*.json"))) == 2


def test_a_thread_id_or_user_is_a_bounded_key_cleaned_of_lone_surrogates():
    assert identifier(" t\udcff1 ", "thread id") == "t?1"
    assert thread_owner("b\udcffob", ["claims\udcff"]) == {"user": "b?ob", "groups": ["claims?", "public"]}
    for value, message in (("  ", "user is empty"), ("u" * (MAX_ID_CHARS + 1), "over the 200-character limit")):
        with pytest.raises(QueryRefused, match=message):
            identifier(value, "user")
        with pytest.raises(QueryRefused, match=message):
            ask(None, ZONE_A, thread_id="t1", user=value)  # refused before any work


def test_lone_surrogates_in_a_thread_id_or_user_crash_neither_ask_nor_the_cli(kb, tmp_path, capsys):
    from rag_assets.cli import main

    thread = f"t\udcff-{tmp_path.name}"
    kb.ask(ZONE_A, thread_id=thread, user="b\udcffob", offline=True)
    answer = kb.ask("Et en zone B ?", thread_id=thread, user="b\udcffob", offline=True)
    assert answer.memory and answer.route.rewritten and "2 500 €" in answer.text
    assert answer.thread_id == f"t?-{tmp_path.name}"
    json.dumps(answer.to_dict(), ensure_ascii=False, default=str).encode("utf-8")
    assert AnswerLog(log_path_for(kb.store.root)).read()[-1]["thread_id"] == answer.thread_id

    # argv bytes the locale cannot decode reach the CLI as lone surrogates (surrogateescape)
    cli = [
        sys.executable,
        "-c",
        "import sys; from rag_assets.cli import main; sys.exit(main())",
        "--store",
        str(kb.store.root),
        "ask",
        ZONE_A,
        "--offline",
        "--json",
    ]
    done = subprocess.run(
        cli + [b"--thread", b"cli-\xff-" + tmp_path.name.encode(), b"--user", b"\xffbob"],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    data = json.loads(done.stdout)
    assert data["thread_id"] == f"cli-?-{tmp_path.name}" and data["memory"] is True and "5 000 €" in data["text"]
    assert main(["--store", str(kb.store.root), "ask", ZONE_A, "--thread", "t1", "--user", " "]) == 2
    assert "refused: --user is empty" in capsys.readouterr().err


def test_the_cli_user_is_the_os_user_or_none_when_the_os_names_none(monkeypatch):
    import getpass

    from rag_assets.commands.ask import os_user

    assert os_user() == getpass.getuser()

    def no_account():
        raise OSError("no username set in the environment")

    monkeypatch.setattr(getpass, "getuser", no_account)  # a container without LOGNAME/USER or password entry
    assert os_user() is None
