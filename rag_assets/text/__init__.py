"""What ingestion and retrieval both read of words: the analyzer, acronyms, the thesaurus,
language detection, typographic variants, the folding of accents and case; and the premise
checks' phrases (answering).

Below `index`, `ingest` and `retrieve` (pyproject.toml's layers contract): it imports none of them."""
