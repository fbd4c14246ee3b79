"""Issue 13, probe 2: `filters={"groups": ["claims"]}` granted the group, and
`groups="claims"` was split into letters. Access now comes from the caller's identity (one
`groups` argument); filters can only narrow."""

from __future__ import annotations

import pytest

from rag_assets.index.filters import SearchFilters, reader_groups

RESTRICTED_QUERY = "seuil de délégation du gestionnaire visioexpertise"  # the claims-only procedure


@pytest.mark.parametrize("key", ["groups", "allowed_groups"])
def test_a_groups_filter_is_refused(key):
    with pytest.raises(ValueError, match="filters cannot set the reader's groups"):
        SearchFilters.from_dict({key: ["claims"]})


def test_groups_come_from_one_argument_and_a_string_is_one_group():
    assert SearchFilters.from_dict(None, "claims").groups == ("claims", "public")
    assert SearchFilters.from_dict({"document_type": "policy"}, ["claims"]).groups == ("claims", "public")
    assert SearchFilters.from_dict(None).groups == ("public",)
    assert reader_groups("claims") == ("claims",) and reader_groups(None) == () and reader_groups("") == ()


def test_a_reader_without_the_group_cannot_filter_their_way_in(kb):
    # the claims-only document (public documents may rank in both searches, whatever the fusion)
    restricted = {
        h.document_id
        for h in kb.search(RESTRICTED_QUERY, k=5, groups=["claims"])
        if h.document_id.startswith("note-interne-procedure")
    }
    assert restricted
    with pytest.raises(ValueError, match="filters cannot set the reader's groups"):
        kb.search(RESTRICTED_QUERY, k=5, filters={"groups": ["claims"]})
    assert not restricted & {h.document_id for h in kb.search(RESTRICTED_QUERY, k=5)}
    assert not restricted & {h.document_id for h in kb.search(RESTRICTED_QUERY, k=5, groups="c")}
    # a string is one group, not its letters
    assert restricted & {h.document_id for h in kb.search(RESTRICTED_QUERY, k=5, groups="claims")}
    # undecodable argv bytes (a lone surrogate) name no group, and neither engine fails on them
    assert not restricted & {h.document_id for h in kb.search(RESTRICTED_QUERY, k=5, groups=["claims\udcff"])}
    answer = kb.ask(
        "Quel est le seuil de délégation du gestionnaire ?", user_groups="claims", offline=True, options=None
    )
    assert any(s.document_id in restricted for s in answer.sources)


# Passed when probed, kept as a test: a filter value is data, never part of a query.
HOSTILE_VALUES = [
    "procedure' OR '1'='1",
    "procedure\\' OR 1=1 --",
    "procedure\\",
    "proce\x00dure",
    "x') OR array_has_any(allowed_groups, make_array('claims')) OR ('",
    '"procedure"',
]


@pytest.mark.parametrize("key", ["document_type", "document_id", "language"])
def test_quotes_backslashes_and_nul_in_a_filter_only_narrow(kb, key):
    for value in HOSTILE_VALUES:
        for groups in (None, ["claims"]):
            hits = kb.search(RESTRICTED_QUERY, k=5, filters={key: value}, groups=groups)
            assert hits == [], f"{key}={value!r} matched {[h.document_id for h in hits]}"
    # the real value still narrows, and only within what the reader may see
    narrowed = {
        h.document_id
        for h in kb.search(RESTRICTED_QUERY, k=5, filters={"document_type": "procedure"}, groups=["claims"])
    }
    assert narrowed and all(d.startswith("note-interne-procedure") for d in narrowed)
    assert kb.search(RESTRICTED_QUERY, k=5, filters={"document_type": "procedure"}) == []
