"""`precedents org build`: many repositories into the org table at a URI (docs/org.md).

The order of writes is what keeps the served version safe: the lock object
first (:mod:`.lock`); then the new rows appended in one commit; then the old rows
of changed and removed documents deleted (by the row ids they had in the served
version, so a document whose new rows look like its old ones keeps the new);
the pointer last. A build killed anywhere before the pointer leaves the previous
version served, and the next build rolls back what it wrote (:mod:`.dataset`).

Repositories are read by an *executor*: a function from the tasks to their
:class:`~precedents.org.work.RepoRows`. The default is a local process pool
(spawned, the model loaded once per worker); ``--ray`` plugs lance-ray's in
(:mod:`precedents.org.ray_build`), whose workers may write their rows themselves.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from precedents.config import Settings
from precedents.errors import OrgError
from precedents.ingest.progress import Progress
from precedents.org import dataset
from precedents.org.location import OrgLocation, shown
from precedents.org.lock import BuildLock
from precedents.org.repos import RepoSpec, clone, head_of
from precedents.org.table import RepoEntry, Served
from precedents.org.work import RepoRows, RepoTask, process_embedder, repo_rows, unchanged

MAX_WORKERS: Final = 8
Executor = Callable[[Sequence[RepoTask]], Iterable[RepoRows]]


def default_workers() -> int:
    """One worker per two CPUs, at least one, at most :data:`MAX_WORKERS`."""
    return max(1, min(MAX_WORKERS, (os.cpu_count() or 2) // 2))


@dataclass
class RepoLine:
    """What the build did with one repository (one output line)."""

    name: str
    source: str
    records: int = 0
    new: int = 0
    removed: int = 0
    refused: list[str] = field(default_factory=list)
    error: str = ""
    changed: bool = False

    def as_dict(self) -> dict[str, Any]:
        """`--json`'s form."""
        return {
            "name": self.name,
            "source": self.source,
            "records": self.records,
            "new": self.new,
            "removed": self.removed,
            "refused": list(self.refused),
            "error": self.error,
            "changed": self.changed,
        }


@dataclass
class BuildReport:
    """One build: its repositories, the version it served, how long it took."""

    uri: str
    version: int
    model: str
    repos: list[RepoLine]
    gone: list[str]  # repositories no longer listed: their rows deleted
    seconds: float
    chunks: int  # chunks embedded this build
    rebuilt: str = ""  # why every repository was read again ("" for an incremental build)

    def as_dict(self) -> dict[str, Any]:
        """`--json`'s form."""
        return {
            "uri": self.uri,
            "version": self.version,
            "model": self.model,
            "seconds": round(self.seconds, 3),
            "chunks_embedded": self.chunks,
            "rebuilt": self.rebuilt,
            "gone": list(self.gone),
            "repos": [r.as_dict() for r in self.repos],
        }


def build(
    settings: Settings,
    specs: Sequence[RepoSpec],
    location: OrgLocation,
    *,
    workers: int | None = None,
    executor: Callable[[int], Executor] | None = None,
    progress: Progress | None = None,
) -> BuildReport:
    """Build the org index at ``location`` from ``specs``. ``executor``, given the
    vectors' dimension, returns the function that reads the tasks (default: the local
    pool of ``workers``). ``progress`` is told of each repository read (done, of how many,
    chunks embedded so far). Raises the :mod:`precedents.errors` org errors, one line each."""
    started = time.perf_counter()
    from precedents.models.embedding import canonical_model_id

    model = canonical_model_id(settings.model_spec())
    with BuildLock(location) as lock, tempfile.TemporaryDirectory(prefix="precedents-org-") as tmp:
        found = dataset.inspect(location)
        served = found.served
        rebuilt = ""
        if served is not None and served.model != model:
            rebuilt = (
                f"the served version was embedded with {served.model}, this build with "
                f"{model}: every repository read and embedded again"
            )
        ds = None if rebuilt else dataset.open_table(location, found)
        dimension = served.dimension if served is not None and not rebuilt else 0
        if not dimension:
            dimension = int(process_embedder(settings).dimension)
        if ds is None:
            dataset.create_empty(location, dimension, exists=found.table)
            served_repos: dict[str, RepoEntry] = {}
            known: dict[str, dict[str, str]] = {}
        else:
            served_repos = dict(served.repos) if served is not None else {}
            known = dataset.known_rows(location, ds)
        tasks, failed = _tasks(settings, specs, known, served_repos, Path(tmp), workers)
        run = (executor or (lambda _dim: local_executor(workers)))(dimension)
        # Repositories whose files hash as served are settled here, before any worker
        # starts (a spawned worker costs seconds of imports; an unchanged org, none).
        results = {r.name: r for r in (unchanged(t) for t in tasks) if r is not None}
        todo = [t for t in tasks if t.name not in results]
        for done in run(todo) if todo else ():
            results[done.name] = done
            if progress is not None:
                progress(len(results), len(tasks), sum(r.chunks for r in results.values()))
        for name, error in failed.items():
            results[name] = RepoRows(name, error=error)
        listed = {s.name for s in specs}
        gone = sorted(set(known) - listed)
        removed = {r.name: r.removed for r in results.values() if r.removed and not r.error}
        ids = dataset.row_ids(location, ds, removed, gone) if ds is not None else []
        dataset.append(location, [r.rows for r in results.values()])
        dataset.delete(location, ids)
        dataset.compact(location)
        version = dataset.latest_version(location)
        heads = {t.name: t.head for t in tasks}
        lines, entries = _entries(specs, results, served_repos, known, heads)
        lock.check()  # never point readers at a version another build may be changing
        dataset.serve(
            location,
            Served(
                version=version,
                model=model,
                dimension=dimension,
                built_at=datetime.now(UTC).isoformat(timespec="seconds"),
                repos=entries,
            ),
        )
        dataset.cleanup(location)
    return BuildReport(
        uri=str(location),
        version=version,
        model=model,
        repos=lines,
        gone=gone,
        seconds=time.perf_counter() - started,
        chunks=sum(r.chunks for r in results.values()),
        rebuilt=rebuilt,
    )


