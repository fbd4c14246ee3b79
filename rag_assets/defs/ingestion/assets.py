"""The ingestion pipeline, one asset per stage, partitioned per document:

source_file ⇢ source_document → docling_document → parents → children → dense_embeddings → publication
                                                                      ↘ lexical_index    ↗

Freshness is Dagster's own, nothing else:

- ``source_file`` is an observable source asset partitioned like the documents; its data
  version is the sha256 of the document's file and its metadata (sidecars). Observing a file is cheap (a hash) and
  needs no run of the pipeline, so a changed file is seen without materializing anything:
  the inbox sensor reports observations of the files it sees, the nightly schedule runs
  the observation of every registered file, and ``rag-assets ingest`` reports the
  observation of the files it is given. (Making ``source_document`` itself the observed
  asset would not work: its data version only changes when it is materialized, i.e.
  after the copy we are trying to decide about.)
- Each stage carries its code version (rag_assets/versions.py; the stages that tokenize
  or embed also carry the embedder, its default runtime made explicit, which changes their
  output for the same input).
- Each stage carries STAGE_CONDITION, evaluated by the ``ingestion_automation`` sensor:
  run on new upstream data (a new observation of the file, a new materialization
  upstream) and on a code-version change, never while the asset or an upstream one is in
  progress. The UI's stale status and what runs therefore come from the same records.

The same factory builds the product's graph (no key prefix, ``documents`` partitions,
resource ``knowledge``) and each evaluation corpus's graph (``<corpus>/…`` keys, its own
partitions and store), see rag_assets/defs/evaluation/assets.py.
"""

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AssetsDefinition,
    AutomationCondition,
    BetaWarning,
    DataVersion,
    DataVersionsByPartition,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    SourceAsset,
    asset,
    observable_source_asset,
)

from rag_assets.dagster_records import DATA_VERSION_TAG
from rag_assets.defs.ingestion.partitions import documents_partitions
from rag_assets.embedding import versioned_spec
from rag_assets.errors import BudgetExceeded, DocumentError
from rag_assets.hashing import sha256_file
from rag_assets.ingest import stages as pipeline
from rag_assets.ingest.sources import document_version
from rag_assets.settings import Settings, load_settings
from rag_assets.store import KnowledgeStore, file_lock
from rag_assets.text.thesaurus import load_thesaurus
from rag_assets.versions import CODE_VERSIONS

GROUP = "ingestion"
SOURCE = "source_file"
STAGES = list(CODE_VERSIONS)  # pipeline order
# Stages whose output depends on the embedder (its tokenizer or its vectors).
EMBEDDER_STAGES = ("parents", "children", "dense_embeddings")
# What each stage writes, shown on the asset in the UI (Dagster's kinds).
STAGE_KINDS = {
    "source_document": {"file"},
    "docling_document": {"docling", "json"},
    "parents": {"polars", "parquet"},
    "children": {"polars", "parquet"},
    "dense_embeddings": {"lancedb"},
    "lexical_index": {"tantivy"},
    "publication": {"json"},
}
# Failure metadata naming the budget (setting) a document was refused for.
REFUSED_METADATA = "refused_over"

