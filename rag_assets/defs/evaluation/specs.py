"""What the specs of a corpus's evaluation assets share: their group, the index stages they
sit downstream of and their automation condition."""

from dagster import AutomationCondition

GROUP = "evaluation"
INDEX_STAGES = ("dense_embeddings", "lexical_index", "publication")

# Re-evaluate when the corpus's indexes changed (or the evaluation's code), once nothing
# upstream is in progress: the runs of one corpus refresh are requested together, so the
# evaluation waits for the last of them.
EVALUATION_CONDITION = (
    # dagster types since_last_handled's self as AutomationCondition[AssetKey | AssetCheckKey]
    (AutomationCondition.any_deps_updated() | AutomationCondition.code_version_changed()).since_last_handled()  # type: ignore[misc]
    & ~AutomationCondition.any_deps_in_progress()
    & ~AutomationCondition.in_progress()
).with_label("corpus indexes updated, corpus settled")
