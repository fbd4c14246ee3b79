"""The ingestion stages for one document, as plain functions (no Dagster here).

Each stage reads what the previous one stored, writes its own artifact with a record
of what produced it, and returns a summary (metadata for the UI, figures for checks).
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
from docling_core.types.doc import DocItem, PictureItem, RefItem, SectionHeaderItem, TableItem, TitleItem
from docling_core.types.doc.document import ContentLayer

from rag_assets.embedding import VectorCache, cache_path_for, get_embedder
from rag_assets.errors import BudgetExceeded, MetadataError
from rag_assets.hashing import sha256_file, short_id
from rag_assets.index.amendments import RefusedAmendment, refused_at_ingest, targets
from rag_assets.index.dense import DenseIndex
from rag_assets.index.lexical import LexicalDoc, LexicalIndex
from rag_assets.index.maintenance import merge_lexical_when_worn
from rag_assets.index.publication import publish, published_version, withdraw
from rag_assets.index.records import SourceRecord, document_identity, document_title, load_source_record
from rag_assets.index.rows import CHILD_JSON_COLUMNS, PARENT_JSON_COLUMNS, read_rows, write_rows
from rag_assets.ingest import refusals
from rag_assets.ingest.boxes import PdfText
from rag_assets.ingest.chunking import ParentChunker
from rag_assets.ingest.sections import Parent, build_parents, picture_text
from rag_assets.ingest.sources import document_version, ingest_source, metadata_top
from rag_assets.parsing.budget import check_tokens
from rag_assets.parsing.convert import convert_and_save_with_limit, load_document, pdf_metadata
from rag_assets.parsing.identity import DocumentIdentity, read_identity
from rag_assets.settings import Settings
from rag_assets.store import KnowledgeStore, read_json, write_json_atomic
from rag_assets.text.acronyms import DocumentAcronyms
from rag_assets.text.thesaurus import load_thesaurus
from rag_assets.versions import CODE_VERSIONS

# The checks each stage reports, and whether a failure refuses the document (blocking).
STAGE_CHECKS: dict[str, dict[str, bool]] = {
    "parents": {"parents_cover_body": True, "no_table_split": True},
    "children": {
        "offsets_partition_parents": True,
        "children_within_token_budget": False,
        "every_child_has_one_parent": True,
    },
    "dense_embeddings": {"embeddings_match_children": True, "vectors_unit_norm": True, "model_recorded": True},
    "lexical_index": {"lexical_count_matches_children": True},
    "publication": {"published_version_complete": True, "no_other_version_left": True},
}


@dataclass(frozen=True)
class Check:
    """One asset check's outcome. ``blocking`` checks guard against text lost, duplicated or
    unreadable (the document is refused); the others keep the document and warn."""

    passed: bool
    description: str  # what was found, naming items and pages when it failed
    blocking: bool = True


@dataclass
class StageResult:
    data_version: str
    metadata: dict
    checks: dict[str, Check] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # processed, but a person should know

    def __post_init__(self) -> None:
        for name, check in self.checks.items():
            if not check.passed and not check.blocking:
                self.warnings.append(f"{name}: {check.description}")


def _store(settings: Settings) -> KnowledgeStore:
    return KnowledgeStore.of(settings)


def run_source_document(settings: Settings, document_id: str) -> tuple[SourceRecord, StageResult]:
    store = _store(settings)
    refuse_again_if_unchanged(store, document_id, settings)
    path = store.source_path_of(document_id)
    try:
        record = ingest_source(
            store, document_id, path, settings.max_file_bytes, settings.default_groups, metadata_top(settings, path)
        )
    except MetadataError as exc:
        if published_version(store, document_id):  # its old groups may be the mistake being fixed
            withdraw(store, document_id)
            raise MetadataError(
                exc.path, f"{exc.reason}; its published version is withdrawn until this is fixed"
            ) from None
        raise
    return record, StageResult(
        warnings=record.warnings + [r.warning for r in refused_amendments(store, record)],
        data_version=document_version(settings, path, record.sha256),
        metadata={
            "file": record.file_name,
            "sha256": record.sha256,
            "size_bytes": record.size_bytes,
            "media_type": record.media_type,
            "title": record.title,
            "language": record.language,
            "document_type": record.document_type,
            "effective_date": record.effective_date,
            "allowed_groups": record.allowed_groups,
        },
    )


def refused_amendments(store: KnowledgeStore, record: SourceRecord) -> list[RefusedAmendment]:
    """The `amends` of `record` that can be refused now (amendments.refused_at_ingest); the
    store's other records are read only for a document that declares one."""
    if not targets(record):
        return []
    registry = store.registry()
    recorded = {}
    for document_id in registry:
        try:
            recorded[document_id] = load_source_record(store, document_id)
        except FileNotFoundError:  # registered, not ingested yet: its path is known, its groups not
            continue
    return refused_at_ingest(record, registry, recorded)


