"""The `rag-assets` subcommands: the application layer, the one place besides `defs` that
drives Dagster (through `rag_assets.defs`)."""
