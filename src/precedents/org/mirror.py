"""Copy the served version of the org table onto this machine, only what changed.

The pointer (``_precedents/served.json``, :class:`~precedents.org.table.Served`)
names one Lance version of ``chunks.lance``. Lance writes every file once under a
unique name (a manifest per version, data and deletion files, index folders) and
never changes it, so a file already here under its name and size is the same
file: a pull after one repository changed copies that repository's new files and
one manifest, nothing else. The files that version needs are read from its
manifest with Lance, on this machine, once the manifest is copied; the rest of the
remote listing (older versions, a killed build's files, transaction files) is
never copied. Local files the version does not need are removed by
:func:`prune` once the new snapshot serves (:mod:`precedents.org.pull`).

Every storage call goes through obstore with the storage's standard credential
chain; its errors become the small org errors (:func:`~precedents.org.location.translated`).
"""

from __future__ import annotations

import contextlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from precedents.errors import OrgError, OrgNotAnIndex
from precedents.org.location import OrgLocation, translated
from precedents.org.table import SERVED, TABLE, Served

# Lance's second manifest naming scheme counts down from u64::MAX, so that the
# newest version sorts first (``_versions/{U64 - version:020}.manifest``).
_U64: Final = 2**64 - 1
VERSIONS: Final = "_versions"
# Storage calls give up rather than hang a pull for ever: connecting, one request
# (a whole file: generous for a large data file), retries of a failed one.
CLIENT_OPTIONS: Final = {"connect_timeout": "10s", "timeout": "300s"}
RETRY: Final = {"max_retries": 3, "retry_timeout": timedelta(seconds=60)}
# Passing client options replaces those obstore reads from the environment, so the
# chain's own (``AWS_ALLOW_HTTP`` for a local S3-compatible server, a proxy) are
# carried over, by each storage's prefix; one the environment sets wins over ours.
_ENV_PREFIX: Final = {"s3": "AWS_", "gs": "GOOGLE_", "az": "AZURE_", "abfs": "AZURE_"}
_CLIENT_KEYS: Final = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "default_content_type",
        "http1_only",
        "http2_only",
        "pool_idle_timeout",
        "pool_max_idle_per_host",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "timeout",
        "user_agent",
    }
)
COPIERS = 8  # files fetched at once: object stores answer each request with latency
CHUNK = 4 << 20


@dataclass
class Mirrored:
    """What one mirror pass did."""

    served: Served
    table: Path  # the local copy of chunks.lance, holding ``served.version``
    needed: frozenset[str]  # the paths in it the version uses
    bytes_copied: int = 0
    files_copied: int = 0
    bytes_total: int = 0  # of the version's files


def open_store(location: OrgLocation) -> Any:
    """An obstore store at ``location``, with bounded timeouts and retries."""
    if location.local is not None:
        return location.store()
    from obstore.store import from_url

    options: Any = client_options(location)  # obstore's TypedDicts, built from text
    retry: Any = RETRY
    return from_url(location.uri, client_options=options, retry_config=retry)


def client_options(location: OrgLocation) -> dict[str, Any]:
    """Our timeouts, with the client options the environment sets for this storage."""
    prefix = _ENV_PREFIX.get(location.uri.split("://", 1)[0], "")
    options: dict[str, Any] = dict(CLIENT_OPTIONS)
    for name, value in os.environ.items():
        key = name[len(prefix) :].lower() if prefix and name.startswith(prefix) else ""
        if key in _CLIENT_KEYS:
            options[key] = value
    return options


def read_served(location: OrgLocation, store: Any) -> Served:
    """The pointer at ``location``: which version is served, built with which model."""
    import obstore
    from obstore.exceptions import NotFoundError

    try:
        data = bytes(obstore.get(store, SERVED).bytes())
    except (NotFoundError, FileNotFoundError) as exc:
        if "nosuchbucket" in str(exc).lower().replace(" ", ""):
            raise translated(location, "reading the served pointer", exc) from None
        raise OrgNotAnIndex(
            f"org index {location}: no {SERVED} there (not a precedents org index, "
            "or no build has finished yet)"
        ) from None
    except Exception as exc:  # obstore's errors carry the storage's reason: translated
        raise translated(location, "reading the served pointer", exc) from None
    try:
        return Served.from_json(data)
    except ValueError as exc:
        raise OrgNotAnIndex(f"org index {location}: {exc}") from None


def mirror(location: OrgLocation, store: Any, served: Served, dest: Path) -> Mirrored:
    """Copy into ``dest/chunks.lance`` the files version ``served.version`` needs that are
    not here yet (by name and size); nothing is removed (see :func:`prune`)."""
    table = dest / TABLE
    remote = _listing(location, store)
    manifest = _manifest_name(remote, served.version)
    if manifest is None:
        raise OrgNotAnIndex(
            f"org index {location}: the served version {served.version} has no manifest "
            "(the table was cleaned up under its pointer, or it is not a Lance table)"
        )
    done = Mirrored(served, table, frozenset())
    # Copied again even when one of its name and size is here: a manifest is named by
    # its version number alone, and a table rebuilt from scratch (or another URI)
    # numbers its versions from 1 again. Every other file has a unique name.
    _copy(location, store, table, {manifest: remote[manifest]}, done, force=True)
    needed = _version_files(location, table, served, remote) | {manifest}
    missing = sorted(p for p in needed if p not in remote)
    if missing:
        raise OrgNotAnIndex(
            f"org index {location}: version {served.version} names {len(missing)} file(s) "
            f"the storage does not hold (first: {missing[0]})"
        )
    _copy(location, store, table, {p: remote[p] for p in needed if p != manifest}, done)
    done.needed = frozenset(needed)
    done.bytes_total = sum(remote[p] for p in needed)
    return done


