"""Each evaluation corpus is its own asset graph (same factory as the product's, its own
key prefix, partitions and store), the evaluation asset only reads that store, and a
document that fails to ingest is reported and costs its questions (misses), on a real
Dagster instance; a SciFact slice end to end, then printed by the CLI."""

import argparse
import dataclasses
import shutil

import pandas as pd
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    DefaultScheduleStatus,
    Definitions,
    RunRequest,
    build_schedule_context,
    define_asset_job,
    validate_run_config,
)

from rag_assets.commands.evaluate import add_eval_parser, eval_options
from rag_assets.defs.evaluation.assets import CORPORA, nightly_benchmarks
from rag_assets.defs.ingestion.assets import STAGES
from rag_assets.evaluation import reporting, targets
from rag_assets.evaluation.ablation import ablation
from rag_assets.evaluation.evaluate import EvalOptions
from rag_assets.orchestration.evaluation_runs import run_evaluation
from rag_assets.orchestration.instance import open_instance
from rag_assets.orchestration.planner import stale_or_missing
from rag_assets.settings import SAMPLES_DIR
from rag_assets_tests.support.stores import make_settings


def test_each_corpus_is_its_own_graph_downstream_to_its_evaluation():
    from rag_assets.defs.definitions import defs

    graph = defs.resolve_asset_graph()
    for stage in STAGES:  # the product keeps its keys and partitions
        assert graph.get(AssetKey(stage)).partitions_def.name == "documents"
    for name in targets.target_names():
        corpus = CORPORA[name]
        evaluation = graph.get(AssetKey([name, "retrieval_evaluation"]))
        assert {
            AssetKey([name, s]) for s in ("dense_embeddings", "lexical_index", "publication")
        } <= evaluation.parent_keys
        assert graph.get(AssetKey([name, "lexical_index"])).parent_keys == {AssetKey([name, "children"])}
        assert graph.get(AssetKey([name, "source_document"])).parent_keys == {AssetKey([name, "source_file"])}
        assert graph.get(AssetKey([name, "source_document"])).partitions_def.name == f"{name}_documents"
        assert not {k for k in evaluation.parent_keys if len(k.path) == 1}, "never the product's keys"
        assert corpus.resource(None).store.endswith(f"/{name}/knowledge")
        assert defs.resources[corpus.resource_key].store == corpus.resource(None).store


def test_one_options_type_for_the_cli_the_asset_and_evaluate():
    parser = argparse.ArgumentParser()
    add_eval_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["eval", "scifact", "--queries", "5", "--no-reference"])
    options = eval_options(args, targets.runs_root())
    assert isinstance(options, EvalOptions) and options.queries == 5 and options.reference is False
    # the asset's run config is EvalOptions: what the CLI passes is validated by Dagster as such
    corpus = CORPORA["scifact"]
    job = Definitions(
        assets=corpus.assets,
        resources={corpus.resource_key: corpus.resource()},
        jobs=[define_asset_job("evaluate", selection=[corpus.evaluation_key])],
    ).resolve_job_def("evaluate")
    config = {"ops": {corpus.evaluation.op.name: {"config": options.model_dump()}}}
    assert validate_run_config(job, config)["ops"][corpus.evaluation.op.name]["config"] == options.model_dump()


def test_nightly_schedule_refreshes_the_benchmarks():
    assert nightly_benchmarks.default_status == DefaultScheduleStatus.RUNNING
    result = nightly_benchmarks(build_schedule_context())
    if isinstance(result, list):
        [request] = result
        assert isinstance(request, RunRequest) and request.run_key.startswith("benchmarks-")
        assert set(request.tags["rag_assets/benchmarks"].split(",")) <= {"scifact", "piaf-dev", "cacm"}
    else:  # ../shared absent
        assert "absent" in result.skip_message


