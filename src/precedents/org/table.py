"""The organisation index's layout at its URI: the contract between the build and readers.

At ``URI`` (``s3://bucket/prefix``, ``gs://…``, ``az://…``, ``file://…`` or a path):

* ``chunks.lance`` — one Lance dataset, the local store's chunk schema
  (:func:`precedents.store.schema.chunks_schema`) plus :data:`ORG_FIELDS`.
  A row's ``project`` is its repository's name, ``path`` the file's path in
  that repository (POSIX, relative), ``origin`` :data:`ORIGIN`.
* ``_precedents/served.json`` — the pointer (:class:`Served`): the Lance
  version readers use, written last by a build. Lance versions a build writes
  before it (a delete, an append) are invisible until then, so a killed build
  leaves the previous version served.
* ``_precedents/lock.json`` — held by the one build that writes (created only if
  absent: the storage's conditional put).

Credentials come from the storage's standard chain only (environment, profile,
instance role; ``AWS_ENDPOINT_URL`` for an S3-compatible server): precedents
never writes one anywhere.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Final

import pyarrow as pa

from precedents.store.schema import chunks_schema

TABLE: Final = "chunks.lance"
SERVED: Final = "_precedents/served.json"
LOCK: Final = "_precedents/lock.json"
FORMAT: Final = 1  # the layout's version: a reader refuses a pointer of a newer one
ORIGIN: Final = "org"  # a row's ``origin``: every channel marks it ``(org, <repository>)``

# Added to the chunk schema. ``mark``: an ADR's mark from its repository's ADR graph at
# build time ('' live, else e.g. ``⚠️superseded → ADR-0024``), since a reader has no
# files to build the graph from; ``successors``: JSON list of the repository paths of
# the ADRs that replaced it; ``url``: the repository's source as the repos file gave it.
ORG_FIELDS: Final = (
    pa.field("mark", pa.string()),
    pa.field("successors", pa.string()),
    pa.field("url", pa.string()),
)


def org_schema(dimension: int) -> pa.Schema:
    """The org table's schema for vectors of ``dimension``."""
    schema = chunks_schema(dimension)
    for added in ORG_FIELDS:
        schema = schema.append(added)
    return schema


@dataclass
class RepoEntry:
    """What the pointer says of one repository of the served version."""

    source: str  # the path or git URL the repos file named
    head: str = ""  # the commit built, when a git repository
    records: int = 0
    refused: list[str] = field(default_factory=list)  # one line each: what `check` refused
    error: str = ""  # why the repository could not be read (its previous rows kept)
    # A hash of its files' (path, sha256), the parser and the model (org/work.py): a
    # build finding the same digest reads the repository no further.
    digest: str = ""


@dataclass
class Served:
    """The pointer: which Lance version of ``chunks.lance`` is served, and what it holds."""

    version: int
    model: str
    dimension: int
    built_at: str  # ISO 8601, UTC
    repos: dict[str, RepoEntry] = field(default_factory=dict)
    format: int = FORMAT

    def to_json(self) -> bytes:
        """The pointer's bytes (UTF-8 JSON)."""
        return json.dumps(asdict(self), sort_keys=True, indent=1).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> Served:
        """Read a pointer; ValueError (one line) when it is not one this version reads."""
        try:
            raw: Any = json.loads(data.decode("utf-8"))
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            fmt = int(raw.get("format", 0))
            if fmt > FORMAT:
                raise ValueError(f"format {fmt} is newer than this precedents reads ({FORMAT})")
            repos = {
                str(name): RepoEntry(**entry) for name, entry in dict(raw.get("repos", {})).items()
            }
            return cls(
                version=int(raw["version"]),
                model=str(raw["model"]),
                dimension=int(raw["dimension"]),
                built_at=str(raw["built_at"]),
                repos=repos,
                format=fmt,
            )
        except (KeyError, TypeError, ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"not a precedents org pointer: {exc}") from None
