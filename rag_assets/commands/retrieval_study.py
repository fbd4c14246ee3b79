"""``rag-assets tune-fusion NAME`` and ``rag-assets ablation NAME``: the fusion tuned on a
golden set's dev split (ranx's optimize_fusion), and the ablation of the retrieval
components on a split of a golden set or a benchmark, over an existing store (read only).

    # writes evaluations/fusion-tuning-golden-insurance.json
    rag-assets tune-fusion golden-insurance --eval-store STORE
    # writes evaluations/ablations/golden-insurance-test.md
    rag-assets ablation golden-insurance --eval-store STORE --split test
    rag-assets ablation piaf-dev --eval-store STORE --split test           # a benchmark's own queries and qrels
    rag-assets fit-gate        # the relevance gate fitted on the golden sets' dev split (their eval stores)
"""

from __future__ import annotations


def add_study_parsers(subparsers) -> None:
    p = subparsers.add_parser("tune-fusion", help="tune the fusion on a golden set's dev split (never on test)")
    p.add_argument("name", help="golden question set")
    p.add_argument("--eval-store", default="", help="the set's knowledge store (default: --store / RAG_ASSETS_STORE)")
    p.add_argument(
        "--no-write", action="store_true", help="print only; do not write evaluations/fusion-tuning-NAME.json"
    )
    p.set_defaults(func=cmd_tune_fusion)

    p = subparsers.add_parser("ablation", help="retrieval components one by one on a split, with CIs")
    p.add_argument("name", help="golden question set or benchmark")
    p.add_argument("--eval-store", default="", help="the set's knowledge store (default: --store / RAG_ASSETS_STORE)")
    p.add_argument("--split", choices=("dev", "test", "all"), default="test")
    p.add_argument("--only", nargs="*", default=[], help="variants to run (plain RRF always runs)")
    p.add_argument(
        "--candidates",
        type=int,
        default=200,
        help="children per engine: 200 as `eval` ranks (default), 20 for what `search` serves",
    )
    p.add_argument("--queries", type=int, default=0, help="benchmarks: the slice of N queries `eval --queries` built")
    p.add_argument("--distractors", type=int, default=0, help="slice: records added besides the judged ones")
    p.add_argument("--no-write", action="store_true", help="print only; do not write evaluations/ablations/")
    p.set_defaults(func=cmd_ablation)

    p = subparsers.add_parser("fit-gate", help="fit the relevance gate on the golden sets' dev split (never on test)")
    p.add_argument(
        "--eval-store",
        action="append",
        default=[],
        metavar="NAME=STORE",
        help="a set's knowledge store (default: its eval store, built by `rag-assets eval NAME`)",
    )
    p.add_argument(
        "--part",
        action="append",
        default=[],
        metavar="NAME=STORE",
        help="a store holding only part of a set's documents: its dev questions about the others "
        "are out-of-corpus rows (repeatable)",
    )
    p.add_argument(
        "--no-write",
        action="store_true",
        help="print only; do not write rag_assets/answering/gate_model.json and evaluations/gate/",
    )
    p.set_defaults(func=cmd_fit_gate)


def cmd_tune_fusion(args, settings) -> int:
    from rag_assets.evaluation.fusion_tuning import tune_fusion

    tune_fusion(args.name, settings, args.eval_store, write=not args.no_write)
    return 0


def cmd_ablation(args, settings) -> int:
    from rag_assets.evaluation.ablation import ablation

    result = ablation(
        args.name,
        settings,
        "" if args.split == "all" else args.split,
        args.eval_store,
        tuple(args.only),
        args.candidates,
        write=not args.no_write,
        queries=args.queries,
        distractors=args.distractors,
    )
    print(result["markdown"])
    return 0


def cmd_fit_gate(args, settings) -> int:
    from pathlib import Path

    from rag_assets.evaluation import targets
    from rag_assets.evaluation.gate_fitting import SETS, fit_gate
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    given = dict(item.split("=", 1) for item in args.eval_store)
    stores = {}
    for name in SETS:
        path = Path(given.get(name) or targets.eval_stores_root() / targets.label_of(name) / "knowledge")
        if not path.exists():
            print(
                f"fit-gate: no store for {name} at {path}: run `rag-assets eval {name}` first, or give "
                f"--eval-store {name}=STORE"
            )
            return 1
        stores[name] = KnowledgeBase.open(path)
    parts: dict[str, list] = {}
    for item in args.part:
        name, path = item.split("=", 1)
        if name not in stores:
            print(f"fit-gate: --part {name}: not one of {', '.join(SETS)}")
            return 2
        parts.setdefault(name, []).append(KnowledgeBase.open(path))
    fit_gate(stores, parts, write=not args.no_write)
    return 0
