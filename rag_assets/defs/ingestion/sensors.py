"""The inbox sensor: files dropped in, changed in or removed from the watched folder
become partitions (added or deleted), observations of their bytes and withdrawal runs.

It decides nothing about what to re-run: a new or changed file is an observation of
`source_file` with a new data version, and the stages' automation conditions (the
`ingestion_automation` sensor) run what depends on it."""

import json
from collections.abc import Sequence

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, SkipReason, sensor

from rag_assets.defs.ingestion.assets import product_graph, source_observations, source_versions
from rag_assets.defs.ingestion.jobs import withdraw_job, withdraw_run_config
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.ingest import planning
from rag_assets.settings import Settings


def evaluate_inbox(settings: Settings, partitions: Sequence[str], cursor: str | None) -> SensorResult | SkipReason:
    """`partitions`: the `documents` partitions that exist; `cursor`: the sha256 per document
    this sensor last reported (JSON), so an unchanged file is not observed again."""
    settings.inbox.mkdir(parents=True, exist_ok=True)
    # symbolic links are not followed (RAG_ASSETS_FOLLOW_LINKS_INSIDE: those staying inside)
    registration = planning.register(settings, planning.candidate_files([settings.inbox], settings.follow_links_inside))
    seen: dict[str, str] = json.loads(cursor) if cursor else {}
    versions = source_versions(settings, registration.paths)
    changed = {key: sha for key, sha in versions.items() if seen.get(key) != sha}
    existing = set(partitions)
    gone = [key for key in planning.withdrawn(settings, settings.inbox) if key in existing or key in seen]
    new = sorted(set(registration.paths) - existing)
    if not changed and not gone and not new:
        return SkipReason(f"nothing new in {settings.inbox}")
    requests = []
    if gone:
        requests.append(
            RunRequest(
                job_name=withdraw_job.name,
                run_config=withdraw_run_config(withdraw_job, gone),
                tags={"rag_assets/reason": "deleted from the inbox"},
            )
        )
    return SensorResult(
        run_requests=requests,
        asset_events=source_observations(product_graph, changed),
        dynamic_partitions_requests=[
            product_graph.partitions.build_add_request(new),
            product_graph.partitions.build_delete_request(sorted(set(gone) & existing)),
        ],
        cursor=json.dumps({key: sha for key, sha in {**seen, **versions}.items() if key not in gone}, sort_keys=True),
    )


# Running by default: dropping a file in the inbox is how users expect to add it.
@sensor(
    jobs=[withdraw_job],
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description="Watches the inbox folder ($RAG_ASSETS_INBOX): adds and deletes partitions, observes files.",
)
def inbox_sensor(context: SensorEvaluationContext, knowledge: KnowledgeStoreResource):
    partitions = context.instance.get_dynamic_partitions(product_graph.partitions.name)
    return evaluate_inbox(knowledge.settings(), partitions, context.cursor)
