"""A knowledge store of N children made by replicating the published documents of a real
store, for measuring how search cost grows with the store (`rag-assets bench`).

Replica 0 of each document is the document itself; replica r > 0 is a copy under the ids
``<id>~r<r>`` whose children's text has a share of its words replaced by words drawn from the
corpus (so BM25 postings and statistics grow like a larger corpus, not like one repeated
document) and whose vectors get Gaussian noise (cosine about 0.9 to the original) before
renormalising. Parents' text is copied unchanged. Documents are added whole until the store
holds at least N children, then the last one is cut to N. Both indexes are bulk loaded (one
commit each) and the ANN index is maintained as the pipeline does after publication.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from rag_assets.index.dense import ANN_MIN_ROWS, DenseIndex
from rag_assets.index.lexical import LexicalDoc, LexicalIndex
from rag_assets.index.publication import PUBLISHED_FILE, read_publication
from rag_assets.retrieve.corpus import document_acronyms
from rag_assets.store import ACRONYMS_FILE, KnowledgeStore, read_json, write_json_atomic
from rag_assets.text.thesaurus import load_thesaurus

WORD_SHARE = 0.15  # words replaced in a replica's child text
VECTOR_NOISE = 0.025  # per-dimension standard deviation, on 384-wide unit vectors: cosine ~0.9


@dataclass
class SourceDocument:
    document_id: str
    record: dict
    parents: pl.DataFrame
    children: pl.DataFrame
    dense: pa.Table  # the document's rows of the dense index (metadata and vectors)
    acronyms: dict  # its acronym summary, as the parents stage stores it


def read_source(root: Path) -> list[SourceDocument]:
    """The published documents of a store (read only), in document id order."""
    store = KnowledgeStore(root)
    dense = DenseIndex(store.lancedb_dir).rows()
    thesaurus = load_thesaurus()
    documents = []
    for document_id, entry in sorted(read_publication(store).items()):
        rows = dense.filter(
            pc.and_(pc.equal(dense["document_id"], document_id), pc.equal(dense["version"], entry["version"]))
        )
        folder = store.root / entry["path"]
        documents.append(
            SourceDocument(
                document_id,
                read_json(store.document_dir(document_id) / "source.json"),
                pl.read_parquet(folder / "parents.parquet"),
                pl.read_parquet(folder / "children.parquet"),
                rows,
                document_acronyms(store, entry, thesaurus).to_dict(),
            )
        )
    return documents


def _perturbed_text(text: str, vocabulary: list[str], rng: random.Random) -> str:
    words = text.split(" ")
    for i in rng.sample(range(len(words)), int(WORD_SHARE * len(words))):
        words[i] = rng.choice(vocabulary)
    return " ".join(words)


def _perturbed_vectors(vectors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    noisy = vectors + rng.normal(0.0, VECTOR_NOISE, vectors.shape).astype(np.float32)
    return noisy / np.linalg.norm(noisy, axis=1, keepdims=True)


def build_scaled_store(
    source: list[SourceDocument], target: Path, children: int, seed: int = 0, ann_min_rows: int = ANN_MIN_ROWS
) -> dict:
    """Write a store of `children` children under `target` (a new folder). Returns what it
    holds: documents, children, replicas, and the ANN index step."""
    if not source or not any(d.children.height for d in source):
        raise ValueError("the source store has no published children")
    store = KnowledgeStore(target)
    text_rng, vector_rng = random.Random(seed), np.random.default_rng(seed)
    vocabulary = sorted(
        {w for d in source for t in d.children["contextualized"].to_list() for w in t.split() if w.isalpha()}
    )
    publication, dense_parts, lexical_entries = {}, [], []
    total, replica = 0, 0
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    while total < children:
        for doc in source:
            if total >= children or not doc.children.height:
                continue
            suffix = f"~r{replica}" if replica else ""
            document_id = doc.document_id + suffix
            kids = doc.children.head(children - total)
            version = kids["version"][0]
            rename = [pl.col(c) + suffix for c in ("parent_id", "document_id")]
            kids = kids.with_columns(*rename, pl.col("child_id") + suffix)
            if replica:
                kids = kids.with_columns(
                    pl.Series(
                        "contextualized",
                        [_perturbed_text(t, vocabulary, text_rng) for t in kids["contextualized"].to_list()],
                    )
                )
            parents = doc.parents.with_columns(*rename)
            folder = store.document_dir(document_id) / "published" / version
            folder.mkdir(parents=True)
            parents.write_parquet(folder / "parents.parquet")
            write_json_atomic(folder / ACRONYMS_FILE, doc.acronyms)  # parents' text is copied unchanged
            kids.write_parquet(folder / "children.parquet")
            title = doc.record["title"] + (f" (copie {replica})" if replica else "")
            write_json_atomic(
                store.document_dir(document_id) / "source.json",
                {**doc.record, "document_id": document_id, "title": title, "title_given": True},
            )
            dense = doc.dense.take(
                pc.index_in(doc.children["child_id"].head(kids.height).to_arrow(), doc.dense["child_id"])
            )
            ids = {
                c: pa.array([v + suffix for v in dense[c].to_pylist()])
                for c in ("child_id", "parent_id", "document_id")
            }
            vectors = np.array(dense["vector"].to_pylist(), dtype=np.float32)
            if replica:
                vectors = _perturbed_vectors(vectors, vector_rng)
            for column, values in ids.items():
                dense = dense.set_column(dense.schema.get_field_index(column), column, values)
            dense = dense.set_column(
                dense.schema.get_field_index("vector"),
                "vector",
                pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1]),
            )
            dense_parts.append(dense)
            lexical_entries += [
                (
                    version,
                    LexicalDoc(
                        c["child_id"],
                        c["parent_id"],
                        document_id,
                        row["language"],
                        row["document_type"],
                        row["allowed_groups"],
                        row["effective_date"],
                        c["contextualized"],
                    ),
                )
                for c, row in zip(
                    kids.iter_rows(named=True),
                    dense.select(["language", "document_type", "allowed_groups", "effective_date"]).to_pylist(),
                )
            ]
            publication[document_id] = {
                "version": version,
                "path": str(folder.relative_to(store.root)),
                "published_at": now,
                "children": kids.height,
                "dense": kids.height,
                "lexical": kids.height,
                "parents": parents.height,
            }
            total += kids.height
        replica += 1
    dense_index = DenseIndex(store.lancedb_dir, ann_min_rows=ann_min_rows)
    dense_index.add(pa.concat_tables(dense_parts), dense_parts[0].schema.field("vector").type.list_size)
    LexicalIndex(store.tantivy_dir).add(lexical_entries)
    ann = dense_index.maintain_ann_index()
    write_json_atomic(store.root / PUBLISHED_FILE, publication)
    return {"documents": len(publication), "children": total, "replicas": replica, "ann": ann}
