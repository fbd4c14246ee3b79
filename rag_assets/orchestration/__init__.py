"""What drives Dagster with the definitions of rag_assets.defs, and is no definition itself:
the instance the CLI, the tests and the UI share (instance.py), what an ingest must run
(planner.py), one run per document, in process or with its steps on Celery workers
(ingest_runs.py, celery_runs.py), and `rag-assets eval` as runs (evaluation_runs.py)."""
