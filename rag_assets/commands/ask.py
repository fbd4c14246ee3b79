"""`rag-assets ask "…"`: a sourced, verified answer (text, or JSON with --json)."""

from __future__ import annotations

import getpass
import json
import sys
from pathlib import Path

from rag_assets.answering.ask import AskOptions, ask
from rag_assets.answering.config import endpoints_from_settings
from rag_assets.answering.generation import Endpoint
from rag_assets.answering.memory import identifier
from rag_assets.answering.retrieval import RetrievalOptions
from rag_assets.errors import printable
from rag_assets.retrieve.limits import QueryRefused, checked_question


def cmd_ask(args, settings) -> int:
    try:  # before the engines and any local model are loaded: a refused question costs nothing
        question = checked_question(args.question, settings)
        thread = identifier(args.thread, "--thread") if args.thread else None
        user = identifier(args.user, "--user") if args.user is not None else None
    except QueryRefused as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    from rag_assets.retrieve.knowledge_base import KnowledgeBase  # loads LanceDB (seconds)

    kb = KnowledgeBase.open(settings.store)
    endpoints: list[Endpoint] = [] if args.offline else endpoints_from_settings(settings)
    if args.base_url and not args.offline:
        endpoints.insert(
            0,
            Endpoint(
                base_url=args.base_url,
                model=args.model or settings.llm_model or "default",
                api_key=settings.llm_api_key,
                name="cli",
            ),
        )
    gguf = None if args.offline else (args.gguf or getattr(settings, "llm_gguf", None))
    local = None
    if args.checks:
        settings = settings.model_copy(update={"llm_checks": args.checks})
    options = AskOptions(retrieval=RetrievalOptions(threshold=args.threshold))
    try:
        if gguf:
            from rag_assets.answering.local_llm import LocalLLM, LocalLLMError

            local = LocalLLM(gguf)
            try:
                endpoints.append(local.start())
                print(
                    f"[local model {local.gguf_path.name} served at {local.endpoint.base_url} "
                    f"in {local.load_seconds} s]",
                    file=sys.stderr,
                )
            except LocalLLMError as exc:
                print(f"[local model unavailable: {exc}]", file=sys.stderr)
                local = None
        answer = ask(
            kb,
            question,
            thread_id=thread,
            user_groups=args.groups,
            user=user,
            endpoints=endpoints,
            offline=args.offline,
            options=options,
            settings=settings,
        )
    finally:
        if local is not None:
            local.stop()
    images = None
    if args.show:
        images = {item["paragraph"]: item for item in answer.evidence_images(Path(args.show))}
    if args.json:
        data = answer.to_dict()
        if images is not None:
            data["evidence_images"] = list(images.values())
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:  # source names (file names) shown escaped, never acted on by the terminal
        print("\n".join(printable(line) for line in answer.render(images).split("\n")))
    return 0


def os_user() -> str | None:
    """The OS account running the CLI, or None (anonymous: no thread memory) when it has none."""
    try:
        return getpass.getuser()
    except (KeyError, OSError, ImportError):  # no LOGNAME/USER and no password entry (a bare container)
        return None


def add_ask_parser(subparsers) -> None:
    p = subparsers.add_parser("ask", help="answer a question from the documents, with sources and verification")
    p.add_argument("question")
    p.add_argument("--json", action="store_true", help="the whole answer object as JSON")
    p.add_argument(
        "--thread",
        help="conversation id: follow-ups are rewritten with its last messages (kept per --user and --groups)",
    )
    p.add_argument(
        "--user",
        default=os_user(),
        help="who asks: a thread is theirs alone (default: the OS user; none known: no thread memory)",
    )
    p.add_argument("--groups", nargs="*", default=[], help="reader's groups (public is always included)")
    p.add_argument("--offline", action="store_true", help="extractive answer, no model even if one is configured")
    p.add_argument(
        "--gguf", help="serve this GGUF locally with llama.cpp (xllamacpp) and use it (default: $RAG_ASSETS_LLM_GGUF)"
    )
    p.add_argument("--base-url", help="an OpenAI-compatible endpoint tried first (key: $RAG_ASSETS_LLM_API_KEY)")
    p.add_argument("--model", help="model name at --base-url")
    p.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="least probability (0–1) that the sources answer before 'no source found' "
        "(default: the fitted gate's, rag_assets/answering/gate_model.json)",
    )
    p.add_argument(
        "--show",
        metavar="DIR",
        help="write each cited PDF page, the quoted lines highlighted, as a PNG "
        "in DIR and print its path beside the citation",
    )
    p.add_argument(
        "--checks",
        choices=("auto", "model", "rules"),
        help="who routes the question and checks the answer's support when a model answers: the model, "
        "or rules and the answer's terms in its sources; auto = rules for a local GGUF alone "
        "(default: $RAG_ASSETS_LLM_CHECKS, else auto)",
    )
    p.set_defaults(func=cmd_ask)
