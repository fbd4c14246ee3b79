"""Code versions of each stage. Bump one when its output for the same input changes:
Dagster then marks that asset (and what depends on it) stale."""

CODE_VERSIONS = {
    "source_document": "1",
    "docling_document": "5",
    "parents": "5",  # 3: acronym summary beside the parents; 4: short sections joined; 5: their headings as heading blocks
    "children": "2",
    "dense_embeddings": "1",
    "lexical_index": "1",
    "publication": "1",
}
