"""rag-assets command line: ingest documents, search, ask, evaluate, bench (subcommands in
rag_assets/commands/)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rag_assets.commands.ingest import cmd_ingest
from rag_assets.commands.search import cmd_demo, cmd_search
from rag_assets.settings import load_settings


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

    from rag_assets.commands.adapt import add_adapt_parser
    from rag_assets.commands.ask import add_ask_parser
    from rag_assets.commands.bench import add_bench_parser
    from rag_assets.commands.evaluate import add_eval_parser
    from rag_assets.commands.retrieval_study import add_study_parsers

    add_ask_parser(sub)
    add_eval_parser(sub)
    add_bench_parser(sub)
    add_study_parsers(sub)
    add_adapt_parser(sub)

    args = parser.parse_args(argv)
    settings = load_settings()
    if args.store:
        store = Path(args.store).resolve()
        home = settings.dagster_home if "DAGSTER_HOME" in os.environ else store / "dagster"
        settings = settings.model_copy(update={"store": store, "dagster_home": home})
    return args.func(args, settings)


if __name__ == "__main__":
    sys.exit(main())
