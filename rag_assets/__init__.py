"""rag-assets: a document RAG for regulated insurance work, orchestrated by Dagster."""
