"""The ingestion pipeline, one asset per stage, partitioned per document:

source_document → docling_document → parents → children → dense_embeddings → publication
                                                        ↘ lexical_index    ↗
"""


from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)

from rag_assets.ingest import stages as pipeline
from rag_assets.defs.ingestion.partitions import documents_partitions
from rag_assets.errors import DocumentError
from rag_assets.versions import CODE_VERSIONS

GROUP = "ingestion"


def _specs(asset_name: str) -> list[AssetCheckSpec]:
    return [AssetCheckSpec(name, asset=asset_name, blocking=blocking)
            for name, blocking in pipeline.STAGE_CHECKS.get(asset_name, {}).items()]


def _result(context: AssetExecutionContext, stage: str, result: pipeline.StageResult) -> MaterializeResult:
    metadata = {k: v for k, v in result.metadata.items() if v is not None}
    metadata["code_version"] = CODE_VERSIONS[stage]
    for warning in result.warnings:
        context.log.warning(warning)
    if result.warnings:
        metadata["warnings"] = MetadataValue.md("\n".join(f"- {w}" for w in result.warnings))
    pipeline.mark_stage_done(context.resources.knowledge.settings(), context.partition_key, stage, result.warnings)
    return MaterializeResult(
        metadata=metadata,
        data_version=DataVersion(result.data_version),
        check_results=[
            AssetCheckResult(check_name=name, passed=check.passed, description=check.description,
                             severity=AssetCheckSeverity.ERROR if check.blocking else AssetCheckSeverity.WARN)
            for name, check in result.checks.items()
        ],
    )


def _run(stage_fn, context: AssetExecutionContext, **kwargs):
    try:
        return stage_fn(context.resources.knowledge.settings(), context.partition_key, **kwargs)
    except DocumentError as exc:
        context.log.error(str(exc))
        raise Failure(description=str(exc), metadata={"file": exc.path, "reason": exc.reason}) from exc


def _stage_asset(name: str, deps: list, description: str, **extra):
    return asset(
        name=name,
        partitions_def=documents_partitions,
        code_version=CODE_VERSIONS[name],
        group_name=GROUP,
        deps=deps,
        description=description,
        check_specs=_specs(name),
        required_resource_keys={"knowledge"},
        **extra,
    )


@_stage_asset("source_document", [], "The source file copied under its sha256, with its sidecar metadata.")
def source_document(context: AssetExecutionContext) -> MaterializeResult:
    _record, result = _run(pipeline.run_source_document, context)
    return _result(context, "source_document", result)


@_stage_asset("docling_document", [source_document], "Docling conversion (JSON, pictures, manifest).")
def docling_document(context: AssetExecutionContext) -> MaterializeResult:
    result = _run(pipeline.run_docling_document, context)
    context.log.info(f"converted {result.metadata.get('pages') or 0} pages, {result.metadata['tables']} tables")
    return _result(context, "docling_document", result)


@_stage_asset("parents", [docling_document], "One parent per section (heading path), Parquet.")
def parents(context: AssetExecutionContext) -> MaterializeResult:
    return _result(context, "parents", _run(pipeline.run_parents, context))


@_stage_asset("children", [parents], "≤400-token contextualized chunks partitioning each parent, Parquet.")
def children(context: AssetExecutionContext) -> MaterializeResult:
    return _result(context, "children", _run(pipeline.run_children, context))


@_stage_asset("dense_embeddings", [children], "Child vectors in LanceDB, replacing the document's rows.")
def dense_embeddings(context: AssetExecutionContext) -> MaterializeResult:
    def progress(done: int, total: int) -> None:
        context.log.info(f"embedded {done}/{total} new children")

    result = _run(pipeline.run_dense_embeddings, context, progress=progress)
    result.metadata["model"] = MetadataValue.text(result.metadata["model"])
    return _result(context, "dense_embeddings", result)


# One Tantivy writer at a time: the pool serializes runs, the file lock covers other writers.
@_stage_asset("lexical_index", [children], "Children in the Tantivy index (French/English analyzers).", pool="tantivy_writer")
def lexical_index(context: AssetExecutionContext) -> MaterializeResult:
    return _result(context, "lexical_index", _run(pipeline.run_lexical_index, context))


@_stage_asset("publication", [dense_embeddings, lexical_index],
              "Makes the document version held by both indexes the one readers see, atomically.")
def publication(context: AssetExecutionContext) -> MaterializeResult:
    return _result(context, "publication", _run(pipeline.run_publication, context))


ingestion_assets = [source_document, docling_document, parents, children, dense_embeddings, lexical_index, publication]
