"""The dense index and the publication pointer on an S3 endpoint: moto's S3 server on
127.0.0.1 (a real HTTP server speaking the S3 API, in a thread), LanceDB and boto3 talking
to it over HTTP."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from rag_assets.index.dense import DenseIndex
from rag_assets.index.filters import SearchFilters
from rag_assets.index.publication import PUBLISHED_FILE, ObjectPointer, publish, read_publication, withdraw
from rag_assets.object_store import ObjectStore
from rag_assets.store import KnowledgeStore
from rag_assets_tests.index.test_dense_ann import DIM, _rows, _unit

moto_server = pytest.importorskip("moto.server")
BUCKET = "rag-assets-test"
KEYS = {"s3_access_key_id": "testing", "s3_secret_access_key": "testing"}


@pytest.fixture(scope="module")
def s3_endpoint():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    ObjectStore(f"s3://{BUCKET}", endpoint, access_key_id="testing", secret_access_key="testing").client.create_bucket(
        Bucket=BUCKET
    )
    yield endpoint
    server.stop()


@pytest.fixture
def objects(s3_endpoint, request) -> ObjectStore:
    return ObjectStore(
        f"s3://{BUCKET}/{request.node.name}", s3_endpoint, access_key_id="testing", secret_access_key="testing"
    )


def _keys(objects: ObjectStore) -> list[str]:
    listed = objects.client.list_objects_v2(Bucket=objects.bucket, Prefix=objects.prefix + "/")
    return [o["Key"] for o in listed.get("Contents", [])]


def test_dense_index_written_and_searched_on_s3(objects, tmp_path):
    store = KnowledgeStore(tmp_path / "knowledge", objects)
    rng = np.random.default_rng(1)
    vectors = _unit(rng, 300)
    writer = DenseIndex.of(store)
    writer.add(_rows(0, 300, vectors), DIM)
    rows = [dict(r, version="v2") for r in _rows(0, 100, vectors[:100]).to_pylist()]
    writer.stage_version("d0", "v2", rows, DIM, keep=set())  # a merge-insert commit, as ingest's

    reader = DenseIndex.of(KnowledgeStore(tmp_path / "knowledge", objects))  # another connection
    filters = SearchFilters.from_dict(None, None)
    assert reader.search(vectors[250], filters, 1)[0]["child_id"] == "c250"
    assert reader.count("d0", "v2") == 100 and reader.count("d0") == 100  # v1 rows of d0 replaced
    assert reader.count("d2") == 100
    assert any(k.startswith(f"{objects.prefix}/lancedb/children.lance/") for k in _keys(objects))
    assert not (tmp_path / "knowledge" / "lancedb").exists()


def test_publication_pointer_is_one_conditional_put_on_s3(objects, tmp_path):
    store = KnowledgeStore(tmp_path / "knowledge", objects)
    for document, version in (("doc-a", "v1"), ("doc-a", "v2"), ("doc-b", "v1")):
        store.parents_path(document).parent.mkdir(parents=True, exist_ok=True)
        for path in (store.parents_path(document), store.children_path(document)):
            path.write_bytes(b"parquet bytes")
        publish(store, document, version, {"children": 1})
    assert {d: e["version"] for d, e in read_publication(store).items()} == {"doc-a": "v2", "doc-b": "v1"}
    assert _keys(objects) == [objects.key(PUBLISHED_FILE)]
    assert not (tmp_path / "knowledge" / PUBLISHED_FILE).exists()

    _, etag = objects.read_json(PUBLISHED_FILE)
    withdraw(store, "doc-b")
    assert objects.replace_json(PUBLISHED_FILE, {"stale": {}}, etag) is False  # read before the withdrawal
    assert objects.replace_json("other.json", {}, None) is True
    assert objects.replace_json("other.json", {}, None) is False  # If-None-Match: * on an existing object
    assert set(read_publication(store)) == {"doc-a"}


def test_concurrent_flips_all_land_and_readers_see_whole_versions(objects):
    pointer, writers, flips = ObjectPointer(objects), 4, 5
    seen: list[int] = []
    done = threading.Event()

    def writer(number: int) -> None:
        for flip in range(flips):
            name = f"doc-{number}-{flip}"
            pointer.edit(lambda publication: publication.update({name: {"version": "v1"}}) or True)

    def reader() -> None:
        while not done.is_set():
            seen.append(len(pointer.read()))  # a torn object would not parse

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    watcher.join()
    assert len(pointer.read()) == writers * flips  # no writer overwrote another's entry
    assert seen == sorted(seen), "every read saw a whole version, each at least as new as the last"


@pytest.mark.slow
@pytest.mark.dagster_run
def test_ingest_through_dagster_writes_searches_and_publishes_on_s3(objects, sample_copy, tmp_path, monkeypatch):
    """A sample document ingested through Dagster with RAG_ASSETS_OBJECT_STORE: its vectors and
    its publication are objects on the endpoint, and search finds it there."""
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance
    from rag_assets.retrieve.knowledge_base import KnowledgeBase
    from rag_assets.settings import load_settings
    from rag_assets_tests.support.stores import make_settings

    # the environment, not only these settings: the run's resource reads its settings from it
    for name, value in {
        "OBJECT_STORE": objects.uri,
        "S3_ENDPOINT": objects.endpoint,
        "S3_ACCESS_KEY_ID": "testing",
        "S3_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(f"RAG_ASSETS_{name}", value)
    settings = make_settings(tmp_path).model_copy(
        update={
            name: getattr(load_settings(), name)
            for name in ("object_store", "s3_endpoint", "s3_access_key_id", "s3_secret_access_key")
        }
    )
    instance = open_instance(settings)
    try:
        [outcome] = ingest([sample_copy / "note-provisionnement-non-vie.md"], settings, instance)
    finally:
        instance.dispose()
    assert outcome.status == "indexed", outcome.message
    published = ObjectPointer(objects).read()
    assert list(published) == [outcome.document_id]
    assert (
        DenseIndex.of(KnowledgeStore.of(settings)).count(outcome.document_id, published[outcome.document_id]["version"])
        == published[outcome.document_id]["children"]
    )
    assert not (settings.store / PUBLISHED_FILE).exists() and not (settings.store / "lancedb").exists()
    hits = KnowledgeBase.from_settings(settings).search("provision pour sinistres à payer", k=3)
    assert hits and hits[0].document_id == outcome.document_id
