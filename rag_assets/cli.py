"""rag-assets command line: ingest documents, search the knowledge base."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

from tqdm import tqdm

from rag_assets.settings import SAMPLES_DIR, load_settings


def _print_hits(hits, as_json: bool) -> None:
    if as_json:
        print(json.dumps([h.to_dict() for h in hits], ensure_ascii=False, indent=2))
        return
    if not hits:
        print("no result")
    for rank, hit in enumerate(hits, start=1):
        pages = ", ".join(map(str, hit.pages)) or "-"
        engines = ", ".join(f"{e} #{r}" for e, r in sorted(hit.ranks.items()))
        print(f"{rank}. {hit.document_title} — {' > '.join(hit.heading_path) or '(no heading)'} (p. {pages})")
        print(f"   RRF {hit.rrf_score:.4f} [{engines}]  parent {hit.parent_id}")
        snippet = hit.text if len(hit.text) <= 600 else hit.text[:600] + " …"
        print("   " + snippet.replace("\n", "\n   "))
        print()


def cmd_ingest(args, settings) -> int:
    from rag_assets.defs.runner import ingest, open_instance

    bar = None

    def report(outcome, done, total):
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="doc", desc="ingest", file=sys.stderr, disable=not sys.stderr.isatty())
        bar.update(1)
        line = f"[{done}/{total}] {outcome.status:9s} {outcome.path}  [{outcome.document_id}]"
        if outcome.message:
            line += f"\n          {'error' if outcome.status == 'failed' else 'note'}: {outcome.message}"
        for warning in outcome.warnings:
            line += f"\n          warning: {warning}"
        tqdm.write(line, file=sys.stdout)

    with open_instance(settings) as instance:
        outcomes = ingest([Path(p) for p in args.paths], settings, instance, force=args.force, on_outcome=report)
    if bar is not None:
        bar.close()
    failed = [o for o in outcomes if o.status == "failed"]
    print(f"{len(outcomes) - len(failed)} document(s) ready, {len(failed)} failed; store: {settings.store}")
    return 1 if failed else 0


def cmd_search(args, settings) -> int:
    from rag_assets.client import KnowledgeBase

    kb = KnowledgeBase.open(settings.store)
    filters = {}
    if args.document_type:
        filters["document_type"] = args.document_type
    if args.language:
        filters["language"] = args.language
    _print_hits(kb.search(args.question, k=args.k, filters=filters, groups=args.groups), args.json)
    return 0


def cmd_demo(args, settings) -> int:
    """The main job on the embedded defaults: sample corpus → all assets → searches and
    sourced answers (offline unless an endpoint is configured)."""
    from rag_assets.client import KnowledgeBase

    args.paths, args.force = [str(SAMPLES_DIR)], False
    status = cmd_ingest(args, settings)
    for question in ("franchise inondation zone A", "préavis résiliation MX-200"):
        print(f"\n=== rag-assets search \"{question}\"\n")
        args.question, args.k, args.json = question, 3, False
        args.document_type = args.language = None
        args.groups = []
        cmd_search(args, settings)
    kb = KnowledgeBase.open(settings.store)
    for question in ("Quelle est la franchise pour une inondation en zone A ?",
                     "Quel est le préavis de résiliation du contrat MX-200 ?"):
        print(f"\n=== rag-assets ask \"{question}\"\n")
        print(kb.ask(question).render())
    return status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rag-assets", description=__doc__)
    parser.add_argument("--store", help="knowledge store folder (default: $RAG_ASSETS_STORE or data/knowledge)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", help="register files/folders as partitions and materialize them through Dagster")
    p.add_argument("paths", nargs="+")
    p.add_argument("--force", action="store_true", help="re-run documents even when unchanged")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("search", help="hybrid search; prints ranked parents")
    p.add_argument("question")
    p.add_argument("-k", type=int, default=5)
    p.add_argument("--json", action="store_true")
    p.add_argument("--groups", nargs="*", default=[], help="reader's groups (public is always included)")
    p.add_argument("--document-type")
    p.add_argument("--language")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("demo", help="ingest the sample corpus and run two searches")
    p.set_defaults(func=cmd_demo)

    from rag_assets.answering.cli import add_ask_parser
    from rag_assets.evaluation.cli import add_eval_parser

    add_ask_parser(sub)
    add_eval_parser(sub)

    args = parser.parse_args(argv)
    settings = load_settings()
    if args.store:
        store = Path(args.store).resolve()
        home = settings.dagster_home if "DAGSTER_HOME" in os.environ else store / "dagster"
        settings = dataclasses.replace(settings, store=store, dagster_home=home)
    return args.func(args, settings)


if __name__ == "__main__":
    sys.exit(main())