# Dagster's eager() without its "newly missing only" restriction on code changes:
# requested when the partition appears (newly missing), when an upstream asset has new
# data (or will be requested this tick: the whole downstream chain goes in one run), or
# when the stage's own code version changed; held while anything it needs is missing or
# in progress, and while it is itself in progress.
STAGE_CONDITION = (
    # dagster types since_last_handled's self as AutomationCondition[AssetKey | AssetCheckKey]
    (  # type: ignore[misc]
        AutomationCondition.newly_missing()
        | AutomationCondition.any_deps_updated()
        | AutomationCondition.code_version_changed()
    ).since_last_handled()
    & ~AutomationCondition.any_deps_missing()
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("new upstream data or code version, not in progress")


@dataclass(frozen=True)
class IngestionGraph:
    """One document collection's asset graph: the observed source and the seven stages."""

    prefix: str | None  # None: the product's keys (source_document, …)
    partitions: DynamicPartitionsDefinition
    resource_key: str  # the KnowledgeStoreResource the stages read their settings from
    source: SourceAsset
    stages: tuple[AssetsDefinition, ...]
    embedder: str  # the embedder its code versions name

    def key(self, stage: str) -> AssetKey:
        return AssetKey([self.prefix, stage] if self.prefix else [stage])

    @property
    def source_key(self) -> AssetKey:
        return self.key(SOURCE)

    @property
    def assets(self) -> list:
        return [self.source, *self.stages]

    @property
    def step_keys(self) -> frozenset[str]:
        """The step keys of its stages in a run (their ops' names, prefixed like the keys)."""
        return frozenset(stage.op.name for stage in self.stages)

    def stage_of(self, key: AssetKey) -> str:
        return key.path[-1]

    def definition(self, stage: str) -> AssetsDefinition:
        return next(a for a in self.stages if a.key == self.key(stage))

    def downstream(self, stages) -> list[str]:
        """The stages given and every stage downstream of them, in pipeline order."""
        chosen = set(stages)
        for stage in STAGES:  # pipeline order: a stage's deps come before it
            if {self.stage_of(k) for k in self.definition(stage).dependency_keys} & chosen:
                chosen.add(stage)
        return [s for s in STAGES if s in chosen]


def code_version(stage: str, embedder: str) -> str:
    version = CODE_VERSIONS[stage]
    if stage == "lexical_index":  # it indexes the thesaurus's everyday words with each child
        return f"{version}+thesaurus-{load_thesaurus().fingerprint()}"
    return f"{version}+{versioned_spec(embedder)}" if stage in EMBEDDER_STAGES else version


def source_versions(settings: Settings, keys) -> dict[str, str]:
    """Each registered document's data version: its file's sha256, with its metadata
    (documents whose file is gone are left out: the inbox sensor withdraws them)."""
    registry = KnowledgeStore(settings.store).registry()
    versions = {}
    for key in keys:
        try:
            path = Path(registry[key])
            versions[key] = document_version(settings, path, sha256_file(path))
        except (KeyError, OSError):
            continue
    return versions


def source_observations(graph: IngestionGraph, versions: dict[str, str]) -> list[AssetObservation]:
    """Observations of ``source_file`` partitions, as the observable source records them."""
    return [
        AssetObservation(asset_key=graph.source_key, partition=key, tags={DATA_VERSION_TAG: sha})
        for key, sha in sorted(versions.items())
    ]


def _specs(key: AssetKey, stage: str) -> list[AssetCheckSpec]:
    return [
        AssetCheckSpec(name, asset=key, blocking=blocking)
        for name, blocking in pipeline.STAGE_CHECKS.get(stage, {}).items()
    ]


def build_ingestion_graph(
    prefix: str | None = None,
    partitions: DynamicPartitionsDefinition = documents_partitions,
    resource_key: str = "knowledge",
    group: str = GROUP,
    embedder: str | None = None,
) -> IngestionGraph:
    """The source and the seven stage assets for one collection (code versions read now)."""
    embedder = embedder or load_settings().embedder

    def settings_of(context) -> Settings:
        return getattr(context.resources, resource_key).settings()

    def observe(context) -> DataVersionsByPartition:
        keys = context.instance.get_dynamic_partitions(partitions.name)
        versions = source_versions(settings_of(context), keys)
        return DataVersionsByPartition({key: DataVersion(sha) for key, sha in versions.items()})

    with warnings.catch_warnings():  # observable_source_asset is marked beta: say it once, here
        warnings.simplefilter("ignore", BetaWarning)
        source_file = observable_source_asset(
            name=SOURCE,
            key_prefix=prefix,
            partitions_def=partitions,
            group_name=group,
            required_resource_keys={resource_key},
            description="The document's file where it lives; data version = sha256 of its bytes and its metadata.",
        )(observe)

    def result(context: AssetExecutionContext, stage: str, outcome: pipeline.StageResult) -> MaterializeResult:
        metadata = {k: v for k, v in outcome.metadata.items() if v is not None}
        metadata["code_version"] = code_version(stage, embedder)
        for warning in outcome.warnings:
            context.log.warning(warning)
        if outcome.warnings:
            metadata["warnings"] = MetadataValue.md("\n".join(f"- {w}" for w in outcome.warnings))
        return MaterializeResult(
            metadata=metadata,
            data_version=DataVersion(outcome.data_version),
            check_results=[
                AssetCheckResult(
                    check_name=name,
                    passed=check.passed,
                    description=check.description,
                    severity=AssetCheckSeverity.ERROR if check.blocking else AssetCheckSeverity.WARN,
                )
                for name, check in outcome.checks.items()
            ],
        )

    def run(stage_fn, context: AssetExecutionContext, **kwargs):
        settings = settings_of(context)
        try:
            # One stage of a document at a time across processes: two ingests of the same file
            # would otherwise replace its folders while the other reads them.
            with file_lock(KnowledgeStore(settings.store).lock_path(f"document-{context.partition_key}")):
                return stage_fn(settings, context.partition_key, **kwargs)
        except DocumentError as exc:
            context.log.error(str(exc))
            metadata: dict[str, Any] = {"file": exc.path, "reason": exc.reason}
            if isinstance(exc, BudgetExceeded):  # refused for a budget, not broken
                metadata.update(
                    {
                        k: v
                        for k, v in {REFUSED_METADATA: exc.setting, "limit": exc.limit, "value": exc.value}.items()
                        if v is not None
                    }
                )
            raise Failure(description=str(exc), metadata=metadata) from exc

    def stage_asset(name: str, deps: list, description: str, **extra):
        key = AssetKey([prefix, name] if prefix else [name])
        return asset(
            key=key,
            partitions_def=partitions,
            code_version=code_version(name, embedder),
            group_name=group,
            deps=deps,
            description=description,
            check_specs=_specs(key, name),
            required_resource_keys={resource_key},
            automation_condition=STAGE_CONDITION,
            kinds=STAGE_KINDS[name],
            **extra,
        )

    @stage_asset(
        "source_document", [source_file], "The source file copied under its sha256, with its sidecar metadata."
    )
    def source_document(context: AssetExecutionContext) -> MaterializeResult:
        _record, outcome = run(pipeline.run_source_document, context)
        return result(context, "source_document", outcome)

    @stage_asset("docling_document", [source_document], "Docling conversion (JSON, pictures, manifest).")
    def docling_document(context: AssetExecutionContext) -> MaterializeResult:
        outcome = run(pipeline.run_docling_document, context)
        context.log.info(f"converted {outcome.metadata.get('pages') or 0} pages, {outcome.metadata['tables']} tables")
        return result(context, "docling_document", outcome)

    @stage_asset("parents", [docling_document], "One parent per section (heading path), Parquet.")
    def parents(context: AssetExecutionContext) -> MaterializeResult:
        return result(context, "parents", run(pipeline.run_parents, context))

    @stage_asset("children", [parents], "≤400-token contextualized chunks partitioning each parent, Parquet.")
    def children(context: AssetExecutionContext) -> MaterializeResult:
        return result(context, "children", run(pipeline.run_children, context))

    @stage_asset("dense_embeddings", [children], "Child vectors in LanceDB, replacing the document's rows.")
    def dense_embeddings(context: AssetExecutionContext) -> MaterializeResult:
        def progress(done: int, total: int) -> None:
            context.log.info(f"embedded {done}/{total} new children")

        outcome = run(pipeline.run_dense_embeddings, context, progress=progress)
        outcome.metadata["model"] = MetadataValue.text(outcome.metadata["model"])
        return result(context, "dense_embeddings", outcome)

    # One Tantivy writer at a time: the pool serializes runs, the file lock covers other writers.
    @stage_asset(
        "lexical_index", [children], "Children in the Tantivy index (French/English analyzers).", pool="tantivy_writer"
    )
    def lexical_index(context: AssetExecutionContext) -> MaterializeResult:
        return result(context, "lexical_index", run(pipeline.run_lexical_index, context))

    # No limit is set on either pool by default (a run killed while holding a slot keeps it
    # until freed by hand or by the daemon): `dagster instance concurrency set publication 1`.
    @stage_asset(
        "publication",
        [dense_embeddings, lexical_index],
        "Makes the document version held by both indexes the one readers see, atomically.",
        pool="publication",
    )
    def publication(context: AssetExecutionContext) -> MaterializeResult:
        return result(context, "publication", run(pipeline.run_publication, context))

    return IngestionGraph(
        prefix,
        partitions,
        resource_key,
        source_file,
        (source_document, docling_document, parents, children, dense_embeddings, lexical_index, publication),
        embedder,
    )


product_graph = build_ingestion_graph()
source_file = product_graph.source
ingestion_assets = list(product_graph.stages)
