"""A real HTTP server on 127.0.0.1 (ephemeral port, in a thread) speaking the OpenAI
chat-completions protocol with scripted replies — not a mock object: the `openai`
package talks to it over TCP exactly as it would to a provider.

    with ScriptedOpenAI({"route": [...], "answer": [...], "verify": [...]}) as server:
        Endpoint(base_url=server.base_url, model="scripted-model")

Replies are chosen by the JSON-schema name of the request's `response_format`
("route", "answer", "verify", "reformulate"); each is a dict `{"json": obj}`,
`{"content": "raw text"}`, `{"status": 429}` / any HTTP error status, `{"delay": seconds, …}`
before replying, `{"timings": {…}, …}` returned beside the reply (a llama.cpp server's), or a callable
(request body -> one of those). The last reply of a list is reused when it runs out.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedOpenAI:
    def __init__(
        self, script: dict[str, list] | None = None, always_status: int | None = None, model: str = "scripted-model"
    ):
        self.script = {name: list(replies) for name, replies in (script or {}).items()}
        self.always_status = always_status
        self.model = model
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -------------------------------------------------------------- lifecycle
    def start(self) -> "ScriptedOpenAI":
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                status, payload = stub._respond(self.path, body)
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "ScriptedOpenAI":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    # ---------------------------------------------------------------- replies
    @staticmethod
    def schema_name(body: dict) -> str | None:
        fmt = body.get("response_format") or {}
        return (fmt.get("json_schema") or {}).get("name")

    def requests_for(self, name: str) -> list[dict]:
        return [r for r in self.requests if self.schema_name(r) == name]

    def _respond(self, path: str, body: dict) -> tuple[int, dict]:
        with self._lock:
            self.requests.append(body)
            if not path.endswith("/chat/completions"):
                return 404, {"error": {"message": f"unknown path {path}", "type": "invalid_request_error"}}
            if self.always_status:
                return self.always_status, _error(self.always_status)
            name = self.schema_name(body)
            replies = self.script.get(name) or self.script.get("*")
            if not replies:
                return 500, {"error": {"message": f"no scripted reply for {name!r}", "type": "server_error"}}
            reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if callable(reply):
            reply = reply(body)
        if "delay" in reply:  # a slow provider: the client's timeout fires first
            time.sleep(reply["delay"])
        if "status" in reply:
            return reply["status"], _error(reply["status"])
        content = reply["content"] if "content" in reply else json.dumps(reply["json"], ensure_ascii=False)
        prompt_tokens = sum(len(str(m.get("content", ""))) for m in body.get("messages", [])) // 4
        completion_tokens = max(1, len(content) // 4)
        extra = {"timings": reply["timings"]} if "timings" in reply else {}  # as a llama.cpp server times a call
        return 200, {
            **extra,
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _error(status: int) -> dict:
    kinds = {401: "invalid_api_key", 429: "rate_limit_exceeded", 503: "service_unavailable"}
    return {
        "error": {"message": f"scripted error {status}", "type": kinds.get(status, "error"), "code": kinds.get(status)}
    }


def catalogue(body: dict) -> dict[str, str]:
    """source id -> readable name, read from the request's user message: the catalogue of a
    context of whole parents, or a compact context's source tags and element markers (an
    element named by its source's name and its label)."""
    text = next((m["content"] for m in body["messages"] if m["role"] == "user"), "")
    if isinstance(text, list):
        text = " ".join(part.get("text", "") for part in text if isinstance(part, dict))
    entries = {}
    for line in text.splitlines():
        if line.startswith("- S") and " : " in line:
            source_id, name = line[2:].split(" : ", 1)
            entries[source_id.strip()] = name.strip()
    if entries:
        return entries
    for source_id, name in re.findall(r'<source id="(S\d+)" nom="([^"]*)"', text):
        entries[source_id] = name
    for element_id, label in re.findall(r"^\[(S\d+-[A-Z]\d+) — (.*)\]$", text, re.MULTILINE):
        entries[element_id] = f"{entries.get(element_id.split('-')[0], '')}, {label}"
    return entries


def retrieve_route(question: str) -> dict:
    """The router's reply sending `question` to retrieval as it is."""
    return {
        "json": {"kind": "retrieve", "standalone_question": question, "sub_questions": [question], "need": "targeted"}
    }


def scripted_endpoint(server: ScriptedOpenAI):
    from rag_assets.answering import Endpoint

    return Endpoint(base_url=server.base_url, model="scripted-model", api_key="test-key", name="stub", timeout=30)


def allowed_ids(body: dict) -> list[str]:
    schema = body["response_format"]["json_schema"]["schema"]
    return schema["properties"]["paragraphs"]["items"]["properties"]["source_ids"]["items"]["enum"]
