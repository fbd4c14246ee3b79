"""What ingestion and retrieval both read of words: the analyzer, acronyms, the thesaurus,
language detection and typographic variants.

Below `index`, `ingest` and `retrieve` (pyproject.toml's layers contract): it imports none of them."""
