"""Dagster definitions: thin assets over the plain modules of rag_assets."""
