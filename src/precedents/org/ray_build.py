"""``org build --ray``: each repository parsed and embedded on a Ray cluster, one commit.

The builder (:mod:`precedents.org.builder`) hands the repositories that changed
to :func:`stream_rows_on_ray` (through :func:`ray_executor`) instead of its local
process pool. On the cluster, an
``ActorPool`` of workers (one CPU each) loads the embedding model once per actor,
reads a repository with the local index's own readers
(:func:`precedents.org.work.repo_rows`) and writes its new rows straight to the
table's storage as Lance fragment files (``lance_ray.fragment.write_fragment``),
handing back only their metadata and the repository's summary: vectors never
travel through the driver. The driver then makes ONE Lance commit (an ``Append``
of every fragment; an ``Overwrite`` when the table does not exist yet), so a build
adds one version, not one per repository, and a killed build leaves files no
version names (the previous one keeps serving; Lance's cleanup removes them once
they are old enough). The builder then deletes the replaced rows and writes the
pointer last, as without Ray.

Workers reach the same storage through the same standard chain: the driver's
``AWS_*``/``AZURE_*``/``GOOGLE_*`` variables go to them in the job's ``runtime_env``
(Ray keeps them in its job config; precedents writes them nowhere). Ray's own
chatter (worker output, its log lines) never reaches our stdout.

Needs the ``precedents[org-ray]`` extra (Ray and lance-ray): a CI runner, not a laptop.
"""

from __future__ import annotations

import logging
import os
import pickle
import resource
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from precedents.errors import OrgError, OrgUnreachable
from precedents.org.location import shown
from precedents.org.table import org_schema
from precedents.org.work import RepoRows, RepoTask

if TYPE_CHECKING:
    from precedents.org.builder import Executor

NEEDS_EXTRA: Final = "org build --ray needs precedents[org-ray] (Ray and lance-ray)"
ANSWER_S: Final = 5.0  # a cluster that does not answer within this is unreachable
FORWARDED: Final = ("AWS_", "AZURE_", "GOOGLE_")  # the storages' standard chains


@dataclass
class RayBuild:
    """What a Ray build hands back to the builder."""

    repos: list[RepoRows]  # one per task: the summary (``rows`` None, ``written`` counted)
    version: int  # the Lance version after the one commit (the read one if nothing was new)
    workers: int  # actors used
    worker_rss: list[int] = field(default_factory=list)  # each actor's peak RSS, bytes


def _modules() -> tuple[Any, Any]:
    """Ray and lance-ray, or the one line that says which extra brings them."""
    try:
        import lance_ray.fragment
        import ray
        import ray.util
    except ImportError:
        raise OrgError(NEEDS_EXTRA) from None
    return ray, lance_ray.fragment


def check_answers(address: str, timeout: float = ANSWER_S) -> None:
    """OrgUnreachable (one line) unless ``host:port`` accepts a connection in ``timeout`` s.

    ``ray.init`` on an address nobody answers at retries for minutes, printing to
    stderr; a TCP connection says it in seconds. ``auto`` is Ray's own lookup
    (``RAY_ADDRESS``, the cluster started on this machine): it fails fast by itself.
    """
    if address == "auto":
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise OrgError(f"Ray address {address!r} is not HOST:PORT or auto")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as exc:
        raise OrgUnreachable(
            f"Ray cluster at {address} does not answer within {timeout:g} s: {exc.strerror or exc}"
        ) from None


def forwarded_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The storage chains' variables the workers need to reach the same storage."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k.startswith(FORWARDED)}


def _connect(ray: Any, address: str) -> None:
    check_answers(address)
    if ray.is_initialized():
        ray.shutdown()
    try:
        ray.init(
            address=address,
            log_to_driver=False,  # workers' stdout stays in the cluster's logs
            logging_level=logging.ERROR,
            configure_logging=False,
            include_dashboard=False,
            runtime_env={"env_vars": forwarded_env()},
        )
    except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError…
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise OrgUnreachable(f"Ray cluster at {shown(address)}: {shown(first)[:300]}") from None


