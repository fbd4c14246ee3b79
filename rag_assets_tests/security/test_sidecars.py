"""A sidecar mistake published a restricted document as public: `allowed_group: [claims]`,
`allowedGroups:`, `allowed_groups: []` or null, a `.meta.yml` extension, a sidecar name in
another case were all indexed as `public`, with no warning; unknown keys landed in `extra`; a
sidecar that was a symbolic link was followed out of the folder; a hard link to an outside
file was indexed. Each now refuses the document, naming the file and the key (or why), and a
reader with no group finds none of its text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rag_assets.errors import DocumentError
from rag_assets.ingest.planning import candidate_files
from rag_assets.ingest.sidecars import DEFAULTS_NAME, read_metadata

# case -> (files beside or above `doc.md` in the case's folder, words its refusal says)
SCHEMA = {
    "typo": (
        "allowed_group: [claims]\n",
        "doc.md.meta.yaml: unknown key 'allowed_group' (did you mean 'allowed_groups'?)",
    ),
    "camel-case": (
        "allowedGroups: [claims]\n",
        "doc.md.meta.yaml: unknown key 'allowedGroups' (did you mean 'allowed_groups'?)",
    ),
    "empty-list": ("allowed_groups: []\n", "doc.md.meta.yaml: key 'allowed_groups': is empty"),
    "null": ("allowed_groups:\n", "doc.md.meta.yaml: key 'allowed_groups': is empty"),
    "empty-group": ("allowed_groups: [claims, '']\n", "doc.md.meta.yaml: key 'allowed_groups[1]': is empty"),
    "unknown-key": ("allowed_groups: [claims]\ntoken: s3cr3t\n", "doc.md.meta.yaml: unknown key 'token' (keys are"),
    "language": ("allowed_groups: [claims]\nlanguage: de\n", "doc.md.meta.yaml: key 'language': Input should be"),
    "date-number": (
        "allowed_groups: [claims]\neffective_date: 20240101\n",
        "doc.md.meta.yaml: key 'effective_date': 20240101 is not an ISO date",
    ),
    "twice": (
        "allowed_groups: [claims]\nallowed_groups: [public]\n",
        "doc.md.meta.yaml: sidecar metadata is not valid YAML (key 'allowed_groups' is given twice",
    ),
}
LOOK_ALIKES = {
    "yml": "doc.md.meta.yml",
    "upper-name": "DOC.MD.meta.yaml",
    "upper-suffix": "doc.md.META.yaml",
    "defaults-yml": "_defaults.meta.yml",
    "defaults-case": "_Defaults.meta.yaml",
}
OUTSIDE_META = "allowed_groups: [public]\ntitle: Public\n"
REFUSED = [*SCHEMA, *LOOK_ALIKES, "sidecar-symlink", "defaults-symlink", "document-hard-link", "sidecar-hard-link"]


def word(case: str) -> str:
    """A word only this case's document holds."""
    return "zorg" + "".join(chr(ord("a") + (ord(c) % 26)) for c in case if c.isalpha())


def note(case: str) -> str:
    return f"# Note {case}\n\nLe dossier {word(case)} est réservé au service sinistres, qui le traite seul.\n"


def write_cases(docs: Path, outside: Path) -> dict[str, Path]:
    """One folder per case under ``docs``, each with ``doc.md``; returns case -> document."""
    documents = {}
    for case in REFUSED:
        (docs / case).mkdir(parents=True)
        documents[case] = docs / case / "doc.md"
        if case != "document-hard-link":
            documents[case].write_text(note(case), encoding="utf-8")
    for case, (text, _) in SCHEMA.items():
        (docs / case / "doc.md.meta.yaml").write_text(text, encoding="utf-8")
    for case, name in LOOK_ALIKES.items():
        (docs / case / name).write_text("allowed_groups: [claims]\n", encoding="utf-8")
    (outside / "evil.yaml").write_text(OUTSIDE_META + "token: s3cr3t\n", encoding="utf-8")
    (docs / "sidecar-symlink" / "doc.md.meta.yaml").symlink_to(outside / "evil.yaml")
    (docs / "defaults-symlink" / DEFAULTS_NAME).symlink_to(outside / "evil.yaml")
    (outside / "secret.md").write_text(note("document-hard-link"), encoding="utf-8")
    os.link(outside / "secret.md", documents["document-hard-link"])
    (outside / "public.yaml").write_text(OUTSIDE_META, encoding="utf-8")
    os.link(outside / "public.yaml", docs / "sidecar-hard-link" / "doc.md.meta.yaml")
    return documents


def expected_message(case: str, docs: Path) -> str:
    folder = docs / case
    if case in SCHEMA:
        return f"{folder}/{SCHEMA[case][1]}"
    if case in LOOK_ALIKES:
        exact = DEFAULTS_NAME if case.startswith("defaults") else "doc.md.meta.yaml"
        return f"{folder / LOOK_ALIKES[case]}: is not read: sidecars are named exactly {exact}"
    return {
        "sidecar-symlink": f"{folder}/doc.md.meta.yaml: is a symbolic link; sidecars are never followed",
        "defaults-symlink": f"{folder}/{DEFAULTS_NAME}: is a symbolic link; sidecars are never followed",
        "document-hard-link": f"{folder}/doc.md: has 2 names (hard links), 1 of them outside {docs}; a file with "
        "several names is read only when all of them are inside the folder ingested",
        "sidecar-hard-link": f"{folder}/doc.md: its metadata file {folder}/doc.md.meta.yaml has 2 names (hard "
        f"links), 1 of them outside {docs}",
    }[case]


