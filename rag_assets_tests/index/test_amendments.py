"""The amendment rule on constructed source records: a sidecar's `amends` holds only inside the
amending document's folder tree and for groups no broader than the amended document's."""

from __future__ import annotations

from rag_assets.answering.citations import dated_name
from rag_assets.index.amendments import FOLDER, GROUPS, amendments, refused_at_ingest
from rag_assets.index.records import SourceRecord


def record(document_id: str, path: str, groups=("public",), title: str | None = None, **extra) -> SourceRecord:
    name = path.rsplit("/", 1)[-1]
    return SourceRecord(
        document_id=document_id,
        original_path=path,
        file_name=name,
        stored_path=f"/store/{name}",
        sha256=document_id,
        size_bytes=1,
        media_type="text/markdown",
        title=title or name,
        language="fr",
        document_type=None,
        effective_date=None,
        allowed_groups=list(groups),
        extra=extra,
    )


POLICY = record("policy", "/docs/polices/police.pdf", title="Contrat Habitation")


def test_an_amendment_in_the_same_folder_holds():
    avenant = record("avenant", "/docs/polices/avenant.md", amends="police.pdf")
    found = amendments({"policy": POLICY, "avenant": avenant})
    assert found.amends == {"avenant": ["policy"]} and found.amended_by == {"policy": ["avenant"]}
    assert found.refused == []


def test_an_amendment_from_a_folder_above_holds_and_one_from_a_sibling_folder_is_refused():
    above = record("above", "/docs/avenant.md", supersedes=["Contrat Habitation"])  # by title
    sibling = record("rogue", "/docs/ailleurs/rogue.md", amends="police.pdf")
    found = amendments({"policy": POLICY, "above": above, "rogue": sibling})
    assert found.amended_by == {"policy": ["above"]}
    [refused] = found.refused
    assert (refused.amending, refused.amended, refused.rule) == ("rogue", "policy", FOLDER)
    assert refused.warning == (
        "amends 'police.pdf' (/docs/polices/police.pdf): refused, it is not in this "
        "document's folder (/docs/ailleurs) or below it; the amendment is not applied"
    )


def test_a_broader_group_may_not_amend_and_a_narrower_one_may():
    claims = record("claims", "/docs/note.md", groups=["claims"])
    public = record("public", "/docs/rectificatif.md", amends="note.md")
    two_groups = record("two", "/docs/mixte.md", groups=["claims", "finance"], amends="note.md")
    narrower = record("narrow", "/docs/sinistres.md", groups=["claims"], amends="police.md")
    policy = record("policy", "/docs/police.md")
    found = amendments({d.document_id: d for d in (claims, public, two_groups, narrower, policy)})
    assert found.amends == {"narrow": ["policy"]}
    assert {(r.amending, r.rule) for r in found.refused} == {("public", GROUPS), ("two", GROUPS)}
    assert "readable by public, more widely than the amended one (claims)" in found.refused[0].warning


def test_a_name_also_matching_a_file_out_of_reach_amends_the_one_in_reach_without_a_refusal():
    elsewhere = record("other", "/autre/police.pdf")
    avenant = record("avenant", "/docs/polices/avenant.md", amends="polices/police.pdf")
    found = amendments({"policy": POLICY, "other": elsewhere, "avenant": avenant})
    assert found.amends == {"avenant": ["policy"]} and found.refused == []


def test_at_ingest_a_target_only_registered_yet_is_refused_by_its_folder():
    rogue = record("rogue", "/docs/ailleurs/rogue.md", amends="police.pdf")
    registry = {"policy": "/docs/polices/police.pdf", "rogue": "/docs/ailleurs/rogue.md"}
    [refused] = refused_at_ingest(rogue, registry, {})
    assert (refused.amended, refused.rule, refused.amended_path) == ("policy", FOLDER, "/docs/polices/police.pdf")
    # recorded: its groups count too
    public = record("public", "/docs/polices/rectificatif.md", amends="police.pdf")
    restricted = record("policy", "/docs/polices/police.pdf", groups=["claims"])
    assert [r.rule for r in refused_at_ingest(public, registry, {"policy": restricted})] == [GROUPS]
    assert refused_at_ingest(public, registry, {"policy": POLICY}) == []
    # registered, in reach, groups not known yet: nothing to say before its own ingestion
    assert refused_at_ingest(public, registry, {}) == []


def test_a_dated_name_says_an_unknown_date_in_the_answer_language():
    assert dated_name({"title": "Avenant", "effective_date": "2024-10-01"}) == "« Avenant » (date d'effet : 2024-10-01)"
    assert dated_name({"title": "Avenant"}) == "« Avenant » (date d'effet : date inconnue)"
    assert dated_name({"title": "Rider"}, "en") == "“Rider” (effective date: date unknown)"