class _Worker:
    """One actor: one repository per call. Its model is loaded by the first repository
    that changed (:func:`~precedents.org.work.process_embedder` keeps it for the
    process), so an incremental build of unchanged repositories loads none."""

    def __init__(self, table_uri: str, dimension: int) -> None:
        self.table_uri = table_uri
        self.schema = org_schema(dimension)

    def build(self, task: RepoTask) -> tuple[RepoRows, list[bytes]]:
        """A repository's summary and its new rows' fragments (pickled Lance metadata):
        the rows themselves stay on the storage, ``written`` says how many."""
        from lance_ray.fragment import write_fragment

        from precedents.org.work import repo_rows

        rows = repo_rows(task)  # the task's settings name the model profile
        fragments: list[bytes] = []
        if rows.rows is not None and rows.rows.num_rows:
            table = rows.rows.select(self.schema.names).cast(self.schema)
            written = write_fragment([table], self.table_uri, schema=self.schema)
            fragments = [pickle.dumps(meta) for meta, _ in written]
            rows.written = table.num_rows
        rows.rows = None
        return rows, fragments

    def rss(self) -> int:
        """This actor's peak resident memory, bytes (Linux reports KiB)."""
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def cluster_workers(ray: Any, wanted: int | None) -> int:
    """Actors to start: ``wanted``, else one per CPU of the cluster; never more CPUs than it has."""
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    return max(1, min(wanted or cpus, cpus))


def _commit(table_uri: str, dimension: int, fragments: list[Any]) -> int:
    """One commit of every fragment: the new version (the current one when none)."""
    import lance

    try:
        dataset = lance.dataset(table_uri)
    except (ValueError, OSError, FileNotFoundError):
        dataset = None
    if not fragments:
        return int(dataset.version) if dataset is not None else 0
    if dataset is None:
        create = lance.LanceOperation.Overwrite(org_schema(dimension), fragments)
        return int(lance.LanceDataset.commit(table_uri, create).version)
    append = lance.LanceOperation.Append(fragments)
    done = lance.LanceDataset.commit(table_uri, append, read_version=dataset.version)
    return int(done.version)


def stream_rows_on_ray(
    tasks: Sequence[RepoTask],
    address: str,
    table_uri: str,
    *,
    dimension: int,
    workers: int | None = None,
    done: RayBuild | None = None,
) -> Iterator[RepoRows]:
    """Each repository's summary as its worker finishes; after the last, the one commit
    (``done``, when given, gets the version, the workers and their RSS). What
    :func:`build_rows_on_ray` and the builder's executor read."""
    ray, _ = _modules()
    from ray.util import ActorPool

    _connect(ray, address)
    try:
        count = cluster_workers(ray, workers)
        actor = ray.remote(num_cpus=1)(_Worker)
        actors = [actor.remote(table_uri, dimension) for _ in range(count)]
        pool = ActorPool(actors)
        fragments: list[Any] = []
        try:
            for rows, pickled in pool.map_unordered(lambda a, t: a.build.remote(t), list(tasks)):
                fragments.extend(pickle.loads(p) for p in pickled)
                yield rows
            rss = [int(r) for r in ray.get([a.rss.remote() for a in actors])]
        except ray.exceptions.RayError as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[-1]
            raise OrgError(f"org build on Ray failed: {shown(first)[:300]}") from None
        version = _commit(table_uri, dimension, fragments)
        if done is not None:
            done.version, done.workers, done.worker_rss = version, count, rss
    finally:
        ray.shutdown()


def build_rows_on_ray(
    tasks: Sequence[RepoTask],
    address: str,
    table_uri: str,
    *,
    dimension: int,
    workers: int | None = None,
    progress: Callable[[RepoRows], None] | None = None,
) -> RayBuild:
    """Every repository of ``tasks`` read and embedded on the Ray cluster at ``address``
    (``host:port`` or ``auto``), its new rows appended to ``table_uri`` in one commit.

    Each task carries what the served version holds of its repository (``known``,
    ``digest``), so an unchanged file is not embedded again, and its settings (the
    model profile a worker loads, once per actor). ``progress`` is called on the
    driver as each repository finishes. OrgError (one line) when the extra is
    missing, the cluster does not answer, or a worker fails.
    """
    done = RayBuild([], 0, 0)
    by_name: dict[str, RepoRows] = {}
    for rows in stream_rows_on_ray(
        tasks, address, table_uri, dimension=dimension, workers=workers, done=done
    ):
        by_name[rows.name] = rows
        if progress is not None:
            progress(rows)
    done.repos = [by_name[t.name] for t in tasks]
    return done


def ray_executor(
    address: str, table_uri: str, *, workers: int | None = None
) -> Callable[[int], Executor]:
    """The builder's executor seam for ``--ray ADDRESS``: given the vectors' dimension,
    the function that reads the tasks on the cluster, each repository handed on as it
    finishes (the builder's progress), its rows already on the storage (``written``)
    and committed once after the last. Checks now, before the build takes its lock,
    that Ray and lance-ray are installed and that the cluster answers: one line
    otherwise."""
    _modules()
    check_answers(address)

    def for_dimension(dimension: int) -> Executor:
        def run(tasks: Sequence[RepoTask]) -> Iterator[RepoRows]:
            return stream_rows_on_ray(
                tasks, address, table_uri, dimension=dimension, workers=workers
            )

        return run

    return for_dimension
