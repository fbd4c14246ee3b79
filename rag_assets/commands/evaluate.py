"""``rag-assets eval NAME``: build NAME's corpus through its own Dagster asset graph
(``NAME/source_document`` … ``NAME/publication``), materialize ``NAME/retrieval_evaluation``
(which only reads that store) and print per-engine metrics with 95 % CIs.

    rag-assets eval --list
    rag-assets eval golden-sample
    rag-assets eval scifact --queries 50 --distractors 300     # a slice (its own store)
    rag-assets eval scifact --show                              # print the latest stored run
    rag-assets eval golden-sample --answers                     # answers: NAME/answer_evaluation
    rag-assets eval golden-insurance --answers --answerer gguf --subset local-nightly
"""

from __future__ import annotations

import json
from pathlib import Path

from rag_assets.evaluation.answers import ANSWERERS


def add_eval_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "eval",
        help="evaluate retrieval on a question set or benchmark; prints the metrics table",
        description=__doc__,
        formatter_class=__import__("argparse").RawDescriptionHelpFormatter,
    )
    p.add_argument("name", nargs="?", help="question set or benchmark (see --list)")
    p.add_argument("--list", action="store_true", help="list the evaluation targets and whether their data is present")
    p.add_argument("--queries", type=int, default=0, help="benchmarks: evaluate a slice of N queries (0 = all)")
    p.add_argument("--distractors", type=int, default=0, help="slice: records added besides the judged ones")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (≥ 1000)")
    p.add_argument("--eval-store", default="", help="evaluate this existing knowledge store as it is (no ingestion)")
    p.add_argument("--no-reference", action="store_true", help="benchmarks: skip the protocol reference BM25")
    p.add_argument("--runs-dir", default="", help="where runs are written (default: evaluations/runs)")
    p.add_argument(
        "--split",
        choices=("dev", "test"),
        default="",
        help="only the dev (odd numbers) or the test (even numbers) questions: golden sets by id, "
        "benchmarks by position among their judged queries; for retrieval and answers "
        "(rag_assets/evaluation/splits.py)",
    )
    p.add_argument(
        "--fusion", default="", help="fusion spec instead of the default, e.g. wsum:norm=min-max,bm25=0.7,dense=0.3"
    )
    p.add_argument("--show", action="store_true", help="print the latest stored run of NAME instead of running")
    p.add_argument("--json", action="store_true", help="print the run summary as JSON")
    answers = p.add_argument_group("answers", "evaluate the answers of `ask` instead of retrieval (golden sets)")
    answers.add_argument(
        "--answers",
        action="store_true",
        help="materialize NAME/answer_evaluation: citation and answer correctness, unsupported "
        "numbers, out-of-corpus refusals, false premises, latency",
    )
    answers.add_argument(
        "--answerer",
        default="configured",
        choices=ANSWERERS,
        help="configured (an endpoint or RAG_ASSETS_LLM_GGUF when set, else extractive), "
        "extractive, or gguf (--gguf or RAG_ASSETS_LLM_GGUF)",
    )
    answers.add_argument("--gguf", default="", help="the GGUF file served for --answerer gguf")
    answers.add_argument(
        "--checks",
        choices=("auto", "model", "rules"),
        help="who routes and checks the support when a model answers (default: $RAG_ASSETS_LLM_CHECKS, else auto)",
    )
    answers.add_argument("--subset", default="", help="a named subset (local-nightly) or comma-separated question ids")
    p.set_defaults(func=cmd_eval)


def cmd_eval(args, settings) -> int:
    from rag_assets.evaluation import reporting, targets

    if args.list or not args.name:
        for name in targets.target_names():
            state = "ready" if targets.available(name) else "data absent"
            print(f"{name:15s} {state:12s} {targets.describe(name)}")
        return 0 if args.list else 2
    if args.name not in targets.target_names():
        print(f"unknown evaluation {args.name!r}; known: {', '.join(targets.target_names())}")
        return 2
    runs_dir = Path(args.runs_dir).resolve() if args.runs_dir else targets.runs_root()
    if args.answers:
        return _answers(args, settings, runs_dir)
    if args.show:
        run_dir = reporting.latest_run(runs_dir, args.name)
        if run_dir is None:
            print(f"no stored run of {args.name} in {runs_dir}")
            return 1
        return _print(reporting.load_summary(run_dir), args.json)
    if not targets.available(args.name):
        print(f"{args.name}: data not found ({targets.describe(args.name)}); it needs ../shared beside the project")
        return 1
    run_dir = run_through_dagster(args, settings, runs_dir)
    if run_dir is None:
        return 1
    return _print(reporting.load_summary(run_dir), args.json)


def _answers(args, settings, runs_dir: Path) -> int:
    from rag_assets.evaluation import answer_reporting, reporting, targets
    from rag_assets.orchestration.evaluation_runs import run_answer_evaluation
    from rag_assets.orchestration.instance import open_instance

    if args.name not in targets.GOLDEN:
        print(f"--answers: {args.name} is no golden set ({', '.join(targets.GOLDEN)})")
        return 2
    if args.show:
        run_dir = reporting.latest_run(runs_dir, args.name, kind="answers")
        if run_dir is None:
            print(f"no stored answer run of {args.name} in {runs_dir}")
            return 1
    else:
        if not args.eval_store and not targets.available(args.name):
            print(f"{args.name}: data not found ({targets.describe(args.name)}); it needs ../shared beside the project")
            return 1
        with open_instance(settings) as instance:
            run = run_answer_evaluation(args.name, answer_options(args, runs_dir), settings, instance)
        if not run.success:
            print(f"answer evaluation of {args.name} failed: {run.message}")
            return 1
        run_dir = run.run_dir
    summary = reporting.load_summary(run_dir)
    print(json.dumps(summary, ensure_ascii=False, indent=2) if args.json else answer_reporting.text_table(summary))
    return 0


def answer_options(args, runs_dir: Path):
    """The flags as the options type the answer asset's config and evaluate_answers() share."""
    from rag_assets.evaluation.answers import AnswerEvalOptions

    return AnswerEvalOptions(
        answerer=args.answerer,
        gguf=args.gguf,
        checks=args.checks or "",
        subset=args.subset,
        split=args.split,
        store=str(Path(args.eval_store).resolve()) if args.eval_store else "",
        resamples=args.resamples,
        runs_dir=str(runs_dir),
    )


def _print(summary: dict, as_json: bool) -> int:
    from rag_assets.evaluation.reporting import text_table

    print(json.dumps(summary, ensure_ascii=False, indent=2) if as_json else text_table(summary))
    return 0


def eval_options(args, runs_dir: Path):
    """The flags as the options type the asset's config and evaluate() share."""
    from rag_assets.evaluation.evaluate import EvalOptions

    return EvalOptions(
        queries=args.queries,
        distractors=args.distractors,
        resamples=args.resamples,
        store=str(Path(args.eval_store).resolve()) if args.eval_store else "",
        reference=not args.no_reference,
        runs_dir=str(runs_dir),
        split=args.split,
        fusion=args.fusion,
    )


def run_through_dagster(args, settings, runs_dir: Path) -> Path | None:
    """The corpus graph, then the evaluation asset, in the CLI's Dagster instance; the run dir."""
    from rag_assets.orchestration.evaluation_runs import run_evaluation
    from rag_assets.orchestration.instance import open_instance

    with open_instance(settings) as instance:
        run = run_evaluation(args.name, eval_options(args, runs_dir), settings, instance)
    if not run.success:
        print(f"evaluation of {args.name} failed: {run.message}")
        return None
    return run.run_dir
