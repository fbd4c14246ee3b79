"""What ingestion and retrieval both read of words: the analyzer, acronyms, the thesaurus,
language detection and typographic variants; and the premise checks' phrases (answering).

Below `index`, `ingest` and `retrieve` (pyproject.toml's layers contract): it imports none of them."""
