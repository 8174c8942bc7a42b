"""Build the graph of one ADR folder: scan, parse, apply the rule, cache.

The CLI, the watcher/indexer and the query daemon all call :func:`build_graph`,
so their answers cannot disagree.

This is the top of the package: it builds on every other module, and none of
them imports it (chains, checks and the cache work on plain records), so the
dependencies run one way.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from precedents.adr_graph import cache as cache_mod
from precedents.adr_graph import text as tx
from precedents.adr_graph.chain import chain
from precedents.adr_graph.check import check
from precedents.adr_graph.model import AdrRecord, Finding, NonAdr, ParsedAdr, label_for
from precedents.adr_graph.parse import parse_bytes, unreadable
from precedents.adr_graph.status import Decision, decide
from precedents.errors import UsageError
from precedents.files import (
    LINKED_OUT,
    NOT_UTF8_NAME,
    Refused,
    escaped,
    inside,
    read_regular,
    undecodable,
)
from precedents.kinds import git_root
from precedents.secrets.names import masked_path

ADR_SUFFIXES = (".md", ".markdown")
# Folders that hold no decisions but can be huge.
_SKIP_DIRS = {"node_modules", "__pycache__", "_site", "site", "build", "dist", ".git"}
# Where ADRs live by convention, in the order `adr` commands look for them.
CONVENTIONAL_DIRS = (
    "docs/adr",
    "doc/adr",
    "docs/decisions",
    "doc/architecture/decisions",
    "docs/architecture/decisions",
    "adr",
    "decisions",
)


class AdrGraph:
    """Every ADR of one folder with its effective status; build with :func:`build_graph`."""

    def __init__(
        self,
        folder: Path,
        records: list[AdrRecord],
        non_adrs: list[NonAdr],
        warnings: list[str],
        cycles: list[list[str]],
        key: str = "",
    ) -> None:
        self.folder = folder
        self.records: dict[str, AdrRecord] = {r.id: r for r in records}
        self.by_path: dict[str, AdrRecord] = {r.path: r for r in records}
        self.non_adrs = non_adrs
        self.warnings = warnings
        self.cycles = cycles
        self.key = key
        self.from_cache = False
        self.mask: Callable[[str], str] | None = None  # set by build_graph

    def __iter__(self) -> Iterator[AdrRecord]:
        return iter(self.sorted())

    def sorted(self) -> list[AdrRecord]:
        """Every record, in path order."""
        return sorted(self.records.values(), key=lambda r: r.path)

    def __len__(self) -> int:
        return len(self.records)

    def get(self, ref: str) -> AdrRecord:
        """The record named by ``ref``: id, ``ADR-5``, ``5``, path or slug.

        Raises :class:`UsageError` when nothing matches: it is the user's input.
        """
        rec = self.find_record(ref)
        if rec is None:
            raise UsageError(f"no ADR {ref!r} in {self.folder}")
        return rec

    def find_record(self, ref: str) -> AdrRecord | None:
        """Like :meth:`get`, but None when nothing matches."""
        ref = ref.strip()
        if ref in self.records:
            return self.records[ref]
        rec = self.record_for_path(ref)
        if rec is not None:
            return rec
        low = ref.lower()
        for rid, r in self.records.items():
            if rid.lower() == low or r.path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower() == low:
                return r
        number = tx.number_of(ref)
        if number is not None:
            hits = [r for r in self.sorted() if r.number == number]
            if hits:
                return hits[0]
        return None

    def record_for_path(self, path: str | os.PathLike[str]) -> AdrRecord | None:
        """The record of a file (absolute, or relative to the folder); None if not an ADR."""
        p = Path(path)
        if p.is_absolute():
            try:
                rel = p.resolve().relative_to(self.folder.resolve()).as_posix()
            except (ValueError, OSError):
                return None
        else:
            rel = p.as_posix()
        return self.by_path.get(rel)

    def status_of(self, ref: str | os.PathLike[str]) -> str:
        """Effective status of a record (id or path)."""
        return self._lookup(ref).status

    def mark_of(self, ref: str | os.PathLike[str]) -> str:
        """The mark the agent sees for a record; '' when it is live."""
        return self._lookup(ref).mark

    def _lookup(self, ref: str | os.PathLike[str]) -> AdrRecord:
        if not isinstance(ref, str):
            rec = self.record_for_path(ref)
            if rec is None:
                raise UsageError(f"{ref} is not an ADR of {self.folder}")
            return rec
        return self.get(ref)

    def chain(self, ref: str) -> dict[str, Any]:
        """``{"current", "history", "sources"}`` from a record to the one in force.

        Raises :class:`UsageError` when ``ref`` names no record, and
        :class:`precedents.adr_graph.chain.AdrChainError` when no accepted record
        is current. Each source carries the record's text (masked, see :meth:`text_of`).
        """
        packet = chain(self.records, self.get(ref))
        for rid, source in packet["sources"].items():
            source["text"] = self.text_of(self.records[rid])
        return packet

    def raw_text(self, rec: AdrRecord) -> str:
        """The record's file as text ('' when it cannot be read): read on demand, since
        neither the records nor the cache keep whole ADRs."""
        if rec.text:
            return rec.text
        try:
            return tx.decode(read_regular(self.folder / rec.path, within=self.folder))
        except (OSError, UnicodeDecodeError):
            return ""

    def text_of(self, rec: AdrRecord) -> str:
        """The record's text as it may be shown: secrets masked when the graph masks."""
        text = self.raw_text(rec)
        return self.mask(text) if self.mask is not None else text

    def check(self) -> list[Finding]:
        """Cycles, dangling links, disagreements, cross-component replacements, no status."""
        return check(self.records, self.warnings, self.cycles)

    def find(self, words: Iterable[str]) -> list[AdrRecord]:
        """Records whose title or text contains every word (case-insensitive)."""
        needles = [w.lower() for w in words if w.strip()]
        if not needles:
            return list(self)
        return [
            r
            for r in self
            if all(n in r.title.lower() or n in self.raw_text(r).lower() for n in needles)
        ]

    def as_dict(self) -> dict[str, Any]:
        """The `adr list --json` shape: records, then the files that are not ADRs."""
        return {
            "folder": str(self.folder),
            "records": [r.as_dict() for r in self],
            "not_adrs": [{"path": n.path, "reason": n.reason} for n in self.non_adrs],
            "warnings": list(self.warnings),
        }