def run_docling_document(settings: Settings, document_id: str) -> StageResult:
    store = _store(settings)
    record = load_source_record(store, document_id)
    provenance = {
        "document_id": document_id,
        "source_sha256": record.sha256,
        "code_version": CODE_VERSIONS["docling_document"],
    }
    refusal = refusals.standing_refusal(store, document_id, record.sha256, settings)
    if refusal is not None:  # refused before, same bytes, same budget: at once, same message
        raise refusal
    try:  # the document's budget, enforced in the conversion process; a refusal is remembered
        manifest = convert_and_save_with_limit(
            Path(record.stored_path),
            record.file_name,
            store.docling_dir(document_id),
            provenance,
            settings.convert_timeout_s,
            budget=settings.budget,
        )
    except BudgetExceeded as exc:
        refusals.record_refusal(store, document_id, record.sha256, settings, exc)
        raise
    refusals.clear_refusal(store, document_id)
    version = short_id(record.sha256, manifest["pipeline"], CODE_VERSIONS["docling_document"])
    warnings = [f"{record.file_name}: {w}" for w in manifest.get("warnings", [])]
    if record.language and record.language != manifest["detected_language"]:
        warnings.append(
            f"{record.file_name}: declared language '{record.language}' but the text reads as "
            f"'{manifest['detected_language']}'; indexed with the declared language's analyzer"
        )
    return StageResult(
        warnings=warnings,
        data_version=version,
        metadata={
            "title": manifest.get("title"),
            "pages": manifest["pages"],
            "tables": manifest["tables"],
            # pages whose text was repaired, OCR'd or is missing (the warnings name them)
            "repaired_pages": len(manifest.get("repaired_pages") or {}),
            "ocr_pages": len(manifest.get("ocr_pages") or []),
            "unreadable_pages": len(manifest.get("unreadable_pages") or []),
            "toc_pages": ", ".join(map(str, manifest.get("toc_pages") or [])) or None,
            "tables_continued_on_pages": ", ".join(map(str, manifest.get("tables_continued_on_pages") or [])) or None,
            "pictures": manifest["pictures"],
            "detected_language": manifest["detected_language"],
            "seconds": manifest["seconds"],
            "peak_memory_mb": manifest.get("peak_memory_mb"),  # against RAG_ASSETS_MAX_MEMORY_MB
            "path": str(store.docling_dir(document_id)),
        },
    )


def refuse_again_if_unchanged(store: KnowledgeStore, document_id: str, settings: Settings) -> None:
    """A document refused for a budget fails at once, with the same message, while
    its bytes and the budget are those of the refusal."""
    if not refusals.refusal_path(store, document_id).exists():
        return
    try:
        sha = sha256_file(store.source_path_of(document_id))
    except (KeyError, OSError):
        return  # gone or unreadable: the source stage says so
    refusal = refusals.standing_refusal(store, document_id, sha, settings)
    if refusal is not None:
        raise refusal


def document_language(store: KnowledgeStore, document_id: str) -> str:
    record = load_source_record(store, document_id)
    if record.language:
        return record.language
    return read_json(store.docling_dir(document_id) / "manifest.json")["detected_language"]


