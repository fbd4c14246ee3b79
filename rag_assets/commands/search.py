"""`rag-assets search …` (ranked parents) and `rag-assets demo` (the sample corpus end to end)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rag_assets.commands.ingest import cmd_ingest
from rag_assets.errors import printable
from rag_assets.retrieve.limits import QueryRefused, checked_question
from rag_assets.settings import SAMPLES_DIR


def _print_hits(hits, as_json: bool) -> None:
    if as_json:
        print(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2))
        return
    if not hits:
        print("no result")
    for rank, hit in enumerate(hits, start=1):
        pages = ", ".join(map(str, hit.pages)) or "-"
        engines = ", ".join(f"{e} #{r}" for e, r in sorted(hit.ranks.items()))
        # titles (file names) and text shown escaped, never acted on by the terminal
        print(
            printable(f"{rank}. {hit.document_title} — {' > '.join(hit.heading_path) or '(no heading)'} (p. {pages})")
        )
        print(f"   fused {hit.rrf_score:.4f} [{engines}]  parent {hit.parent_id}")
        snippet = hit.text if len(hit.text) <= 600 else hit.text[:600] + " …"
        print("   " + "\n   ".join(printable(line) for line in snippet.split("\n")))
        print()


def cmd_search(args, settings) -> int:
    try:  # before the engines are loaded: a refused question costs nothing
        question = checked_question(args.question, settings)
    except QueryRefused as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    from rag_assets.retrieve.knowledge_base import KnowledgeBase  # loads LanceDB (seconds)

    kb = KnowledgeBase.open(settings.store)
    filters = {}
    if args.document_type:
        filters["document_type"] = args.document_type
    if args.language:
        filters["language"] = args.language
    trace = kb.retrieve(question, filters=filters, groups=args.groups)
    if not args.json and (trace.scope.document_ids or trace.scope.unknown_names):
        print(
            printable(
                f"scope: {trace.scope.describe({d: kb.document(d).get('title') or d for d in kb.document_ids()})}\n"
            )
        )
    _print_hits(kb.hits(trace, k=args.k), args.json)
    return 0


def cmd_demo(args, settings) -> int:
    """The main job on the embedded defaults: sample corpus → all assets → searches and
    sourced answers (offline unless an endpoint is configured)."""
    from rag_assets.client import KnowledgeBase

    args.paths, args.force = [str(SAMPLES_DIR)], False
    status = cmd_ingest(args, settings)
    for question in ("franchise inondation zone A", "préavis résiliation MX-200"):
        print(f'\n=== rag-assets search "{question}"\n')
        args.question, args.k, args.json = question, 3, False
        args.document_type = args.language = None
        args.groups = []
        cmd_search(args, settings)
    kb = KnowledgeBase.open(settings.store)
    for question in (
        "Quelle est la franchise pour une inondation en zone A ?",
        "Quel est le préavis de résiliation du contrat MX-200 ?",
    ):
        print(f'\n=== rag-assets ask "{question}"\n')
        answer = kb.ask(question)
        print(answer.render())
        if question.startswith("Quelle est la franchise"):
            _demo_evidence_page(answer, Path(settings.store).parent / "evidence" / "franchise-inondation-zone-a.png")
    return status


def _demo_evidence_page(answer, path: Path) -> None:
    """The deductible table's page with the quoted row highlighted (``ask --show`` does it per citation)."""
    from rag_assets.answering.highlight import render

    evidence = next((p.evidence for p in answer.paragraphs if p.evidence and p.evidence["pages"]), None)
    if evidence is None:
        print("\nno evidence page: the answer quotes no PDF passage")
        return
    render(Path(evidence["file"]), evidence["pages"], path)
    print(f"\nevidence page (quoted lines highlighted): {path}")
