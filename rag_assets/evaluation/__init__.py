"""Evaluation of retrieval: golden question sets and public benchmarks (BEIR layout),
per engine (bm25, dense, hybrid fusion), with ranx metrics, bootstrap confidence intervals,
paired tests and the context measure. Plain modules (no Dagster here); the assets are in
rag_assets/defs/evaluation/assets.py.

    questions.py       golden question sets (JSONL) and their validation
    evidence.py        evidence matching: document + verbatim quote → relevant parents
    benchmarks.py      BEIR loading, checksums, slices
    targets.py         the catalog of evaluation targets and the stores they run on
    engines.py         per-engine rankings (product bm25, dense, hybrid, reference bm25)
    reference_bm25.py  the protocol reference BM25 (Lucene formula, Anserini analyzer)
    metrics.py         ranx metrics, bootstrap CIs, paired differences, ranx.compare
    context.py         the context measure (evidence inside the parents given to the model)
    provenance.py      code/model/index/dataset versions of a run
    reporting.py       run folder: summary JSON, per-question Parquet, PNG plots, tables
    evaluate.py        one evaluation end to end
    splits.py          the fixed dev/test split of the golden sets
    fusion_tuning.py   the fusion tuned on a dev split (ranx optimize_fusion)
    ablation.py        retrieval components one by one on a split, with CIs

The answer evaluation: every question of a golden set asked through `ask`, each answer scored.

    answers.py         the run: options, question selection, answerers
    answer_scoring.py  one answer against its question: expected figures or terms, citations, premises
    answer_judge.py    the optional LLM judge, recorded apart from our scoring
    answer_summary.py  rates with bootstrap CIs, counts, breakdowns per question type, trap, split
    answer_reporting.py  run folder: summary JSON, per-question Parquet, tables, plots
"""

import os
from pathlib import Path

# ranx JIT-compiles its metrics with numba on first use (~15-60 s); cache the machine code.
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "rag-assets" / "numba"))
