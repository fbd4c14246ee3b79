"""The evaluation asset in the Dagster graph, the nightly schedule, and a SciFact slice
materialized through Dagster end to end (its shard ingested through the same ingestion
assets), then printed by the CLI."""

import argparse

import pytest
from dagster import AssetKey, DefaultScheduleStatus, Definitions, build_schedule_context, materialize

from rag_assets.defs.ingestion.assets import ingestion_assets
from rag_assets.defs.evaluation.assets import (
    evaluation_assets,
    evaluation_jobs,
    evaluation_partitions,
    evaluation_schedules,
    nightly_benchmarks,
    retrieval_evaluation,
)
from rag_assets.defs.resources import KnowledgeStoreResource
from rag_assets.defs.ingestion.runs import open_instance
from rag_assets.commands.evaluate import add_eval_parser
from rag_assets_tests.conftest import make_settings


def test_evaluation_is_downstream_of_the_index_assets():
    defs = Definitions(assets=[*ingestion_assets, *evaluation_assets], jobs=evaluation_jobs,
                       schedules=evaluation_schedules, resources={"knowledge": KnowledgeStoreResource()})
    graph = defs.resolve_asset_graph()
    parents = graph.get(AssetKey("retrieval_evaluation")).parent_keys
    assert {AssetKey("dense_embeddings"), AssetKey("lexical_index")} <= parents
    assert {"golden-sample", "golden-shared", "scifact", "piaf-dev", "cacm"} <= set(evaluation_partitions.get_partition_keys())
    assert defs.resolve_job_def("evaluate_retrieval").partitions_def == evaluation_partitions


def test_nightly_schedule_runs_the_benchmarks():
    assert nightly_benchmarks.default_status == DefaultScheduleStatus.RUNNING
    result = nightly_benchmarks(build_schedule_context())
    if isinstance(result, list):
        assert {r.partition_key for r in result} <= {"scifact", "piaf-dev", "cacm"}
    else:  # ../shared absent
        assert "absent" in result.skip_message


def _cli(argv, settings):
    parser = argparse.ArgumentParser(prog="rag-assets")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args, settings)


@pytest.mark.slow
def test_scifact_slice_through_dagster(shared_dir, tmp_path, capsys):
    settings = make_settings(tmp_path)
    config = {"queries": 15, "distractors": 60, "resamples": 1000, "runs_dir": str(tmp_path / "runs"),
              "stores_dir": str(tmp_path / "stores")}
    with open_instance(settings) as instance:
        result = materialize([retrieval_evaluation], partition_key="scifact", instance=instance,
                             resources={"knowledge": KnowledgeStoreResource(store=str(settings.store))},
                             run_config={"ops": {"retrieval_evaluation": {"config": config}}})
        assert result.success
        [event] = result.asset_materializations_for_node("retrieval_evaluation")
        metadata = event.metadata
        assert "| hybrid |" in metadata["scores"].value and "data:image/png;base64" in metadata["recall_at_k"].value
        assert metadata["judged_queries"].value == 15
        # the shard went through the ingestion assets of the same instance, one partition
        shards = [k for k in instance.get_dynamic_partitions("documents") if k.startswith("scifact-01-of-01")]
        assert len(shards) == 1
        assert instance.get_latest_materialization_event(AssetKey("dense_embeddings"))
    summary_index = metadata["index_versions"].value
    assert list(summary_index) == shards
    assert _cli(["eval", "scifact", "--show", "--runs-dir", str(tmp_path / "runs")], settings) == 0
    out = capsys.readouterr().out
    for engine in ("bm25 ", "dense ", "hybrid ", "bm25_reference "):
        assert engine in out
    assert "[" in out and "judged queries" in out
