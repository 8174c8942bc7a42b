"""The org table at its URI as a build reads and writes it (layout: :mod:`.table`).

What is there is judged before anything is written: the served pointer and the
Lance dataset it names, or nothing at all (a first build). Anything else at the
URI (another Lance table, files of some other tool, a pointer that does not
parse) is :class:`OrgNotAnIndex` and nothing is touched. Versions a killed
build wrote after the served one are rolled back (Lance ``restore``) before a
build starts, so its rows never reach a later version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from precedents.errors import OrgError, OrgNotAnIndex
from precedents.org.location import OrgLocation, translated
from precedents.org.table import SERVED, TABLE, Served, org_schema
from precedents.org.work import fingerprint

# What a build may find at the URI besides its own two entries.
_OURS: Final = (TABLE, "_precedents")
KEEP_VERSIONS: Final = timedelta(hours=1)
DELETE_BATCH: Final = 2000
# Fragments past which a build compacts the table (a pull copies fewer, larger files).
COMPACT_FRAGMENTS: Final = 32


@dataclass
class Found:
    """What is at the URI: the served pointer (None: never built) and whether the table
    exists."""

    served: Served | None
    table: bool


def inspect(location: OrgLocation) -> Found:
    """Read the pointer and list the URI; :class:`OrgNotAnIndex` when what is there is
    not a precedents org index, the translated error when the storage says no."""
    import obstore

    store = location.store()
    try:
        listed = obstore.list_with_delimiter(store)
    except Exception as exc:
        raise translated(location, "listing", exc) from exc
    names = {p.rstrip("/").rsplit("/", 1)[-1] for p in listed["common_prefixes"]}
    names |= {str(o["path"]).rsplit("/", 1)[-1] for o in listed["objects"]}
    foreign = sorted(n for n in names if n not in _OURS)
    if foreign:
        raise OrgNotAnIndex(
            f"org index {location}: holds {', '.join(foreign[:3])}, not a precedents org "
            "index; name an empty prefix"
        )
    served: Served | None = None
    try:
        data = obstore.get(store, SERVED).bytes()
    except FileNotFoundError:
        data = None
    except Exception as exc:
        raise translated(location, "reading the served pointer", exc) from exc
    if data is not None:
        try:
            served = Served.from_json(bytes(data))
        except ValueError as exc:
            raise OrgNotAnIndex(f"org index {location}: {exc}") from None
    return Found(served, TABLE in names)


def open_table(location: OrgLocation, found: Found) -> Any:
    """The served table, at its served version (a later one a killed build left is rolled
    back); None when there is none to build on (a first build)."""
    import lance

    if found.served is None or not found.table:
        if found.table:
            _check_ours(location)  # a first build that was killed: its table is ours
        return None
    try:
        ds = lance.dataset(location.table_uri)
        if ds.version != found.served.version:
            old = lance.dataset(location.table_uri, version=found.served.version)
            old.restore()  # type: ignore[no-untyped-call]
            ds = lance.dataset(location.table_uri)
    except Exception as exc:
        raise _table_error(location, exc) from exc
    _check_schema(location, ds.schema, found.served.dimension)
    return ds


def _check_ours(location: OrgLocation) -> None:
    import lance

    try:
        ds = lance.dataset(location.table_uri)
    except Exception as exc:
        raise _table_error(location, exc) from exc
    names = set(ds.schema.names)
    if not {"mark", "successors", "url", "vector", "project"} <= names:
        raise OrgNotAnIndex(f"org index {location}: {TABLE} is not a precedents org table")


def _check_schema(location: OrgLocation, schema: Any, dimension: int) -> None:
    wanted = set(org_schema(dimension).names)
    if not wanted <= set(schema.names):
        raise OrgNotAnIndex(f"org index {location}: {TABLE} is not a precedents org table")


def _table_error(location: OrgLocation, exc: BaseException) -> OrgError:
    error = translated(location, f"opening {TABLE}", exc)
    if type(error) is OrgError:  # neither denied nor unreachable: what is there is broken
        return OrgNotAnIndex(f"{error} (corrupt?)")
    return error


def create_empty(location: OrgLocation, dimension: int, *, exists: bool) -> Any:
    """A new, empty table of ``dimension`` (a first build, or another model's full
    rebuild: the served version stays readable until the pointer moves)."""
    import lance

    schema = org_schema(dimension)
    try:
        return lance.write_dataset(
            schema.empty_table(),
            location.table_uri,
            schema=schema,
            mode="overwrite" if exists else "create",
        )
    except Exception as exc:
        raise translated(location, f"creating {TABLE}", exc) from exc


def known_rows(location: OrgLocation, ds: Any) -> dict[str, dict[str, str]]:
    """What the served version holds, by repository: path -> fingerprint."""
    try:
        table = ds.to_table(
            columns=["project", "path", "source_hash", "mark", "successors"],
            filter="chunk_index = 0",
        )
    except Exception as exc:
        raise translated(location, f"reading {TABLE}", exc) from exc
    out: dict[str, dict[str, str]] = {}
    for row in table.to_pylist():
        out.setdefault(str(row["project"]), {})[str(row["path"])] = fingerprint(
            str(row["source_hash"] or ""), str(row["mark"] or ""), str(row["successors"] or "")
        )
    return out


def row_ids(
    location: OrgLocation, ds: Any, paths: Mapping[str, Sequence[str]], repos: Iterable[str]
) -> list[int]:
    """The row ids (of the served version, before anything is appended) of ``paths`` of
    each repository, and of every row of ``repos`` (repositories no longer listed)."""
    gone = sorted(set(repos))
    wanted = {(repo, p) for repo, ps in paths.items() for p in ps}
    if not wanted and not gone:
        return []
    projects = sorted({r for r, _ in wanted} | set(gone))
    try:
        table = ds.to_table(
            columns=["project", "path"], filter=_in("project", projects), with_row_id=True
        )
    except Exception as exc:
        raise translated(location, f"reading {TABLE}", exc) from exc
    out: list[int] = []
    gone_set = set(gone)
    for project, path, rid in zip(
        table.column("project").to_pylist(),
        table.column("path").to_pylist(),
        table.column("_rowid").to_pylist(),
        strict=True,
    ):
        if project in gone_set or (project, path) in wanted:
            out.append(int(rid))
    return out


def append(location: OrgLocation, tables: Sequence[Any]) -> None:
    """Add the new rows in one commit."""
    import lance
    import pyarrow as pa

    tables = [t for t in tables if t is not None and t.num_rows]
    if not tables:
        return
    data = pa.concat_tables(tables)
    try:
        lance.write_dataset(data, location.table_uri, mode="append")
    except Exception as exc:
        raise translated(location, f"appending to {TABLE}", exc) from exc


def delete(location: OrgLocation, ids: Sequence[int]) -> None:
    """Delete the rows of ``ids`` (collected before the append: new rows keep theirs)."""
    import lance

    if not ids:
        return
    try:
        ds = lance.dataset(location.table_uri)
        for i in range(0, len(ids), DELETE_BATCH):
            batch = ids[i : i + DELETE_BATCH]
            ds.delete(f"_rowid IN ({','.join(str(x) for x in batch)})")
    except Exception as exc:
        raise translated(location, f"deleting from {TABLE}", exc) from exc


def compact(location: OrgLocation) -> bool:
    """Merge small fragments once there are many (every build appends one, and deletes
    leave deletion files): before the pointer, so the served version is compacted and
    the next build has nothing to roll back. Whether it compacted."""
    import lance

    try:
        ds = lance.dataset(location.table_uri)
        if len(ds.get_fragments()) < COMPACT_FRAGMENTS:
            return False
        ds.optimize.compact_files()
    except Exception as exc:
        raise translated(location, f"compacting {TABLE}", exc) from exc
    return True


def latest_version(location: OrgLocation) -> int:
    """The table's newest version (what the pointer will name)."""
    import lance

    try:
        return int(lance.dataset(location.table_uri).version)
    except Exception as exc:
        raise translated(location, f"opening {TABLE}", exc) from exc


def serve(location: OrgLocation, served: Served) -> None:
    """Write the pointer: from now on readers get ``served.version``."""
    import obstore

    try:
        obstore.put(location.store(), SERVED, served.to_json())
    except Exception as exc:
        raise translated(location, "writing the served pointer", exc) from exc


def cleanup(location: OrgLocation) -> int:
    """Drop versions older than an hour that are not served (Lance keeps the latest):
    the bytes removed, 0 when cleanup failed (the next build tries again)."""
    import lance

    try:
        stats = lance.dataset(location.table_uri).cleanup_old_versions(older_than=KEEP_VERSIONS)
        return int(getattr(stats, "bytes_removed", 0))
    except Exception:  # cleaning is housekeeping: a build that served is done
        return 0


def _in(column: str, values: Sequence[str]) -> str:
    quoted = ",".join("'" + v.replace("'", "''") + "'" for v in values)
    return f"{column} IN ({quoted})"
