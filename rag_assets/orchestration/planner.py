"""What `rag-assets ingest` must run, read from Dagster's records through its public API.

Dagster stores a data provenance with every materialization (tags of the event): the code
version the stage ran with and, per input, the record it read (its storage id). A stage of
a document is missing when never materialized; stale when its code version changed since,
or when one of its inputs has a newer record with another data version than the one read.
That is the rule of the stale status the UI shows, on the same records. It is not
transitive (a stage whose input is unchanged is fresh, however stale that input is): what
runs is the stale or missing stages and everything downstream of them, as the stages'
automation conditions request.

Those conditions cannot be asked instead: they compare one tick of the automation sensor
with the previous one (its cursor), and an ingest has no previous tick."""

from __future__ import annotations

from typing import Iterable, Mapping

from dagster import AssetKey, DagsterInstance

from rag_assets.dagster_records import DATA_VERSION_TAG, Record, latest_record
from rag_assets.defs.ingestion.assets import STAGES, IngestionGraph
from rag_assets.settings import Settings
from rag_assets.store import KnowledgeStore

# Dagster's provenance tags on a materialization (part of the event log's stored format).
CODE_VERSION_TAG = "dagster/code_version"
INPUT_EVENT_POINTER_TAG = "dagster/input_event_pointer/"


def stale_or_missing(instance: DagsterInstance, graph: IngestionGraph, keys: Iterable[str]) -> dict[str, list[str]]:
    """Per document: the stages the UI shows stale or missing, in pipeline order."""
    return {key: _stale_or_missing(instance, graph, key) for key in keys}


def _stale_or_missing(instance: DagsterInstance, graph: IngestionGraph, key: str) -> list[str]:
    # the latest record of each asset of the document, filled in pipeline order (a stage's
    # inputs come before it)
    latest: dict[AssetKey, Record] = {}
    if source := latest_record(instance, graph.source_key, key, observed=True):
        latest[graph.source_key] = source
    found = []
    for stage in STAGES:
        record = latest_record(instance, graph.key(stage), key, observed=False)
        if record is None:
            found.append(stage)
            continue
        latest[graph.key(stage)] = record
        tags, definition = record[1], graph.definition(stage)
        if tags.get(CODE_VERSION_TAG) != definition.get_asset_spec().code_version or any(
            _input_changed(instance, graph, key, dep, tags, latest[dep])
            for dep in definition.dependency_keys
            if dep in latest
        ):
            found.append(stage)
    return found


def _input_changed(
    instance: DagsterInstance, graph: IngestionGraph, key: str, dep: AssetKey, tags: Mapping[str, str], latest: Record
) -> bool:
    """Whether input `dep` has another data version than the one a stage read: the record it
    read (named by the stage's `tags`) against `dep`'s latest, as Dagster compares partitions."""
    pointer = tags.get(INPUT_EVENT_POINTER_TAG + dep.to_user_string())
    if pointer is None:  # not an input when the stage ran
        return True
    if not pointer.isdigit():  # no record of it then: Dagster reads it as unchanged
        return False
    storage_id, now = latest
    if storage_id <= int(pointer):
        return False
    read = latest_record(instance, dep, key, observed=dep == graph.source_key, before=int(pointer) + 1)
    return (read[1].get(DATA_VERSION_TAG) if read else None) != now.get(DATA_VERSION_TAG)


def stages_to_run(instance: DagsterInstance, graph: IngestionGraph, keys: Iterable[str]) -> dict[str, list[str]]:
    """Per document: its stale or missing stages and everything downstream of them."""
    return {key: graph.downstream(stages) for key, stages in stale_or_missing(instance, graph, keys).items()}


def absent_from_store(settings: Settings, key: str) -> list[str]:
    """The stages whose files the store does not hold for document `key`. The instance's
    records describe the store they were made in: another store given the same instance
    (a new `RAG_ASSETS_EVAL_STORES`, a document folder deleted) would otherwise be reported
    fresh by Dagster and never built."""
    store = KnowledgeStore.of(settings)
    outputs = {
        "source_document": store.document_dir(key) / "source.json",
        "docling_document": store.docling_dir(key) / "document.json",
        "parents": store.parents_path(key),
        "children": store.children_path(key),
    }
    return [stage for stage, path in outputs.items() if not path.exists()]


def plan(
    instance: DagsterInstance, graph: IngestionGraph, settings: Settings, keys: list[str], force: bool = False
) -> dict[str, list[str]]:
    """Per document (already observed): the stages its run materializes, none when it is
    fresh; `force`: every stage. A stage the store lacks runs with what is downstream of it."""
    found = {key: list(STAGES) for key in keys} if force else stages_to_run(instance, graph, keys)
    for key in keys:
        if absent := absent_from_store(settings, key):
            found[key] = graph.downstream([*found[key], *absent])
    return found
