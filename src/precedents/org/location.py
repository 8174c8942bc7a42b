"""Where the organisation's index lives: its URI, as obstore and Lance each open it.

The same URI names the index for the build, `org pull` and every daemon:
``s3://bucket/prefix``, ``gs://bucket/prefix``, ``az://container/prefix``,
``file:///abs/path`` or a plain path. Credentials and endpoints come from the
storage's standard chain, read by obstore and Lance themselves (environment
variables such as ``AWS_ENDPOINT_URL``/``AWS_ALLOW_HTTP``, a profile, an
instance role): nothing here reads, stores or prints one. The errors the two
libraries raise are translated to the small :mod:`precedents.errors` ones here,
each one line naming the URI (and never a credential).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from precedents.errors import OrgDenied, OrgError, OrgNotAnIndex, OrgUnreachable
from precedents.org.table import TABLE
from precedents.secrets.mask import mask_secrets

SCHEMES: Final = ("s3", "gs", "az", "abfs", "file")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://")


@dataclass(frozen=True)
class OrgLocation:
    """One org index URI: ``uri`` without a trailing slash; a plain path made absolute."""

    uri: str

    @classmethod
    def parse(cls, value: str) -> OrgLocation:
        """A URI or a path; :class:`OrgError` for an unknown scheme (``http://``…)."""
        text = value.strip()
        if not text:
            raise OrgError("org index URI is empty")
        found = _SCHEME.match(text)
        if found is None:
            return cls(str(Path(text).expanduser().absolute()))
        if found.group(1) not in SCHEMES:
            raise OrgError(
                f"org index URI {shown(text)}: scheme {found.group(1)}:// is not one of "
                + ", ".join(f"{s}://" for s in SCHEMES)
            )
        return cls(text.rstrip("/"))

    @property
    def local(self) -> Path | None:
        """The folder when the index is on this machine's file system, else None."""
        if self.uri.startswith("file://"):
            return Path(self.uri.removeprefix("file://"))
        return None if _SCHEME.match(self.uri) else Path(self.uri)

    @property
    def table_uri(self) -> str:
        """The Lance dataset's URI (what ``lance.dataset`` opens)."""
        local = self.local
        return str(local / TABLE) if local is not None else f"{self.uri}/{TABLE}"

    def store(self) -> Any:
        """An obstore store rooted at the URI (its prefix), credentials from the chain."""
        from obstore.store import LocalStore, from_url

        local = self.local
        if local is not None:
            local.mkdir(parents=True, exist_ok=True)
            return LocalStore(local)
        return from_url(self.uri)

    def __str__(self) -> str:
        return shown(self.uri)


def shown(uri: str) -> str:
    """A URI as a message shows it: masked (a key pasted into a URI is never echoed)."""
    return mask_secrets(uri)


_DENIED_STATUS = re.compile(r"(?<![\w.])40[13](?![\w.])")


def translated(location: OrgLocation, doing: str, exc: BaseException) -> OrgError:
    """One of the small org errors for an exception obstore or Lance raised ``doing``
    something at ``location`` (the first line of its message, masked)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    lowered = f"{type(exc).__name__} {exc}".lower()
    line = f"org index {location}: {doing} failed: {shown(text)[:300]}"
    # A status code standing alone: a bucket named `org-9e403191` or a request that took
    # "401.3ms" is no refusal.
    if _DENIED_STATUS.search(lowered) or any(
        w in lowered
        for w in (
            "forbidden",
            "accessdenied",
            "access denied",
            "permission",
            "invalidaccesskeyid",
            "signaturedoesnotmatch",
            "unauthorized",
        )
    ):
        return OrgDenied(line)
    if any(
        w in lowered
        for w in (
            "nosuchbucket",
            "error sending request",
            "connection",
            "dns",
            "timed out",
            "timeout",
            "unreachable",
        )
    ):
        return OrgUnreachable(line)
    if any(w in lowered for w in ("not a precedents", "corrupt", "invalid", "schema")):
        return OrgNotAnIndex(line)
    return OrgError(line)
