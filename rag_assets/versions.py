"""Code versions of each stage. Bump one when its output for the same input changes:
Dagster then marks that asset (and what depends on it) stale."""

CODE_VERSIONS = {
    "source_document": "1",
    # 6: text-heavy "figures" read as text or tables; rules inside a borderless table; 7: chapter headings taken
    # for page headers; 8: wrapped table cells kept in their row, long-cell grids of 3+ rows stay tables; 9: page
    # headers on fewer pages than a running title back into the body; 10: contents set as title / page-number lines;
    # 11: text a reader cannot see dropped; an Office document declaring a DTD refused before the reader opens it;
    # 12: items under one table rule whose values are bare amounts each a row
    "docling_document": "12",
    # 3: acronym summary; 4: short sections joined; 5: their headings as heading blocks; 6: text inside pictures;
    # 7: a "Tableau …" heading no table adopts stays a heading; 8: PDF line and cell boxes, page sizes;
    # 9: a paragraph the layout cut mid-sentence joined again; 10: a group of short sections stays within its
    # first section's heading (a heading with subsections starts its own); 11: the document's identity (title,
    # insurer, product, branch, type, edition) read from the stored conversion and the PDF's metadata
    "parents": "11",
    "children": "3",  # 3: the parent's boxes of each child
    "dense_embeddings": "1",
    # 2: the everyday words of the thesaurus concepts a child names indexed with it (its code version also
    # carries the thesaurus's fingerprint: editing the thesaurus re-indexes)
    "lexical_index": "2",
    "publication": "1",
}