def run_parents(settings: Settings, document_id: str) -> StageResult:
    store = _store(settings)
    embedder = get_embedder(settings.embedder)
    document = load_document(store.docling_dir(document_id))
    record = load_source_record(store, document_id)
    # a PDF's parents keep where their text is printed (the evidence highlighted on its page)
    layout = PdfText(Path(record.stored_path), document) if record.media_type == "application/pdf" else None
    try:
        parents = build_parents(
            document,
            document_id,
            embedder.count_tokens,
            settings.parent_max_tokens,
            settings.parent_min_tokens,
            layout=layout,
        )
    finally:
        if layout is not None:
            layout.close()
    docling_manifest = read_json(store.docling_dir(document_id) / "manifest.json")
    source_sha = docling_manifest["source_sha256"]
    # read here, from the stored conversion and the PDF's metadata: never a reason to convert again
    identity = document_identity_of(document, record, docling_manifest.get("title"))
    provenance = {
        "document_id": document_id,
        "source_sha256": source_sha,
        "docling_document_sha256": sha256_file(store.docling_dir(document_id) / "document.json"),
        "code_version": CODE_VERSIONS["parents"],
        "tokenizer": f"{embedder.name} {embedder.revision}",
        "parent_max_tokens": settings.parent_max_tokens,
        "parent_min_tokens": settings.parent_min_tokens,
    }
    rows = [p.to_row() for p in parents]
    write_rows(store.parents_path(document_id), rows, provenance, PARENT_JSON_COLUMNS)
    # What the text says about acronyms, found once here so that readers merge summaries
    # instead of reading every parent's text at open.
    acronyms = DocumentAcronyms.of([r["text"] for r in rows], load_thesaurus())
    write_json_atomic(
        store.acronyms_path(document_id),
        {
            **acronyms.to_dict(),
            "provenance": {
                "document_id": document_id,
                "code_version": CODE_VERSIONS["parents"],
                "parents_sha256": sha256_file(store.parents_path(document_id)),
            },
        },
    )
    write_json_atomic(
        store.identity_path(document_id),
        {
            "identity": identity.model_dump(),
            "provenance": {"document_id": document_id, "code_version": CODE_VERSIONS["parents"]},
        },
    )
    body = _body_items(document)
    placed = Counter(r for p in parents for r in p.item_refs)
    lost = [ref for ref in body if placed[ref] == 0]
    repeated = [ref for ref in body if placed[ref] > 1]
    table_refs = Counter(r for p in parents for b in p.blocks if b.kind == "table" for r in b.refs if "/tables/" in r)
    split = [ref for ref, n in table_refs.items() if n > 1]
    pictures = [item for item in document.pictures if item.content_layer == ContentLayer.BODY]
    bare = [item for item in pictures if not item.caption_text(document).strip()]
    return StageResult(
        data_version=short_id([p.parent_id for p in parents], identity.model_dump()),
        metadata={
            "title": identity.title,
            "insurer": identity.insurer,
            "product": identity.product,
            "branch": identity.branch,
            "document_type": identity.document_type,
            "edition": identity.edition,
            "parents": len(parents),
            "tables": sum(p.table_count for p in parents),
            "pictures": len(pictures),
            "pictures_without_caption": _pages_summary(bare),
            "max_heading_depth": max((len(p.heading_path) for p in parents), default=0),
            "acronym_pairs": len(acronyms.pairs),
        },
        checks={
            "parents_cover_body": Check(
                not lost and not repeated,
                f"{len(body) - len(lost) - len(repeated)} of {len(body)} body text items in exactly one parent"
                + (f"; in no parent: {_describe_items(document, lost)}" if lost else "")
                + (f"; in several parents: {_describe_items(document, repeated)}" if repeated else ""),
            ),
            "no_table_split": Check(
                not split,
                f"{len(table_refs)} tables, each in one parent"
                + (f"; split across parents: {_describe_items(document, split)}" if split else ""),
            ),
        },
    )