def iter_files(folder: Path, bad_names: list[str] | None = None) -> list[str]:
    """Markdown files under ``folder`` (relative POSIX paths, sorted), hidden folders skipped.

    A name that is not UTF-8 is skipped (no tool downstream can hold it), and added to
    ``bad_names`` with its bytes escaped.
    """
    out: list[str] = []
    for root, dirs, files in os.walk(folder):
        rel_root = Path(root).relative_to(folder).as_posix()
        for name in [*dirs, *files]:
            if undecodable(name) and bad_names is not None:
                bad_names.append(escaped(name if rel_root == "." else f"{rel_root}/{name}"))
        dirs[:] = sorted(
            d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS and not undecodable(d)
        )
        for name in files:
            rel = name if rel_root == "." else f"{rel_root}/{name}"
            if not undecodable(name) and is_adr_file(rel):
                out.append(rel)
    return sorted(out)


def is_adr_file(rel: str) -> bool:
    """Whether the file at ``rel`` (relative to an ADR folder, POSIX) is read as a record:
    Markdown, in no hidden or skipped folder, with no secret in its name."""
    *folders, name = rel.split("/")
    if any(d.startswith(".") or d in _SKIP_DIRS for d in folders) or name.startswith("."):
        return False
    # A name that carries a secret is never read, cached or shown (issue #20).
    return name.lower().endswith(ADR_SUFFIXES) and masked_path(rel) is None


