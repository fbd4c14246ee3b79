"""Sidecar metadata, validated by a schema: ``<file name>.meta.yaml`` beside a document, over the
nearest ``_defaults.meta.yaml`` in its folder or a folder above.

A mistake in them fails closed: an unknown or misspelt key, an empty ``allowed_groups``, a
wrong type, a file named like a sidecar but not exactly, a sidecar that is a symbolic link
all refuse the document, naming the file and the key. None of them makes a document public.

Where the defaults are looked up: from the document's folder upwards, the nearest one wins,
no higher than ``top`` when given (the watched inbox, for the documents in it). The folder a
``rag-assets ingest`` was given is not recorded in the store, and the source stage re-reads the
metadata on every run (on a worker, or from the nightly re-indexing), so for those documents
the lookup goes up the document's own folder chain.
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from rag_assets.errors import MetadataError, printable
from rag_assets.hashing import sha256_file

SIDECAR_SUFFIX = ".meta.yaml"
DEFAULTS_NAME = "_defaults" + SIDECAR_SUFFIX
# names a sidecar is mistaken for: the short extension, and any change of case
LOOK_ALIKE_SUFFIXES = (SIDECAR_SUFFIX, ".meta.yml")
MAX_SIDECAR_BYTES = 2**20  # set a priori: metadata is a few lines; anything this large is not a sidecar

NonEmpty = Annotated[str, StringConstraints(min_length=1)]


def _one_or_many(value: object) -> object:
    return [value] if isinstance(value, str) else value


Names = Annotated[list[NonEmpty], BeforeValidator(_one_or_many), Field(min_length=1)]  # a single string is one


class Sidecar(BaseModel):
    """The keys a sidecar may hold. ``amends``/``supersedes`` name other documents by file name
    (index/amendments.py); ``insurer``, ``product`` and ``reference`` name this one
    (retrieve/scope.py IDENTITY_FIELDS); they, ``title``, ``document_type``, ``branch`` and ``edition``
    override what is read from the document (parsing/identity.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=True, coerce_numbers_to_str=True)

    title: NonEmpty | None = None
    language: Literal["fr", "en"] | None = None
    document_type: NonEmpty | None = None
    effective_date: dt.date | None = None
    allowed_groups: Names | None = None
    amends: Names | None = None
    supersedes: Names | None = None
    insurer: NonEmpty | None = None
    product: NonEmpty | None = None
    reference: NonEmpty | None = None
    branch: NonEmpty | None = None  # the line of insurance (auto, habitation, santé…)
    edition: NonEmpty | None = None

    @field_validator("allowed_groups", mode="before")
    @classmethod
    def _groups_named(cls, value: object) -> object:
        if value is None:  # `allowed_groups:` with nothing after it once meant public
            raise ValueError("is empty; write the groups, e.g. [claims]")
        return value

    @field_validator("language", mode="before")
    @classmethod
    def _language_any_case(cls, value: object) -> object:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("effective_date", mode="before")
    @classmethod
    def _iso_date(cls, value: object) -> object:
        # pydantic would read a number as a Unix timestamp, and a datetime's time would be lost
        if value is not None and (isinstance(value, dt.datetime) or not isinstance(value, (dt.date, str))):
            raise ValueError(f"{value!r} is not an ISO date (YYYY-MM-DD)")
        return value

    def given(self) -> dict:
        """The keys this file sets."""
        return self.model_dump(exclude_unset=True, exclude_none=True)


KEYS = tuple(Sidecar.model_fields)
# kept as they are in the source record's `extra`: the documents named, the identity fields
EXTRA_KEYS = ("amends", "supersedes", "insurer", "product", "reference", "branch", "edition")


