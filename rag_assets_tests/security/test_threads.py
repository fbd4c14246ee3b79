"""Issue 13, probe 1: restricted text leaked through thread memory. A `claims` reader asked
in thread t1; a reader without the group continued t1 and, with a model configured, the
restricted answer went to the model as history and came back in the second reader's
rewritten question and answer. Threads now belong to their owner (the reader's groups)."""

from __future__ import annotations

import json

from rag_assets.answering import Endpoint, ask
from rag_assets.answering.memory import ThreadStore, thread_owner
from rag_assets_tests.answering.openai_stub import ScriptedOpenAI, allowed_ids, catalogue

RESTRICTED_TITLE = "Procédure de déclaration des sinistres climatiques"  # allowed_groups: [claims]
RESTRICTED_TEXT = ("Une expertise est missionnée dès que le montant estimé des dommages dépasse le seuil de "
                   "délégation du gestionnaire")
MARKERS = [RESTRICTED_TITLE, "seuil de délégation", "visioexpertise", "expertise est missionnée"]


def endpoint(server: ScriptedOpenAI) -> Endpoint:
    return Endpoint(base_url=server.base_url, model="scripted-model", api_key="test-key", name="stub", timeout=30)


def fixed_route(question: str) -> dict:
    return {"json": {"kind": "retrieve", "standalone_question": question, "sub_questions": [question],
                     "need": "targeted"}}


def echo_route(body: dict) -> dict:
    """A model that rewrites the follow-up with everything the thread gave it: whatever
    history reaches it comes back in the standalone question."""
    user = body["messages"][-1]["content"]
    return {"json": {"kind": "retrieve", "standalone_question": " ".join(user.split())[-1500:],
                     "sub_questions": [" ".join(user.split())[-1500:]], "need": "targeted"}}


def answer_from_first_source(body: dict) -> dict:
    """Cites the first source offered, quoting its name (so the answer holds what it was given)."""
    ids = allowed_ids(body)
    names = catalogue(body)
    return {"json": {"paragraphs": [{"sub_question": 1, "text": f"D'après {names[ids[0]]}.", "source_ids": [ids[0]]}],
                     "missing_information": []}}


def answer_restricted(body: dict) -> dict:
    restricted = next(i for i, name in catalogue(body).items() if RESTRICTED_TITLE in name)
    return {"json": {"paragraphs": [{"sub_question": 1, "text": RESTRICTED_TEXT + ".", "source_ids": [restricted]}],
                     "missing_information": []}}


def verify_any(body: dict) -> dict:
    source = body["response_format"]["json_schema"]["schema"]["properties"]["checks"]["items"]["properties"][
        "source_id"]["enum"][0]
    return {"json": {"checks": [{"paragraph": 1, "verdict": "supported", "source_id": source, "quote": "x"}]}}


def test_another_reader_continuing_a_thread_never_sees_its_restricted_history(kb, tmp_path):
    thread = f"t1-{tmp_path.name}"
    question = "Quand une expertise est-elle missionnée pour un sinistre climatique ?"
    script = {"route": [fixed_route(question)], "answer": [answer_restricted], "verify": [verify_any]}
    with ScriptedOpenAI(script) as server:
        first = ask(kb, question, thread_id=thread, user_groups=["claims"], endpoints=[endpoint(server)])
    assert RESTRICTED_TEXT in first.text  # the claims reader got the restricted answer, remembered in t1

    script = {"route": [echo_route], "answer": [answer_from_first_source], "verify": [verify_any]}
    with ScriptedOpenAI(script) as server:
        second = ask(kb, "Et en période de crise ?", thread_id=thread, user_groups=[], endpoints=[endpoint(server)])
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
        ask(kb, "Et en période de crise ?", thread_id=thread, user_groups=["claims"], endpoints=[endpoint(server)])
        assert RESTRICTED_TEXT in server.requests[0]["messages"][-1]["content"]


def test_a_thread_is_stored_under_its_owner_and_filtered_to_what_the_reader_may_see(tmp_path):
    threads = ThreadStore(tmp_path)
    claims, public = thread_owner(["claims"]), thread_owner(None)
    assert claims == ["claims", "public"] and public == ["public"] and thread_owner("claims") == claims
    threads.append("t1", claims, {"role": "user", "content": "q"},
                   {"role": "assistant", "content": "restricted answer", "document_ids": ["doc-claims"]},
                   {"role": "assistant", "content": "public answer", "document_ids": ["doc-public"]})
    assert threads.last("t1", public) == []  # same id, another reader: another thread
    assert [m["content"] for m in threads.last("t1", claims)] == ["q", "restricted answer", "public answer"]
    # should a document's groups change under a thread, its answers are left out of the history
    visible = {"doc-public": True, "doc-claims": False}.get
    assert [m["content"] for m in threads.last("t1", claims, visible=visible)] == ["q", "public answer"]