def build_graph(
    folder: Path, cache_dir: Path | None = None, mask: Callable[[str], str] | None = None
) -> AdrGraph:
    """Parse every ADR of ``folder`` and decide each one's status.

    With ``cache_dir``, the graph is stored under a hash of every ADR file's
    name and content; an unchanged folder is not parsed again. ``mask`` (the
    secret masker; this package does not import it) is applied to titles and
    to any text the graph hands out, so neither the cache nor an answer holds
    a secret from a record. Raises :class:`UsageError` when ``folder`` is not
    a folder.
    """
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise UsageError(f"ADR folder not found: {folder}")
    bad: list[str] = []
    names = iter_files(folder, bad)
    # A refused file (a link out of the folder, a FIFO, a device, over the size cap) is
    # its reason: listed as no ADR, warned about, never read (issue #28).
    blobs: dict[str, bytes | str | None] = dict.fromkeys(bad, NOT_UTF8_NAME)
    for name in names:
        try:
            blobs[name] = read_regular(folder / name, within=folder)
        except Refused as exc:
            blobs[name] = exc.reason
        except OSError:
            blobs[name] = None
    return _graph_of(folder, blobs, cache_dir, mask)


def graph_of_contents(folder: Path, blobs: Mapping[str, bytes | str | None]) -> AdrGraph:
    """The graph of ``folder`` as ``blobs`` (path relative to it -> content, None when
    unreadable, a reason when refused) say it is, not as the disk does: `precedents
    check` reads what is staged for a commit. Files :func:`is_adr_file` refuses are left
    out. Not masked and not cached: each record keeps its text, since the disk may hold
    another."""
    kept = {
        escaped(name) if undecodable(name) else name: NOT_UTF8_NAME if undecodable(name) else data
        for name, data in sorted(blobs.items())
        if is_adr_file(name)
    }
    return _graph_of(Path(folder), kept, None, None)


def _graph_of(
    folder: Path,
    blobs: dict[str, bytes | str | None],
    cache_dir: Path | None,
    mask: Callable[[str], str] | None,
) -> AdrGraph:
    # A masked graph and an unmasked one are cached apart: one never answers for the other.
    key = cache_mod.folder_key(blobs) + (":masked" if mask is not None else "")
    if cache_dir is not None:
        cached = cache_mod.load(cache_dir, folder, key)
        if cached is not None:
            graph = AdrGraph(
                folder, cached.records, cached.non_adrs, cached.warnings, cached.cycles, key
            )
            graph.from_cache = True
            graph.mask = mask
            return graph
    graph = _build(folder, blobs, key, mask)
    graph.mask = mask
    if cache_dir is not None:
        snapshot = cache_mod.CachedGraph.of(
            key, graph.records.values(), graph.non_adrs, graph.warnings, graph.cycles
        )
        cache_mod.store(cache_dir, folder, snapshot)
    return graph


def _build(
    folder: Path,
    blobs: dict[str, bytes | str | None],
    key: str,
    mask: Callable[[str], str] | None,
) -> AdrGraph:
    """Parse every file, apply the rule to the whole folder, and make the records."""
    parsed, non_adrs, warnings = _parse_all(blobs)
    verdict = decide(parsed)
    records = [_record(rid, p, verdict.decisions[rid], mask) for rid, p in parsed.items()]
    return AdrGraph(folder, records, non_adrs, warnings, verdict.cycles, key)


def _parse_all(
    blobs: dict[str, bytes | str | None],
) -> tuple[dict[str, ParsedAdr], list[NonAdr], list[str]]:
    """Parsed records by id, the files that are not ADRs, and every warning.

    Two files with one id would hide each other: the second is kept under its
    path as id, with a warning (`adr check` reports it as a duplicate).
    """
    parsed: dict[str, ParsedAdr] = {}
    non_adrs: list[NonAdr] = []
    warnings: list[str] = []
    for name, data in blobs.items():
        if isinstance(data, str):  # refused: no record, one line
            non_adrs.append(NonAdr(name, data))
            warnings.append(f"{name}: {data}")
            continue
        p = unreadable(name, "cannot read") if data is None else parse_bytes(data, name)
        if p is None:
            non_adrs.append(NonAdr(name, _why_not(name, data)))
            continue
        if p.id in parsed:
            other = parsed[p.id].path
            warnings.append(f"{name}: id {p.id} is also {other}; using the path as its id")
            p.id = name.rsplit(".", 1)[0]
        parsed[p.id] = p
        warnings.extend(p.warnings)
    return parsed, non_adrs, warnings