def document_identity_of(document, record: SourceRecord, conversion_title: str | None) -> DocumentIdentity:
    """What names the document, read from its converted text and the PDF's metadata, under
    what its sidecar says (`record`)."""
    metadata = pdf_metadata(Path(record.stored_path)) if record.media_type == "application/pdf" else {}
    given = {
        **record.extra,
        "document_type": record.document_type,
        "title": record.title if record.title_given else None,
    }
    return read_identity(document, metadata, conversion_title).with_sidecar(given)


def _body_items(document) -> dict[str, DocItem]:
    """Body items that carry text (a picture with no caption and no text inside has none to lose)."""
    items = {}
    for item, _ in document.iterate_items():
        if not isinstance(item, DocItem) or isinstance(item, (TitleItem, SectionHeaderItem)):
            continue
        if isinstance(item, TableItem):
            if not any(c.text.strip() for c in item.data.table_cells):
                continue
        elif isinstance(item, PictureItem):
            if not (item.caption_text(document).strip() or picture_text(item, document)):
                continue
        elif not (getattr(item, "text", None) or "").strip():
            continue
        items[item.self_ref] = item
    return items


def _item_page(item) -> int | None:
    return item.prov[0].page_no if getattr(item, "prov", None) else None


def _describe_items(document, refs: list[str], limit: int = 5) -> str:
    """'#/texts/41 (p. 12) "Franchise …"' for the first few items."""
    parts = []
    for ref in refs[:limit]:
        item = RefItem(cref=ref).resolve(document)
        text = " ".join((getattr(item, "text", "") or "").split())
        page = _item_page(item)
        parts.append(
            f"{ref}{f' (p. {page})' if page else ''}"
            + (f' "{text[:60]}{"…" if len(text) > 60 else ""}"' if text else "")
        )
    more = f" and {len(refs) - limit} more" if len(refs) > limit else ""
    return ", ".join(parts) + more


def _pages_summary(items) -> str | None:
    pages = sorted({p for p in (_item_page(i) for i in items) if p is not None})
    return f"{len(items)} (pages {', '.join(map(str, pages))})" if items else None


def load_parents(store: KnowledgeStore, document_id: str) -> list[dict]:
    return read_rows(store.parents_path(document_id), PARENT_JSON_COLUMNS)


def load_children(store: KnowledgeStore, document_id: str) -> list[dict]:
    return read_rows(store.children_path(document_id), CHILD_JSON_COLUMNS)


def run_children(settings: Settings, document_id: str) -> StageResult:
    store = _store(settings)
    embedder = get_embedder(settings.embedder)
    record = load_source_record(store, document_id)
    refusal = refusals.standing_refusal(store, document_id, record.sha256, settings)
    if refusal is not None:  # refused before (here or converting), same bytes, same budget: at once
        raise refusal
    chunker = ParentChunker(embedder.count_tokens, settings.child_max_tokens)
    title = document_title(store, record)
    parent_rows = load_parents(store, document_id)
    children = []
    for row in parent_rows:
        parent = Parent.from_row(row)
        children.extend(chunker.chunk(parent, title=title))
    tokens = sum(c.token_count for c in children)
    try:  # what embedding will cost, bounded before anything is embedded; a refusal is remembered
        check_tokens(tokens, record.file_name, settings.budget)
    except BudgetExceeded as exc:
        refusals.record_refusal(store, document_id, record.sha256, settings, exc)
        raise
    refusals.clear_refusal(store, document_id)
    # what readers get with a version: the texts, where a PDF prints them (new boxes, new version)
    # and what names the document (a title read anew is shown in citations: a new version)
    version = short_id(
        sorted(c.child_id for c in children), [c.boxes for c in children], document_identity(store, record)
    )
    rows = [{**c.to_row(), "version": version} for c in children]
    provenance = {
        "document_id": document_id,
        "parents_sha256": sha256_file(store.parents_path(document_id)),
        "code_version": CODE_VERSIONS["children"],
        "tokenizer": f"{embedder.name} {embedder.revision}",
        "max_tokens": settings.child_max_tokens,
    }
    write_rows(store.children_path(document_id), rows, provenance, CHILD_JSON_COLUMNS)
    texts = {r["parent_id"]: r["text"] for r in parent_rows}
    over = [c for c in children if c.token_count > settings.child_max_tokens]
    pages = read_json(store.docling_dir(document_id) / "manifest.json").get("pages")
    return StageResult(
        data_version=version,
        metadata={
            "children": len(children),
            "tokens": tokens,
            # what embedding this document costs per page (comparable across documents)
            "tokens_per_page": round(tokens / pages) if pages else None,
            "max_tokens_seen": max((c.token_count for c in children), default=0),
            "table_children": sum(c.kind == "table" for c in children),
        },
        checks={
            "offsets_partition_parents": _offsets_partition(rows, texts),
            # A child over budget is still indexed (the embedder truncates its end): warn.
            "children_within_token_budget": Check(
                not over,
                f"max {max((c.token_count for c in children), default=0)} of {settings.child_max_tokens} tokens"
                + (
                    f"; {len(over)} over budget, kept: "
                    + ", ".join(
                        f"{c.child_id} (p. {', '.join(map(str, c.pages))}, {c.token_count} tokens)" for c in over[:5]
                    )
                    if over
                    else ""
                ),
                blocking=False,
            ),
            "every_child_has_one_parent": Check(
                all(c.parent_id in texts for c in children),
                f"{len(children)} children, {len(texts)} parents",
            ),
        },
    )