def _tasks(
    settings: Settings,
    specs: Sequence[RepoSpec],
    known: dict[str, dict[str, str]],
    served: dict[str, RepoEntry],
    tmp: Path,
    workers: int | None,
) -> tuple[list[RepoTask], dict[str, str]]:
    """A task per repository; the ones whose clone failed, with why."""

    def one(spec: RepoSpec) -> RepoTask | str:
        if spec.is_url:
            try:
                path, head = clone(spec, tmp)
            except RuntimeError as exc:
                return str(exc)
        else:
            path, head = Path(spec.source), head_of(Path(spec.source))
            if not path.is_dir():
                return f"{shown(spec.source)}: no such folder"
        entry = served.get(spec.name)
        return RepoTask(
            spec.name,
            spec.source,
            str(path),
            head,
            known.get(spec.name, {}),
            entry.digest if entry is not None and not entry.error else "",
            settings,
        )

    with ThreadPoolExecutor(max_workers=max(1, workers or default_workers())) as pool:
        made = list(pool.map(one, specs))
    tasks = [t for t in made if isinstance(t, RepoTask)]
    failed = {s.name: m for s, m in zip(specs, made, strict=True) if isinstance(m, str)}
    return tasks, failed


def _entries(
    specs: Sequence[RepoSpec],
    results: dict[str, RepoRows],
    served: dict[str, RepoEntry],
    known: dict[str, dict[str, str]],
    heads: dict[str, str],
) -> tuple[list[RepoLine], dict[str, RepoEntry]]:
    """The output lines and the pointer's entries: a repository that failed keeps its
    served rows (and says why); one whose files did not change keeps what it said."""
    lines: list[RepoLine] = []
    entries: dict[str, RepoEntry] = {}
    for spec in specs:
        r = results.get(spec.name) or RepoRows(spec.name, error="not read")
        before = served.get(spec.name)
        source = shown(spec.source)
        if r.error:
            kept = len(known.get(spec.name, {}))
            entry = replace(before, error=r.error, source=source) if before else RepoEntry(source)
            entry.error, entry.records = r.error, kept
            entries[spec.name] = entry
            lines.append(RepoLine(spec.name, source, kept, error=r.error))
            continue
        skipped = before is not None and not before.error and r.digest == before.digest
        refused = list(before.refused) if skipped and before is not None else r.refused
        entries[spec.name] = RepoEntry(
            source=source,
            head=heads.get(spec.name, ""),
            records=r.records,
            refused=refused,
            digest=r.digest,
        )
        lines.append(
            RepoLine(spec.name, source, r.records, r.new, len(r.removed), refused, "", r.changed)
        )
    return lines, entries


def local_executor(workers: int | None) -> Executor:
    """The local process pool of ``workers`` spawned processes (``settings`` travel in
    each task); one worker reads in this process (no pool to start)."""
    count = workers or default_workers()

    def run(tasks: Sequence[RepoTask]) -> Iterator[RepoRows]:
        if count <= 1 or len(tasks) <= 1:
            yield from (repo_rows(t) for t in tasks)
            return
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        # A worker loads the model at its first repository that changed (process_embedder):
        # an incremental build of unchanged repositories loads none.
        try:
            with ProcessPoolExecutor(
                max_workers=min(count, len(tasks)), mp_context=context
            ) as pool:
                yield from pool.map(repo_rows, tasks)
        except BrokenProcessPool:
            raise OrgError(
                "a build worker process died (out of memory? try fewer --workers); "
                "nothing served changed"
            ) from None

    return run