@pytest.fixture(scope="module")
def sidecar_store(tmp_path_factory):
    """(settings, folder, outcomes by case) of one ingest of every case, beside documents that
    are indexed: a restricted one, one under a `_defaults.meta.yaml` (and one overriding
    it), one with no sidecar under RAG_ASSETS_DEFAULT_GROUPS=claims, two documents whose
    names differ in case, each with its own sidecar, and a file with two names inside the folder."""
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance
    from rag_assets_tests.support.stores import make_settings

    root = tmp_path_factory.mktemp("sidecars")
    docs, outside = root / "docs", root / "elsewhere"
    outside.mkdir()
    documents = write_cases(docs, outside)
    for case, meta in {"restricted": "allowed_groups: claims\n", "public": "allowed_groups: [public]\n"}.items():
        (docs / case).mkdir()
        documents[case] = docs / case / "doc.md"
        documents[case].write_text(note(case), encoding="utf-8")
        (docs / case / "doc.md.meta.yaml").write_text(meta, encoding="utf-8")
    (docs / "defaults" / "sub").mkdir(parents=True)
    (docs / "defaults" / DEFAULTS_NAME).write_text("allowed_groups: [claims]\nlanguage: fr\n", encoding="utf-8")
    for case, meta in {"inherits": "title: Hérite\n", "overrides": "allowed_groups: [public]\n"}.items():
        documents[case] = docs / "defaults" / "sub" / f"{case}.md"
        documents[case].write_text(note(case), encoding="utf-8")
        (docs / "defaults" / "sub" / f"{case}.md.meta.yaml").write_text(meta, encoding="utf-8")
    (docs / "bare").mkdir()
    documents["bare"] = docs / "bare" / "doc.md"
    documents["bare"].write_text(note("bare"), encoding="utf-8")
    (docs / "pair").mkdir()
    for name, groups in {"a.md": "[public]", "A.md": "[claims]"}.items():
        documents[f"pair-{name}"] = docs / "pair" / name
        documents[f"pair-{name}"].write_text(note(f"pair-{name}"), encoding="utf-8")
        (docs / "pair" / f"{name}.meta.yaml").write_text(f"allowed_groups: {groups}\n", encoding="utf-8")
    (docs / "inside").mkdir()
    documents["inside"] = docs / "inside" / "doc.md"
    documents["inside"].write_text(note("inside"), encoding="utf-8")
    os.link(documents["inside"], docs / "inside" / "same-bytes.md")  # both names inside the folder
    settings = make_settings(root).model_copy(update={"default_groups": ["claims"]})
    instance = open_instance(settings)
    by_path = {o.path: o for o in ingest([docs], settings, instance)}
    yield settings, docs, {case: by_path[path] for case, path in documents.items()}, by_path
    instance.dispose()


@pytest.mark.slow
@pytest.mark.dagster_run
@pytest.mark.parametrize("case", REFUSED)
def test_a_sidecar_mistake_refuses_the_document(sidecar_store, case):
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    settings, docs, outcomes, _ = sidecar_store
    outcome = outcomes[case]
    assert outcome.status in ("failed", "refused")
    assert outcome.message.startswith(expected_message(case, docs)), outcome.message
    assert "s3cr3t" not in outcome.message
    kb = KnowledgeBase.open(settings.store)
    for groups in (None, ["claims"]):  # not indexed at all, so not even for a group
        assert not any(word(case) in hit.text for hit in kb.search(note(case), k=10, groups=groups))


@pytest.mark.slow
@pytest.mark.dagster_run
def test_defaults_and_the_store_default_groups(sidecar_store):
    from rag_assets.retrieve.knowledge_base import KnowledgeBase

    settings, docs, outcomes, by_path = sidecar_store
    kb = KnowledgeBase.open(settings.store)
    groups = {
        case: kb.document(outcomes[case].document_id)["allowed_groups"]
        for case in ("restricted", "public", "inherits", "overrides", "bare", "pair-a.md", "pair-A.md")
    }
    assert groups == {
        "restricted": ["claims"],
        "public": ["public"],
        "inherits": ["claims"],
        "overrides": ["public"],
        "bare": ["claims"],
        "pair-a.md": ["public"],
        "pair-A.md": ["claims"],
    }
    inherits = kb.document(outcomes["inherits"].document_id)
    assert (inherits["title"], inherits["language"], inherits["extra"]) == ("Hérite", "fr", {})
    for case in ("restricted", "inherits", "bare", "pair-A.md"):
        assert not any(word(case) in hit.text for hit in kb.search(note(case), k=10))
        assert any(word(case) in hit.text for hit in kb.search(note(case), k=10, groups=["claims"]))
    kept = [*settings.store.rglob("*"), *settings.dagster_home.rglob("*")]  # the run logs too
    assert not any(b"s3cr3t" in path.read_bytes() for path in kept if path.is_file())
    # a file with two names inside the folder is read (once: the bytes are the same)
    assert {outcomes["inside"].status, by_path[docs / "inside" / "same-bytes.md"].status} == {"indexed", "duplicate"}


