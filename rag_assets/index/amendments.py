"""Which documents amend which. A sidecar's `amends` (or `supersedes`) names another document
by file name or title; the amending document then answers in its stead, the amended provision
shown after it as replaced.

A name alone proves nothing, so the relation holds only when

* the amended document lies in the amending document's own folder or below it: a file dropped
  elsewhere cannot reach into a folder it does not belong to;
* everyone who may read the amending document may read the amended one (its groups are the
  amended one's or narrower): a public file cannot overrule a restricted document, a `claims`
  note may amend a public policy.

A relation refused is not applied, and is said: by the ingestion on the amending document when
the amended one is known then, by the readers of the store otherwise.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from rag_assets.index.records import PUBLIC_GROUP, SourceRecord

RELATION_KEYS = ("amends", "supersedes")


def name_key(text: str) -> str:
    """What two spellings of one name share: case, accents' composition and punctuation aside."""
    text = unicodedata.normalize("NFKC", text or "").lower()
    return re.sub(r"[\W_]+", " ", text).strip()


def targets(record: SourceRecord) -> list[str]:
    """The documents the sidecar says this one amends or supersedes, as written there."""
    found = []
    for key in RELATION_KEYS:
        value = record.extra.get(key) or []
        found += [str(v) for v in ([value] if isinstance(value, str) else value) if v]
    return list(dict.fromkeys(found))


def named(target: str, names: Mapping[str, set[str]]) -> list[str]:
    """The document ids whose names (file name, title) `target` writes."""
    wanted = {name_key(Path(target).name), name_key(target)}
    return [document_id for document_id, keys in names.items() if keys & wanted]


def _readers(groups: list[str]) -> set[str]:
    return set(groups or [PUBLIC_GROUP])


def outside_folder(amending_path: str, amended_path: str) -> str | None:
    """Why the file at `amended_path` is beyond the reach of the one at `amending_path`, if it is."""
    folder = Path(amending_path).parent
    if Path(amended_path).is_relative_to(folder):
        return None
    return f"it is not in this document's folder ({folder}) or below it"


def broader_groups(amending_groups: list[str], amended_groups: list[str]) -> str | None:
    """Why a document readable by `amending_groups` may not amend one readable by
    `amended_groups`, if it may not: some of its readers could not read what it replaces."""
    amending, amended = _readers(amending_groups), _readers(amended_groups)
    if PUBLIC_GROUP in amended or (PUBLIC_GROUP not in amending and amending <= amended):
        return None
    return (
        f"this document is readable by {', '.join(sorted(amending))}, more widely than the amended one "
        f"({', '.join(sorted(amended))})"
    )


FOLDER, GROUPS = "folder", "groups"  # the rule a refused relation breaks


def refusal(amending: SourceRecord, amended: SourceRecord) -> tuple[str, str] | None:
    """(rule, reason) why `amending` may not amend `amended` (None: it may)."""
    if reason := outside_folder(amending.original_path, amended.original_path):
        return FOLDER, reason
    if reason := broader_groups(amending.allowed_groups, amended.allowed_groups):
        return GROUPS, reason
    return None


@dataclass(frozen=True)
class RefusedAmendment:
    amending: str  # document id
    target: str  # as the sidecar writes it
    amended: str  # document id of the document that name found
    amended_path: str
    rule: str  # FOLDER | GROUPS
    reason: str

    @property
    def warning(self) -> str:
        """Said on the amending document."""
        return f"amends {self.target!r} ({self.amended_path}): refused, {self.reason}; the amendment is not applied"


@dataclass
class Amendments:
    amends: dict[str, list[str]] = field(default_factory=dict)  # document id -> ids it amends
    amended_by: dict[str, list[str]] = field(default_factory=dict)  # document id -> ids amending it
    refused: list[RefusedAmendment] = field(default_factory=list)


def _names(records: Mapping[str, SourceRecord]) -> dict[str, set[str]]:
    return {d: {name_key(r.file_name), name_key(r.title)} - {""} for d, r in records.items()}


def _refused(
    record: SourceRecord, target: str, reasons: Mapping[str, tuple[str, str] | None], paths: Mapping[str, str]
) -> list[RefusedAmendment]:
    """The documents `target` names, refused, when it holds for none of them: a name also
    matching some unrelated file elsewhere is no news when the one in reach is amended."""
    if not reasons or not all(reasons.values()):
        return []
    return [RefusedAmendment(record.document_id, target, d, paths[d], *reason) for d, reason in reasons.items()]


def amendments(records: Mapping[str, SourceRecord]) -> Amendments:
    """The relations the sidecars declare that hold, and those refused."""
    names = _names(records)
    paths = {d: r.original_path for d, r in records.items()}
    result = Amendments()
    for document_id, record in records.items():
        for target in targets(record):
            reasons = {d: refusal(record, records[d]) for d in named(target, names) if d != document_id}
            for other in (d for d, reason in reasons.items() if reason is None):
                if other not in result.amends.get(document_id, []):
                    result.amends.setdefault(document_id, []).append(other)
                    result.amended_by.setdefault(other, []).append(document_id)
            result.refused += _refused(record, target, reasons, paths)
    return result


def refused_at_ingest(
    record: SourceRecord, registry: Mapping[str, str], records: Mapping[str, SourceRecord]
) -> list[RefusedAmendment]:
    """The relations `record` declares that can be refused already: against the documents
    recorded (`records`), and by folder against those only registered yet (`registry`: document
    id -> source path), whose groups are not known before their own ingestion."""
    recorded = {d: r for d, r in records.items() if d != record.document_id}
    pending = {
        d: str(Path(path).resolve()) for d, path in registry.items() if d not in recorded and d != record.document_id
    }
    paths = {**pending, **{d: r.original_path for d, r in recorded.items()}}
    found = []
    for target in targets(record):
        reasons = {d: refusal(record, recorded[d]) for d in named(target, _names(recorded))}
        for d in named(target, {d: {name_key(Path(p).name)} for d, p in pending.items()}):
            reason = outside_folder(record.original_path, pending[d])
            reasons[d] = (FOLDER, reason) if reason else None
        found += _refused(record, target, reasons, paths)
    return found
