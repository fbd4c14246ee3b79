"""The Dagster UI as a person opens it: the webserver started on the project's
workspace.yaml, then the asset lineage and the asset catalog in headless Chromium.

Needs Debian's `chromium` (/usr/bin/chromium) and the `playwright` Python package (its
own browser downloads are never used); the browser test skips when either is absent.
The GraphQL check needs neither.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the Dagster webserver and a browser

PROJECT_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ASSET_KEYS = {
    "source_document",
    "docling_document",
    "parents",
    "children",
    "dense_embeddings",
    "lexical_index",
    "publication",
}
START_TIMEOUT = 120  # seconds for the webserver to answer and load the code location


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, timeout: float = 5) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def graphql(base_url: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{base_url}/graphql", data=json.dumps({"query": query}).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            payload = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise AssertionError(f"GraphQL {exc.code}: {exc.read()[:2000]!r}") from exc
    assert "errors" not in payload, payload["errors"]
    return payload["data"]


LOCATIONS = """{ workspaceOrError { __typename ... on Workspace { locationEntries {
    name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


def _stop(process: subprocess.Popen) -> None:
    """The webserver and its code-server child: the whole process group."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture(scope="module")
def dagster_ui(tmp_path_factory):
    """Base URL of `dagster-webserver -w workspace.yaml` on a free port, with an empty
    DAGSTER_HOME and knowledge store; killed (process group) at the end."""
    root = tmp_path_factory.mktemp("dagster_ui")
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = dict(
        os.environ,
        DAGSTER_HOME=str(home),
        RAG_ASSETS_STORE=str(root / "knowledge"),
        RAG_ASSETS_INBOX=str(root / "inbox"),
        DAGSTER_DISABLE_TELEMETRY="1",
    )
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}"
    log_path = root / "webserver.log"
    started = time.monotonic()
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        status = None
        while time.monotonic() - started < START_TIMEOUT:
            if process.poll() is not None:
                pytest.fail(f"dagster-webserver exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                json.loads(_get(f"{base_url}/server_info"))
                entries = graphql(base_url, LOCATIONS)["workspaceOrError"]["locationEntries"]
                status = [(e["loadStatus"], e["locationOrLoadError"]) for e in entries]
                if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                    errors = [e for e in entries if e["locationOrLoadError"]["__typename"] == "PythonError"]
                    assert not errors, f"code location failed to load: {errors}"
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        else:
            pytest.fail(
                f"Dagster UI not ready within {START_TIMEOUT} s (locations: {status}):\n{log_path.read_text()[-3000:]}"
            )
        print(f"Dagster UI ready in {time.monotonic() - started:.1f} s at {base_url}")
        yield base_url
    finally:
        _stop(process)


def test_graphql_lists_the_assets_and_the_documents_partitions(dagster_ui):
    data = graphql(
        dagster_ui,
        """{
        assetNodes { assetKey { path } groupName
          partitionDefinition { type dimensionTypes { type dynamicPartitionsDefinitionName } } }
    }""",
    )
    nodes = {"/".join(n["assetKey"]["path"]): n for n in data["assetNodes"]}
    assert ASSET_KEYS <= set(nodes), sorted(nodes)
    for key in ASSET_KEYS:
        node = nodes[key]
        assert node["groupName"] == "ingestion", key
        definition = node["partitionDefinition"]
        assert definition and definition["type"] == "DYNAMIC", (key, definition)
        assert [d["dynamicPartitionsDefinitionName"] for d in definition["dimensionTypes"]] == ["documents"], key
    assert nodes["source_file"]["partitionDefinition"]["type"] == "DYNAMIC"  # the observed files
    # each evaluation corpus: the same graph under its own prefix, partitions and group
    for key in ASSET_KEYS | {"source_file"}:
        node = nodes[f"golden-sample/{key}"]
        assert node["groupName"] == "corpus_golden_sample", key
        assert [d["dynamicPartitionsDefinitionName"] for d in node["partitionDefinition"]["dimensionTypes"]] == [
            "golden-sample_documents"
        ], key
    assert nodes["golden-sample/retrieval_evaluation"]["groupName"] == "evaluation"


def _launch_browser(playwright):
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


def _dismiss_popups(page) -> None:
    """Fallback for the 'Join the Dagster community' dialog (see `browser`)."""
    skip = page.get_by_role("button", name="Skip")
    if skip.count():
        skip.first.click()
        skip.first.wait_for(state="detached", timeout=10_000)


@pytest.fixture(scope="module")
def browser(request):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent: apt-get install chromium (Debian's build; playwright's own is never used)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="the playwright package is absent: pip install playwright"
    )
    dagster_ui = request.getfixturevalue("dagster_ui")
    # On 127.0.0.1 a fresh instance opens a 'Join the Dagster community' dialog over the
    # page a moment after load; this is what its Skip button records.
    assert graphql(dagster_ui, "mutation { setNuxSeen }")["setNuxSeen"] is True
    with sync_api.sync_playwright() as playwright:
        browser = _launch_browser(playwright)
        try:
            yield browser
        finally:
            browser.close()


def test_asset_lineage_graph_shows_every_asset(browser, dagster_ui, tmp_path):
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    # An evaluation asset's upstream lineage is its corpus's whole pipeline
    # (golden-sample/source_file ⇢ … → golden-sample/publication → golden-sample/retrieval_evaluation),
    # laid out to fit (the global graph starts with its groups collapsed once there are several).
    page.goto(
        f"{dagster_ui}/assets/golden-sample/retrieval_evaluation?view=lineage&lineageScope=upstream&lineageDepth=10",
        wait_until="domcontentloaded",
    )
    # Graph nodes are HTML inside the SVG's foreignObjects; the sidebar lists the keys too.
    page.locator("svg foreignObject", has_text="publication").first.wait_for(timeout=60_000)
    _dismiss_popups(page)
    page.wait_for_load_state("networkidle", timeout=30_000)
    shot = tmp_path / "asset_lineage.png"
    page.screenshot(path=str(shot))
    print(f"screenshot: {shot}")
    nodes = set(page.locator("svg foreignObject").all_text_contents())
    nodes = {line.strip() for text in nodes for line in text.splitlines() if line.strip()}
    assert ASSET_KEYS | {"source_file"} <= nodes, sorted(nodes)
    assert {"corpus_golden_sample", "evaluation"} <= nodes, sorted(nodes)
    assert any("evaluation" in n and n != "evaluation" for n in nodes)  # the node's label may be elided
    assert "ingestion" not in nodes, "the product's graph is not upstream of an evaluation"
    # edges: source_file ⇢ source_document → … → publication → retrieval_evaluation is 10 edges
    assert page.locator("svg path").count() >= 10
    assert shot.stat().st_size > 10_000
    page.close()


def test_asset_catalog_lists_every_asset_partitioned(browser, dagster_ui, tmp_path):
    # The catalog renders the rows in view only: tall enough for the product's and the
    # evaluation corpora's assets (about 60 rows).
    page = browser.new_page(viewport={"width": 1600, "height": 4200})
    page.goto(f"{dagster_ui}/assets", wait_until="domcontentloaded")
    try:
        page.get_by_text("source_document", exact=True).first.wait_for(timeout=60_000)
    finally:
        page.screenshot(path=str(tmp_path / "asset_catalog.png"), full_page=True)
        print(f"screenshot: {tmp_path / 'asset_catalog.png'}")
    _dismiss_popups(page)
    page.wait_for_load_state("networkidle", timeout=30_000)
    page.screenshot(path=str(tmp_path / "asset_catalog.png"), full_page=True)
    for key in ASSET_KEYS:
        assert page.get_by_text(key, exact=True).count() >= 1, key
    body = page.inner_text("body")
    assert "ingestion" in body
    assert "0 partitions" in body  # partitioned assets, no document registered in this instance
    page.close()
