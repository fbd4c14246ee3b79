"""Evaluation of retrieval: golden question sets and public benchmarks (BEIR layout),
per engine (bm25, dense, hybrid RRF), with ranx metrics, bootstrap confidence intervals,
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
    runner.py          one evaluation end to end
"""

import os
from pathlib import Path

# ranx JIT-compiles its metrics with numba on first use (~15-60 s); cache the machine code.
os.environ.setdefault("NUMBA_CACHE_DIR", str(Path.home() / ".cache" / "rag-assets" / "numba"))
