"""What the specs of a corpus's evaluation assets share: their group, the index stages they
sit downstream of, their automation condition and a run config schema generated from an
options dataclass."""

import dataclasses
import typing

from dagster import AutomationCondition, Field

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


# An evaluation asset's run config is its options dataclass itself: the schema is generated
# from the fields (Dagster's Config classes are pydantic models; a generated schema keeps
# one declaration).
_PYTHON_TYPES = {int: int, str: str, bool: bool, float: float}


def dataclass_schema(cls) -> dict:
    hints = typing.get_type_hints(cls)
    return {
        f.name: Field(_PYTHON_TYPES[hints[f.name]], default_value=f.default, is_required=False)
        for f in dataclasses.fields(cls)
    }