def _record(
    rid: str, p: ParsedAdr, d: Decision, mask: Callable[[str], str] | None = None
) -> AdrRecord:
    """One record as callers see it: what the parser read plus what the rule decided."""
    current: str | list[str] | None = (
        None if not d.current else d.current[0] if len(d.current) == 1 else list(d.current)
    )
    return AdrRecord(
        path=p.path,
        id=rid,
        number=p.number,
        title=mask(p.title) if mask is not None and p.title else p.title,
        declared_status=p.declared_status,
        status=d.status,
        successors=[t.display for t in d.successors],
        current=current,
        mark=d.mark,
        relations=d.relations,
        component=p.component,
        date=p.date,
        implicit=p.implicit,
        reason=d.reason,
        warnings=list(p.warnings),
        text="" if mask is not None else p.text,  # masked graphs read it on demand
        successor_refs=[
            {"target": t.display, "id": t.id, "kind": t.kind, "label": t.label}
            for t in d.successors
        ],
    )


def _why_not(name: str, data: bytes | None) -> str:
    """A short reason a file is not taken for an ADR (shown by `adr list`)."""
    head = (data or b"")[:4000].decode("utf-8", "replace").lower()
    if "template" in name.lower() or re.search(r"\[(?:short )?title|\{title|\badrxxx\b", head):
        return "template (no number, placeholders)"
    if head.count("](") >= 5:
        return "index (no number, links to records)"
    return "no number, no id and no status"


def find_adr_dirs(
    repo_root: Path, configured: Iterable[Path] = (), refused: list[tuple[str, str]] | None = None
) -> list[Path]:
    """ADR folders of a repository: configured ones inside it, then the conventional ones.

    The conventional names are looked for in the order of :data:`CONVENTIONAL_DIRS`;
    every existing one is returned (the first is the default of `adr` commands). One
    that is a symlink out of the repository (`docs/adr -> ~/private`) is not: a cloned
    repository must not make outside files its records (issue #28); it is added to
    ``refused`` with its one-line reason.
    """
    root = Path(repo_root).expanduser().resolve()
    found: list[Path] = []
    for path in configured:
        p = Path(path).expanduser().resolve()
        if p.is_dir() and (p == root or root in p.parents) and p not in found:
            found.append(p)
    for rel in CONVENTIONAL_DIRS:
        p = root / rel
        if not p.is_dir() or p in found:
            continue
        if inside(p, root):
            found.append(p)
        elif refused is not None:
            refused.append((str(p), LINKED_OUT))
    return found


def default_adr_dir(start: Path, configured: Iterable[Path] = ()) -> Path:
    """The ADR folder `adr` commands use without ``--dir``: the first of
    :func:`find_adr_dirs` for the git root of ``start``.

    Raises :class:`UsageError` naming the places looked at when there is none.
    """
    root = git_root(start)
    refused: list[tuple[str, str]] = []
    found = find_adr_dirs(root, configured, refused)
    if not found and refused:
        raise UsageError(f"{refused[0][0]}: {refused[0][1]}; pass --dir PATH")
    if not found:
        looked = ", ".join(CONVENTIONAL_DIRS)
        raise UsageError(f"no ADR folder in {root} (looked for {looked}); pass --dir PATH")
    return found[0]


def label(rec: AdrRecord) -> str:
    """How marks and chains name a record."""
    return label_for(rec.id, rec.number)
