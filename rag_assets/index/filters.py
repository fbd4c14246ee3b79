"""Metadata filters applied inside both engines before ranking."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from rag_assets.index.records import PUBLIC_GROUP


def reader_groups(groups) -> tuple[str, ...]:
    """The reader's groups from the one argument that carries them: None, a group name (a
    string is one group, never its letters) or an iterable of names. A lone surrogate (undecodable
    argv bytes) becomes '?': such a name matches no stored group, and the engines can encode it."""
    if groups is None:
        return ()
    names = [groups] if isinstance(groups, str) else groups
    cleaned = (str(g).encode("utf-8", "replace").decode("utf-8") for g in names)
    return tuple(g for g in cleaned if g.strip())


def _sql_list(values) -> str:
    return ", ".join("'" + str(v).replace("'", "''") + "'" for v in values)


@dataclass(frozen=True)
class SearchFilters:
    document_ids: tuple[str, ...] = ()
    document_types: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()
    # The reader's groups: a document is visible when it shares one of them. Public
    # documents are visible to everyone.
    groups: tuple[str, ...] = field(default=(PUBLIC_GROUP,))
    effective_from: str | None = None  # ISO dates, inclusive; undated documents are excluded
    effective_to: str | None = None
    # What names a document (parsing/identity.py): matched against each published document's
    # identity by the knowledge base, which narrows `document_ids` to them before the engines run.
    insurers: tuple[str, ...] = ()
    branches: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, filters: dict | None, groups=None) -> "SearchFilters":
        """`filters` can only narrow; the reader's access comes from `groups` alone."""
        filters = dict(filters or {})
        if "groups" in filters or "allowed_groups" in filters:  # a filter never grants access
            raise ValueError(
                "filters cannot set the reader's groups: pass them as the `groups` argument "
                "(access comes from the caller's identity; filters only narrow)"
            )

        def as_tuple(key):
            value = filters.pop(key, None)
            if value is None:
                return ()
            return (value,) if isinstance(value, str) else tuple(value)

        result = cls(
            document_ids=as_tuple("document_ids") or as_tuple("document_id"),
            document_types=as_tuple("document_types") or as_tuple("document_type"),
            languages=as_tuple("languages") or as_tuple("language"),
            groups=tuple(sorted({PUBLIC_GROUP, *reader_groups(groups)})),
            effective_from=_iso(filters.pop("effective_from", None)),
            effective_to=_iso(filters.pop("effective_to", None)),
            insurers=as_tuple("insurers") or as_tuple("insurer"),
            branches=as_tuple("branches") or as_tuple("branch"),
        )
        if filters:
            raise ValueError(f"unknown filter(s): {', '.join(sorted(filters))}")
        return result

    def lance_where(self) -> str:
        clauses = [f"array_has_any(allowed_groups, make_array({_sql_list(self.groups)}))"]
        if self.document_ids:
            clauses.append(f"document_id IN ({_sql_list(self.document_ids)})")
        if self.document_types:
            clauses.append(f"document_type IN ({_sql_list(self.document_types)})")
        if self.languages:
            clauses.append(f"language IN ({_sql_list(self.languages)})")
        if self.effective_from:
            clauses.append(f"effective_date >= '{self.effective_from}'")
        if self.effective_to:
            clauses.append(f"effective_date <= '{self.effective_to}'")
        return " AND ".join(clauses)


def _iso(value) -> str | None:
    if value is None:
        return None
    return dt.date.fromisoformat(str(value)).isoformat()


def date_number(iso: str | None) -> int:
    """ISO date as YYYYMMDD for Tantivy range queries; -1 for undated documents."""
    return int(iso.replace("-", "")) if iso else -1
