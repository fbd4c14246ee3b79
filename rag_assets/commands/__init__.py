"""The `rag-assets` subcommands: the application layer; they drive Dagster through
`rag_assets.orchestration`."""