def prune(table: Path, needed: frozenset[str]) -> int:
    """Remove the files under ``table`` that ``needed`` does not name; the bytes freed.
    Called once the new version serves: the old snapshot no longer reads them."""
    freed = 0
    for path in sorted(table.rglob("*"), reverse=True):  # files before their folders
        rel = path.relative_to(table).as_posix()
        if path.is_dir():
            with contextlib.suppress(OSError):
                path.rmdir()  # only when empty
        elif rel not in needed:
            with contextlib.suppress(OSError):
                size = path.stat().st_size
                path.unlink()
                freed += size
    return freed


def _listing(location: OrgLocation, store: Any) -> dict[str, int]:
    """Every object under chunks.lance/ at the URI: its path in the table -> size."""
    import obstore

    prefix = f"{TABLE}/"
    try:
        objects = obstore.list(store, prefix=prefix).collect()
    except Exception as exc:
        raise translated(location, "listing the table", exc) from None
    return {str(o["path"]).removeprefix(prefix): int(o["size"]) for o in objects}


def _manifest_name(remote: dict[str, int], version: int) -> str | None:
    """The manifest of ``version`` in the listing, under either naming scheme of Lance."""
    for name in (f"{VERSIONS}/{version}.manifest", f"{VERSIONS}/{_U64 - version:020d}.manifest"):
        if name in remote:
            return name
    return None


def _version_files(
    location: OrgLocation, table: Path, served: Served, remote: dict[str, int]
) -> set[str]:
    """The data, deletion and index files the served version reads, from its manifest
    (copied here already: Lance reads nothing else to answer this). Its vectors must
    have the pointer's dimension."""
    import lance

    version = served.version
    try:
        dataset = lance.dataset(str(table), version=version)
        _check_vectors(location, dataset.schema, served)
        files: set[str] = set()
        for fragment in dataset.get_fragments():
            files.update(f"data/{d.path}" for d in fragment.data_files())
            deletion = fragment.deletion_file()
            if deletion:
                files.add(str(deletion))
        with contextlib.suppress(Exception):  # list_indices is deprecated in newer Lance
            for index in dataset.list_indices():
                folder = f"_indices/{index['uuid']}/"
                files.update(p for p in remote if p.startswith(folder))
    except OrgError:
        raise
    except Exception as exc:  # a manifest Lance cannot read: foreign, corrupt or too new
        raise OrgNotAnIndex(
            f"org index {location}: version {version} cannot be read: "
            f"{str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__}"
        ) from None
    return files


def _check_vectors(location: OrgLocation, schema: Any, served: Served) -> None:
    """The table's ``vector`` column holds vectors of the pointer's dimension."""
    import pyarrow as pa

    field = schema.field("vector") if "vector" in schema.names else None
    kind = field.type if field is not None else None
    size = kind.list_size if isinstance(kind, pa.FixedSizeListType) else None
    if size != served.dimension:
        raise OrgNotAnIndex(
            f"org index {location}: version {served.version} has "
            + (f"vectors of {size} dimensions" if size else "no vector column")
            + f", its pointer says {served.dimension}"
        )


def _copy(
    location: OrgLocation,
    store: Any,
    table: Path,
    wanted: dict[str, int],
    done: Mirrored,
    force: bool = False,
) -> None:
    """Fetch each wanted file not here with its size (every one with ``force``), into a
    temporary name, renamed into place whole: a killed pull leaves no half file under a
    real name."""
    todo = [(p, n) for p, n in sorted(wanted.items()) if force or _size(table / p) != n]
    if not todo:
        return
    with ThreadPoolExecutor(min(COPIERS, len(todo)), thread_name_prefix="org-copy") as pool:
        for copied in pool.map(lambda item: _fetch(location, store, table, *item), todo):
            done.bytes_copied += copied
            done.files_copied += 1


def _fetch(location: OrgLocation, store: Any, table: Path, rel: str, size: int) -> int:
    import obstore

    target = table / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.part")
    written = 0
    try:
        with tmp.open("wb") as out:
            for chunk in obstore.get(store, f"{TABLE}/{rel}").stream(CHUNK):
                out.write(chunk)
                written += len(chunk)
        if written != size:
            raise OrgError(
                f"org index {location}: {TABLE}/{rel} changed while it was copied "
                f"({written} of {size} bytes)"
            )
        os.replace(tmp, target)
    except OrgError:
        tmp.unlink(missing_ok=True)
        raise
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and not _is_obstore(exc):
            raise  # this machine's disk: the caller says so (a full disk above all)
        raise translated(location, f"copying {TABLE}/{rel}", exc) from None
    return written


def _is_obstore(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("obstore")


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None