@pytest.mark.parametrize("case", [*SCHEMA, *LOOK_ALIKES, "sidecar-symlink", "defaults-symlink"])
def test_the_metadata_reader_names_the_file_and_the_key(tmp_path, case):
    docs, outside = tmp_path / "docs", tmp_path / "elsewhere"
    outside.mkdir()
    documents = write_cases(docs, outside)
    with pytest.raises(DocumentError) as error:
        read_metadata(documents[case])
    assert str(error.value).startswith(expected_message(case, docs))


def test_sidecars_defaults_and_look_alikes_are_not_documents(tmp_path):
    docs, outside = tmp_path / "docs", tmp_path / "elsewhere"
    outside.mkdir()
    write_cases(docs, outside)
    (docs / "upper-name" / "DOC.MD.META.YML").write_text("allowed_groups: [claims]\n")
    refused: dict = {}
    found = candidate_files([docs], False, refused)
    assert all(path.name == "doc.md" for path in [*found, *refused])
    assert set(refused) == {docs / "document-hard-link" / "doc.md", docs / "sidecar-hard-link" / "doc.md"}
    # a file given by itself: its folder is its parent
    assert candidate_files([docs / "document-hard-link" / "doc.md"], False, refused) == []


def test_a_single_string_is_one_group_and_identity_keys_are_kept(tmp_path):
    doc = tmp_path / "doc.md"
    (tmp_path / "doc.md.meta.yaml").write_text(
        "allowed_groups: claims\nreference: 12345\namends: a.docx\nlanguage: FR\neffective_date: '2024-03-01'\n"
    )
    meta = read_metadata(doc)
    assert (meta.allowed_groups, meta.reference, meta.amends, meta.language) == (["claims"], "12345", ["a.docx"], "fr")
    assert meta.effective_date.isoformat() == "2024-03-01"


def test_the_watched_folder_leaves_out_hard_links_to_outside_files(tmp_path):
    from rag_assets.defs.ingestion.sensors import evaluate_inbox
    from rag_assets_tests.support.stores import make_settings

    inbox, outside = tmp_path / "inbox", tmp_path / "elsewhere"
    inbox.mkdir()
    outside.mkdir()
    (inbox / "depot.md").write_text(note("depot"))
    (outside / "secret.md").write_text(note("secret"))
    os.link(outside / "secret.md", inbox / "lien-dur.md")
    (inbox / "meta-dure.md").write_text(note("meta-dure"))
    (outside / "public.yaml").write_text(OUTSIDE_META)
    os.link(outside / "public.yaml", inbox / "meta-dure.md.meta.yaml")
    result = evaluate_inbox(make_settings(tmp_path).model_copy(update={"inbox": inbox}), [], None)
    [added, _] = result.dynamic_partitions_requests
    assert [key.split("-")[0] for key in added.partition_keys] == ["depot.md"]


@pytest.mark.slow
@pytest.mark.dagster_run
def test_editing_a_sidecar_re_runs_the_document_and_a_mistake_withdraws_it(tmp_path):
    """The metadata is part of the document's data version: restricting an unchanged file takes
    effect at the next ingest, and a sidecar made wrong withdraws what was published (its old
    groups may be the very mistake being fixed)."""
    from rag_assets.orchestration.ingest_runs import ingest
    from rag_assets.orchestration.instance import open_instance
    from rag_assets.retrieve.knowledge_base import KnowledgeBase
    from rag_assets_tests.support.stores import make_settings

    docs = tmp_path / "docs"
    docs.mkdir()
    doc, sidecar = docs / "doc.md", docs / "doc.md.meta.yaml"
    doc.write_text(note("edited"), encoding="utf-8")
    sidecar.write_text("allowed_groups: [public]\n", encoding="utf-8")
    settings = make_settings(tmp_path)
    instance = open_instance(settings)

    def found(groups) -> bool:
        kb = KnowledgeBase.open(settings.store)
        return any(word("edited") in hit.text for hit in kb.search(note("edited"), k=5, groups=groups))

    try:
        [first] = ingest([docs], settings, instance)
        assert first.status == "indexed" and found(None)
        sidecar.write_text("allowed_groups: [claims]\n", encoding="utf-8")
        [second] = ingest([docs], settings, instance)
        assert second.status == "indexed", second.message
        assert not found(None) and found(["claims"])
        sidecar.write_text("allowed_group: [claims]\n", encoding="utf-8")
        [third] = ingest([docs], settings, instance)
        assert third.status == "failed"
        assert third.message.startswith(f"{sidecar}: unknown key 'allowed_group'")
        assert "its published version is withdrawn until this is fixed" in third.message
        assert not found(None) and not found(["claims"])
    finally:
        instance.dispose()
