"""``rag-assets adapt-embedder``: fine-tune e5-local's multilingual-e5-small on pairs drawn from
the Code des assurances articles no golden set cites (rag_assets/embedding/adaptation.py), and write the
model folder the embedder spec ``e5-local-adapted[:runtime]`` runs (a new revision: a store
embedded with it is re-embedded).

    rag-assets adapt-embedder                          # 2,000 pairs, 1 epoch, ~11 min on 2 cores
    rag-assets adapt-embedder --max-pairs 64 --dry-run # count and show pairs, no training
    RAG_ASSETS_EMBEDDER=e5-local-adapted rag-assets eval golden-insurance --split dev --eval-store COPY
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from rag_assets.embedding import adaptation, e5_local
from rag_assets.evaluation.targets import GOLDEN_SHARED_CORPUS
from rag_assets.settings import PROJECT_ROOT


def add_adapt_parser(subparsers) -> None:
    recipe = adaptation.Recipe()
    p = subparsers.add_parser(
        "adapt-embedder",
        help="fine-tune e5-local on Code des assurances pairs; writes the e5-local-adapted model",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--corpora", default=str(PROJECT_ROOT / GOLDEN_SHARED_CORPUS), help="the shared corpora folder")
    p.add_argument(
        "--exclude",
        nargs="*",
        default=[str(p) for p in sorted((PROJECT_ROOT / "evaluations").glob("golden-*.jsonl"))],
        help="question sets whose evidence documents are never trained on (default: every golden set)",
    )
    p.add_argument("--max-pairs", type=int, default=recipe.max_pairs)
    p.add_argument("--epochs", type=int, default=recipe.epochs)
    p.add_argument("--batch-size", type=int, default=recipe.batch_size)
    p.add_argument("--lr", type=float, default=recipe.learning_rate)
    p.add_argument("--max-tokens", type=int, default=recipe.max_tokens, help="a passage's tokens")
    p.add_argument("--threads", type=int, default=recipe.threads, help="torch threads")
    p.add_argument("--out", default="", help="model folder (default: the model cache's e5-small-adapted)")
    p.add_argument("--dry-run", action="store_true", help="build and show the pairs only")
    p.set_defaults(func=cmd_adapt)


def cmd_adapt(args, settings) -> int:
    corpora = Path(args.corpora).resolve()
    excluded = adaptation.cited_documents(Path(p) for p in args.exclude)
    pairs, articles = adaptation.corpus_pairs(corpora, excluded)
    chosen = adaptation.select_pairs(pairs, args.max_pairs)
    kinds = {kind: sum(p.kind == kind for p in chosen) for kind in adaptation.KINDS}
    print(
        f"{articles} articles ({len(excluded)} cited documents left out), {len(pairs)} pairs, "
        f"using {len(chosen)}: {kinds}"
    )
    if args.dry_run:
        for pair in chosen[:5]:
            print(f"  [{pair.kind}] {pair.query[:80]!r} -> {pair.passage[:100]!r}")
        return 0
    if len(chosen) < 2:
        print("no pairs to train on")
        return 1
    recipe = adaptation.Recipe(
        batch_size=args.batch_size,
        learning_rate=args.lr,
        epochs=args.epochs,
        max_tokens=args.max_tokens,
        max_pairs=args.max_pairs,
        threads=args.threads,
    )
    base = e5_local.build_model_folder()
    tensors, record = adaptation.train(base, chosen, recipe, log=lambda line: print(line, flush=True))
    target = Path(args.out).resolve() if args.out else e5_local.model_cache_root() / e5_local.ADAPTED_FOLDER
    record.update(base=base.name, corpus=adaptation.CORPUS, articles=articles, excluded=len(excluded), kinds=kinds)
    folder = e5_local.write_model_folder(base, tensors, target, record)
    with (folder / "pairs.jsonl").open("w", encoding="utf-8") as handle:  # the training data, beside its weights
        for pair in chosen:
            handle.write(json.dumps(asdict(pair), ensure_ascii=False) + "\n")
    print(f"trained {record['steps']} steps in {record['seconds']:.0f} s; wrote {folder}")
    return 0