def sidecar_path(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def _folded(key: str) -> str:
    return key.casefold().replace("_", "").replace("-", "").replace(" ", "")


def _problem(error: Mapping[str, Any]) -> str:
    key = str(error["loc"][0]) if error["loc"] else "(file)"
    if error["type"] == "extra_forbidden":
        folded = {_folded(k): k for k in KEYS}
        near = difflib.get_close_matches(_folded(key), folded, n=1, cutoff=0.6)
        hint = f"did you mean '{folded[near[0]]}'?" if near else f"keys are {', '.join(KEYS)}"
        return f"unknown key '{printable(key)}' ({hint})"
    where = key + "".join(f"[{part}]" for part in error["loc"][1:])
    if error["type"] in ("too_short", "string_too_short"):
        message = "is empty" + ("; write the groups, e.g. [claims]" if key == "allowed_groups" else "")
    else:
        message = error["msg"].removeprefix("Value error, ")
    return f"key '{printable(where)}': {message}"


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML keeps the last of two equal keys silently; in access metadata that hides a mistake."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key '{key}' is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def read_sidecar_file(path: Path) -> Sidecar:
    """One sidecar or defaults file, read without following links and validated."""
    if path.is_symlink():
        raise MetadataError(path, "is a symbolic link; sidecars are never followed (write the metadata in the file)")
    if not path.is_file():
        raise MetadataError(path, "sidecar metadata is not a regular file")
    if path.stat().st_size > MAX_SIDECAR_BYTES:
        raise MetadataError(path, f"sidecar metadata is over {MAX_SIDECAR_BYTES:,} bytes; not read")
    try:
        meta = yaml.load(path.read_text(encoding="utf-8"), Loader=_UniqueKeyLoader) or {}
    except UnicodeDecodeError as exc:
        raise MetadataError(path, f"sidecar metadata is not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        raise MetadataError(path, f"sidecar metadata is not valid YAML ({exc})") from exc
    except ValueError as exc:  # a date YAML recognises but the calendar has not (2024-13-01)
        raise MetadataError(path, f"sidecar metadata holds an impossible value ({exc})") from exc
    if not isinstance(meta, dict):
        raise MetadataError(path, "sidecar metadata must be a mapping of keys to values")
    try:
        return Sidecar.model_validate({str(key): value for key, value in meta.items()})
    except ValidationError as exc:
        problems = "; ".join(_problem(error) for error in exc.errors())
        # not chained: pydantic's own text repeats the values, and the run's log keeps the chain
        raise MetadataError(path, f"{problems}; the document is not indexed") from None


def _refuse_look_alikes(folder: Path, exact: str) -> None:
    """A file beside ``exact`` named like it but for case or the ``.meta.yml`` extension would
    not be read: refused, rather than the document silently taken as having no metadata."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    present = set(names)
    stem = exact[: -len(SIDECAR_SUFFIX)]
    wanted = {(stem + suffix).casefold() for suffix in LOOK_ALIKE_SUFFIXES}
    for name in sorted(names):
        # X.PDF.meta.yaml beside X.PDF is that document's own sidecar
        owned = name.endswith(SIDECAR_SUFFIX) and name[: -len(SIDECAR_SUFFIX)] in present
        if name != exact and name.casefold() in wanted and not owned:
            raise MetadataError(folder / name, f"is not read: sidecars are named exactly {printable(exact)}")


def metadata_files(path: Path, top: Path | None = None) -> list[Path]:
    """The files a document's metadata is read from: its own sidecar, then the nearest
    ``_defaults.meta.yaml`` (each if present). MetadataError for a look-alike of either."""
    files = []
    own = sidecar_path(path)
    _refuse_look_alikes(path.parent, own.name)
    if os.path.lexists(own):  # False for a name too long for one more suffix: it has no sidecar
        files.append(own)
    top = top.absolute() if top is not None else None
    for folder in [path.parent.absolute(), *path.parent.absolute().parents]:
        _refuse_look_alikes(folder, DEFAULTS_NAME)
        if os.path.lexists(folder / DEFAULTS_NAME):
            files.append(folder / DEFAULTS_NAME)
            break
        if folder == top:
            break
    return files


def metadata_version(path: Path, top: Path | None = None) -> str:
    """What the document's metadata is, as bytes go: the files it is read from (a link by where
    it points, never followed) or the mistake that stops reading them. Part of the document's
    data version, so that editing a sidecar re-runs the document."""
    try:
        files = metadata_files(path, top)
    except MetadataError as exc:
        return f"error:{exc}"
    parts = []
    for file in files:
        try:
            content = f"link:{os.readlink(file)}" if file.is_symlink() else sha256_file(file)
        except OSError as exc:
            content = f"unreadable:{exc.strerror}"
        parts.append(f"{file.name}:{content}")
    return "|".join(parts)


def read_metadata(path: Path, top: Path | None = None) -> Sidecar:
    """The document's metadata: its sidecar's keys over those of the nearest defaults file."""
    merged: dict = {}
    for file in reversed(metadata_files(path, top)):
        merged.update(read_sidecar_file(file).given())
    return Sidecar.model_validate(merged)