def _offsets_partition(children: list[dict], parent_texts: dict[str, str]) -> Check:
    by_parent: dict[str, list[dict]] = {}
    for child in children:
        by_parent.setdefault(child["parent_id"], []).append(child)
    bad = []
    for parent_id, text in parent_texts.items():
        spans = sorted((c["start"], c["end"], c["text"]) for c in by_parent.get(parent_id, []))
        position = 0
        for start, end, raw in spans:
            if start != position or text[start:end] != raw:
                break
            position = end
        if position != len(text):
            bad.append(parent_id)
    return Check(
        not bad,
        f"{len(parent_texts) - len(bad)} of {len(parent_texts)} parents exactly partitioned"
        + (f"; text lost or repeated in parents {', '.join(bad[:5])}" if bad else ""),
    )


def run_dense_embeddings(settings: Settings, document_id: str, progress=None) -> StageResult:
    store = _store(settings)
    embedder = get_embedder(settings.embedder)
    record = load_source_record(store, document_id)
    language = document_language(store, document_id)
    children = load_children(store, document_id)
    started = time.perf_counter()
    cache = VectorCache(cache_path_for(store.cache_dir, embedder), embedder)
    vectors = cache.embed_passages([c["contextualized"] for c in children], progress=progress)
    model = f"{embedder.name} @ {embedder.revision}"
    rows = [
        {
            "child_id": c["child_id"],
            "parent_id": c["parent_id"],
            "document_id": document_id,
            "version": c["version"],
            "heading_path": " > ".join(c["heading_path"]),
            "pages": c["pages"],
            "language": language,
            "document_type": record.document_type,
            "effective_date": record.effective_date,
            "allowed_groups": record.allowed_groups,
            "model": model,
            "vector": v.tolist(),
        }
        for c, v in zip(children, vectors)
    ]
    version = _children_version(children)
    dense = DenseIndex.of(store)
    dense.stage_version(document_id, version, rows, embedder.dim, keep=_published(store, document_id))
    stored = dense.rows(document_id, columns=["child_id", "vector", "model", "version"])
    stored = stored.filter(pc.equal(stored["version"], version)) if stored.num_rows else stored
    norms = (
        np.linalg.norm(np.array(stored["vector"].to_pylist(), dtype=np.float32), axis=1)
        if stored.num_rows
        else np.ones(0)
    )
    return StageResult(
        data_version=short_id(version, model),
        metadata={
            "rows": stored.num_rows,
            "model": model,
            "dim": embedder.dim,
            "seconds": round(time.perf_counter() - started, 3),
        },
        checks={
            "embeddings_match_children": Check(
                stored.num_rows == len(children)
                and set(stored["child_id"].to_pylist()) == {c["child_id"] for c in children},
                f"{stored.num_rows} rows for {len(children)} children",
            ),
            "vectors_unit_norm": Check(
                bool(np.all(np.abs(norms - 1) < 1e-3)), f"{len(norms)} vectors, norms within 1e-3 of 1"
            ),
            "model_recorded": Check(
                stored.num_rows == 0 or set(stored["model"].to_pylist()) == {model},
                model,
            ),
        },
    )