@pytest.mark.slow  # ingests the sample corpus through Dagster
@pytest.mark.dagster_run
def test_a_failed_document_is_reported_and_its_questions_count_as_misses(tmp_path, monkeypatch, capsys):
    corpus_root = tmp_path / "corpus"
    shutil.copytree(SAMPLES_DIR, corpus_root, ignore=shutil.ignore_patterns("*.py", "README.md"))
    (corpus_root / "avenant-1-contrat-MX-200.html").write_bytes(b"")  # fails: empty file
    monkeypatch.setitem(
        targets.GOLDEN,
        "golden-sample",
        dataclasses.replace(targets.GOLDEN["golden-sample"], corpus_root=str(corpus_root)),
    )
    settings = make_settings(tmp_path)
    options = EvalOptions(resamples=1000, runs_dir=str(tmp_path / "runs"))
    corpus = CORPORA["golden-sample"]
    with DagsterInstance.ephemeral() as instance:
        run = run_evaluation(
            "golden-sample", options, settings, instance, stores_root=tmp_path / "stores", log=lambda _: None
        )
        assert run.success, run.message
        statuses = {o.path.name: o.status for o in run.outcomes}
        assert statuses.pop("avenant-1-contrat-MX-200.html") == "failed"
        assert set(statuses.values()) == {"indexed"} and len(statuses) == 4
        # the corpus went through its own graph and partitions, never the product's
        keys = instance.get_dynamic_partitions(corpus.graph.partitions.name)
        assert len(keys) == 5 and instance.get_dynamic_partitions("documents") == []
        assert instance.get_latest_materialization_event(AssetKey(["golden-sample", "publication"]))
        assert instance.get_latest_materialization_event(AssetKey("publication")) is None
        # what the UI would show: the four good documents fresh, the failed one missing
        stale = stale_or_missing(instance, corpus.graph, keys)
        assert sorted(len(v) for v in stale.values()) == [0, 0, 0, 0, len(STAGES)]
        # the headline, the asset metadata and the table say so
        assert run.metadata["failed_documents"] == 1 and run.metadata["questions_on_failed_documents"] == 5
        assert "1 document failed to ingest (avenant-1-contrat-MX-200.html)" in run.metadata["headline"]
        assert "empty" in str(run.metadata["failed_documents_list"])
        assert "failed to ingest" in run.metadata["scores"]
        summary = reporting.load_summary(run.run_dir)
        table = reporting.text_table(summary)
        assert table.splitlines()[1].startswith("WARNING: 1 document failed to ingest"), table
        # the five questions on the failed document stay judged, at zero
        on_failed = summary["counts"]["questions_on_failed_documents"]
        assert len(on_failed) == 5 and not set(on_failed) & set(summary["counts"]["unjudged"])
        frame = pd.read_parquet(run.run_dir / reporting.PER_QUESTION)
        scored = frame[frame.qid.isin(on_failed) & (frame.engine == "hybrid")]
        assert len(scored) == 5 and scored.judged.all()
        # a second run ingests nothing that is fine (only the failed file is retried)
        again = run_evaluation(
            "golden-sample", options, settings, instance, stores_root=tmp_path / "stores", log=lambda _: None
        )
        assert sorted(o.status for o in again.outcomes) == ["failed", *["unchanged"] * 4]
        assert again.metadata["failed_documents"] == 1


def _cli(argv, settings):
    parser = argparse.ArgumentParser(prog="rag-assets")
    add_eval_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args, settings)


@pytest.mark.slow
@pytest.mark.dagster_run
def test_scifact_slice_through_dagster(shared_dir, tmp_path, capsys):
    settings = make_settings(tmp_path)
    options = EvalOptions(queries=15, distractors=60, resamples=1000, runs_dir=str(tmp_path / "runs"))
    with open_instance(settings) as instance:
        run = run_evaluation(
            "scifact", options, settings, instance, stores_root=tmp_path / "stores", log=lambda _: None
        )
        assert run.success, run.message
        metadata = run.metadata
        assert "| hybrid |" in metadata["scores"] and "data:image/png;base64" in metadata["recall_at_k"]
        assert metadata["judged_queries"] == 15 and metadata["failed_documents"] == 0
        # the shard went through the slice's own graph: its partitions, its keys
        [shard] = instance.get_dynamic_partitions("scifact_q15d60_documents")
        assert shard.startswith("scifact-01-of-01")
        assert instance.get_dynamic_partitions("documents") == []
        assert instance.get_latest_materialization_event(AssetKey(["scifact_q15d60", "dense_embeddings"]))
        assert instance.get_latest_materialization_event(AssetKey(["scifact_q15d60", "retrieval_evaluation"]))
    assert list(metadata["index_versions"]) == [shard]
    assert _cli(["eval", "scifact", "--show", "--runs-dir", str(tmp_path / "runs")], settings) == 0
    out = capsys.readouterr().out
    for engine in ("bm25 ", "dense ", "hybrid ", "bm25_reference "):
        assert engine in out
    assert "[" in out and "judged queries" in out
    # the ablation on the same store: the slice's own queries and qrels, split by position
    store = str(tmp_path / "stores" / "scifact@q15d60" / "knowledge")
    sides = {
        split: ablation(
            "scifact",
            settings,
            split,
            store,
            only=("+acronyms",),
            resamples=1000,
            log=lambda _: None,
            write=False,
            queries=15,
            distractors=60,
        )
        for split in ("dev", "test")
    }
    assert sides["dev"]["questions"] == 8 and sides["test"]["questions"] == 7
    assert sides["dev"]["target"] == "scifact@q15d60"
    assert set(sides["dev"]["rows"]) == {"bm25", "dense", "rrf", "+acronyms"}
    assert sides["dev"]["rows"]["rrf"]["ndcg@10"]["mean"] > 0
    assert set(sides["dev"]["versus_engines"]["rrf"]) >= {"ndcg@10 - bm25", "recall@5 - dense"}
    assert "Hybrid against each engine alone" in sides["dev"]["markdown"]