def run_lexical_index(settings: Settings, document_id: str) -> StageResult:
    store = _store(settings)
    record = load_source_record(store, document_id)
    language = document_language(store, document_id)
    children = load_children(store, document_id)
    version = _children_version(children)
    lexical = LexicalIndex(store.tantivy_dir)
    lexical.stage_version(
        document_id,
        version,
        (
            LexicalDoc(
                child_id=c["child_id"],
                parent_id=c["parent_id"],
                document_id=document_id,
                language=language,
                document_type=record.document_type,
                allowed_groups=record.allowed_groups,
                effective_date=record.effective_date,
                text=c["contextualized"],
            )
            for c in children
        ),
        keep=_published(store, document_id),
    )
    count = lexical.count(document_id, version)
    return StageResult(
        data_version=short_id(version, language),
        metadata={"entries": count, "language": language},
        checks={
            "lexical_count_matches_children": Check(
                count == len(children), f"{count} entries for {len(children)} children"
            ),
        },
    )


def _children_version(children: list[dict]) -> str:
    return children[0]["version"] if children else short_id([])


def _published(store: KnowledgeStore, document_id: str) -> set[str]:
    version = published_version(store, document_id)
    return {version} if version else set()


def run_publication(settings: Settings, document_id: str) -> StageResult:
    """Flip the document to the version both indexes now hold, then drop other versions."""
    store = _store(settings)
    children = load_children(store, document_id)
    version = _children_version(children)
    dense, lexical = DenseIndex.of(store), LexicalIndex(store.tantivy_dir)
    counts = {
        "children": len(children),
        "dense": dense.count(document_id, version),
        "lexical": lexical.count(document_id, version),
    }
    consistent = counts["dense"] == counts["lexical"] == counts["children"]
    if not consistent:
        raise RuntimeError(f"{document_id}: version {version} is incomplete in the indexes {counts}; not published")
    previous = published_version(store, document_id)
    entry = publish(store, document_id, version, {**counts, "parents": len(load_parents(store, document_id))})
    dense.drop_versions_except(document_id, version)
    lexical.drop_versions_except(document_id, version)
    leftovers = dense.count(document_id) - counts["dense"], lexical.count(document_id) - counts["lexical"]
    dense_index = dense.maintain_ann_index()  # exact below ANN_MIN_ROWS rows, IVF-PQ above
    compaction = merge_lexical_when_worn(store.tantivy_dir, store.root)
    return StageResult(
        data_version=version,
        metadata={
            "version": version,
            "previous_version": previous,
            "published_at": entry["published_at"],
            **counts,
            "dense_index": dense_index,
            "lexical_entries_rewritten": compaction["rewritten"] if compaction else 0,
        },
        checks={
            "published_version_complete": Check(consistent, f"{counts}"),
            "no_other_version_left": Check(
                leftovers == (0, 0), f"{leftovers[0]} dense and {leftovers[1]} lexical rows of other versions"
            ),
        },
    )


def remove_document(settings: Settings, document_id: str) -> None:
    """Withdraw a document everywhere: both indexes, its artifacts and its registration."""
    store = _store(settings)
    withdraw(store, document_id)
    DenseIndex.of(store).delete_document(document_id)
    LexicalIndex(store.tantivy_dir).delete_document(document_id)
    shutil.rmtree(store.document_dir(document_id), ignore_errors=True)
    store.unregister(document_id)
