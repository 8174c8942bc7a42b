"""The front door: every CLI command and every MCP tool is a call here (one function per
command; tests/test_front_door.py checks that none goes around it).

Each takes resolved :class:`Settings` and returns data; the CLI only parses
options, calls one of these and prints, and the MCP tools return what they return.
What the warm daemon can answer is asked of it, through the protocol's one
client, and done in-process when it cannot (:mod:`precedents.query_daemon.client`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from precedents import protocol, runlock
from precedents.config import Settings
from precedents.errors import (
    DaemonModelDiffers,
    PrecedentsError,
    UsageError,
    disk_full,
    is_disk_full,
)
from precedents.ingest.commit_paths import read_problems
from precedents.ingest.progress import read_progress
from precedents.ingest.sources import Problem, configured_sources, project_root, source_rows, walk
from precedents.ingest.sources import Sources as Sources  # what the CLI builds its folders into
from precedents.protocol import DaemonClient, Unavailable
from precedents.query_daemon import client as daemon_client
from precedents.secrets.names import shown_path
from precedents.secrets.withheld import read_withheld

if TYPE_CHECKING:
    from precedents.adr_graph import AdrGraph
    from precedents.adr_graph.view import AdrView
    from precedents.hook.install import HookSetup
    from precedents.ingest.indexer import IndexReport
    from precedents.ingest.progress import Progress
    from precedents.ingest.promote import Saved
    from precedents.models.embedding import Embedder
    from precedents.protocol import QueryRow
    from precedents.service.uninstall import UninstallResult
    from precedents.service.units import ServiceResult
    from precedents.store import Store

# The model, LanceDB, pyarrow and numpy are imported inside the calls that need
# them: `status` (from the saved summary, store/health.py) and `query` with a
# daemon running answer without any of them (issue #21: 0.24 s each, loaded).

log = logging.getLogger("precedents.api")
T = TypeVar("T")

WATCHER_ROLE = "watcher"  # precedents.watcher.ROLE (a test checks they agree)
# A warm daemon answers in tens of milliseconds; past this, rank in-process.
DAEMON_QUERY_S = 5.0
# `query`: a warm daemon answers in milliseconds, but holds a question while it indexes
# the notes `remember` handed it (query_daemon/ops.py, NOTES_WAIT_S: the first imports
# LanceDB, 1-7 s on a busy 2-core machine).
QUERY_S = 30.0
# MCP `recall`: how long a call waits for the daemon's answer.
RECALL_S = QUERY_S  # its `query` half may wait as `query` does
MAX_PATH_CHARS = 4096


class QueryResult(TypedDict):  # `precedents query --json`
    project: str
    results: list[QueryRow]
    via: str  # "daemon" or "in-process"


class RecallResult(TypedDict):  # the MCP `recall` tool's answer
    project: str
    injected: str | None  # the hook's lines: marks, successors, byte cap
    records: list[QueryRow]  # ranked, each ADR with its mark (naming its successor)
    via: str


def reindex(
    settings: Settings,
    *,
    full: bool = False,
    sources: Sources | None = None,
    progress: Progress | None = None,
    on_wait: Callable[[int | None], None] | None = None,
) -> IndexReport:
    """Bring the store in line with the sources (or only the folders in ``sources``).

    ``full`` re-embeds everything into a new store built beside the current
    one, switched in only when complete: an interrupted rebuild leaves the old
    index serving. Another writer (a `reindex`, the watcher) is waited for;
    ``on_wait`` is told once, with its pid.
    """
    from precedents.ingest.indexer import Indexer, lazy_store
    from precedents.store import beside, switch_in

    found = configured_sources(settings, sources.checked() if sources else None)
    writer = runlock.WriterLock(settings.run_dir, on_wait)
    with writer.held():
        target = beside(settings.index_dir, "rebuild") if full else settings.index_dir
        lazy = lazy_store(settings, target)
        store = lazy.open(rebuild=full)
        report = Indexer(settings, store, lazy.model, writer).sync(walk(found), progress)
        if lazy.rebuilt:
            log.warning("%s: rebuilt", lazy.rebuilt)
            report.problems.insert(0, Problem(str(target), "index was damaged: rebuilt"))
        if lazy.loaded is not None:  # recorded with the store, shown by `status`
            store.stamp(
                model_load_seconds=f"{lazy.loaded.load_seconds:.2f}", device=lazy.loaded.device
            )
        _save_summary(settings, store)  # the next `status` answers without reading it
        if full:
            switch_in(settings.index_dir, target)
    return report


def _save_summary(settings: Settings, store: Store) -> None:
    """Record what the store holds now, under the writer lock (nothing moves meanwhile).

    Stamped with the store's own folder: a rebuild's files keep their names,
    sizes and mtimes when the folder is switched in. A failure costs `status`
    one read of the store, nothing else.
    """
    from precedents.store.health import save, tree_stamp
    from precedents.store.summary import summarize

    found = tree_stamp(store.path)
    if found is None:
        return
    try:
        summary = summarize(store)
    except (PrecedentsError, OSError) as exc:
        log.info("the store's summary was not saved: %s", exc)
        return
    save(settings.index_dir, settings.cache_dir, found[0], summary)


def query(
    settings: Settings,
    text: str,
    *,
    project: str | None = None,
    k: int = 5,
    all_projects: bool = False,
    embedder: Embedder | None = None,
) -> QueryResult:
    """Documents of a project (and shared rules), or of every project, ranked for ``text``
    (``precedents query --json``).

    Asked of the running daemon when there is one, else ranked in-process (always,
    with a given ``embedder``); either way by :class:`Recall`, the code the hook's
    daemon runs, so `query` and the hook order the same question the same way.
    """
    _check_query(text)
    target = None if all_projects else project_root(project or Path.cwd())

    def asked(client: DaemonClient) -> QueryResult | None:
        if embedder is not None:
            return None
        _same_model(settings, client)
        answer = _when_loaded(settings, client, lambda: client.query(text, target, k, QUERY_S))
        return {"project": answer["project"], "results": answer["results"], "via": "daemon"}

    return daemon_client.daemon_or_here(
        settings.run_dir, asked, lambda: _query_here(settings, text, target, k, embedder)
    )


def _same_model(settings: Settings, client: DaemonClient) -> None:
    """Raise :class:`DaemonModelDiffers` when the daemon ``client`` reaches embeds with
    another model than ``settings`` name: its answer would silently be another model's
    (issue #29). One more round trip on the socket: 0.1 ms, beside the query's 3 ms."""
    from precedents.config import parse_model_id

    def named(model: str) -> tuple[str, str]:  # aliases resolved: "all-MiniLM-L6-v2" is one
        profile, variant = parse_model_id(model)
        return profile.model_id, variant

    ping = client.ping(DAEMON_QUERY_S)
    running = ping.get("model")
    if not isinstance(running, str) or named(running) == named(settings.model):
        return
    raise DaemonModelDiffers(
        f"the running daemon (pid {ping.get('pid')}) embeds with {running}, not "
        f"{settings.model} as set here; stop it (`precedents serve --stop`) to answer "
        "with these settings, or set the same model here"
    )


def _query_here(
    settings: Settings, text: str, target: str | None, k: int, embedder: Embedder | None
) -> QueryResult:
    # Before the model loads (seconds): a store that cannot be read is one line and
    # exit 1, not "no records found" (issue #21). Free while the folder is unchanged.
    from precedents.store.health import verify

    verify(settings.index_dir, settings.cache_dir)
    from precedents.recall import Recall

    recall = Recall(settings, embedder)
    try:
        if recall.store_problem is not None:
            raise recall.store_problem
        found = recall.query(text, target, k)
        return {"project": found["project"], "results": found["results"], "via": "in-process"}
    finally:
        recall.close()


def _check_query(text: str) -> None:
    """Refuse a question with nothing to embed: a blank text still has a vector, and
    every record is "nearest" to it (the MCP `recall` tool refuses it the same way)."""
    from precedents.errors import UsageError

    if not protocol.clip_prompt(text).strip():
        raise UsageError("query is empty")


def _when_loaded(settings: Settings, client: DaemonClient, question: Callable[[], T]) -> T:
    """``question`` to the daemon; one still loading its model is waited for (issue #29: a
    model loaded here too took 11 s beside the daemon's load on two cores, against the
    few seconds left of the daemon's). Unavailable when it does not become ready."""
    try:
        return question()
    except Unavailable as exc:
        if exc.why != "starting" or not daemon_client.ensure_daemon(settings.home, client):
            raise
    return question()


def auto_context(settings: Settings, text: str, *, project: str | None = None) -> str | None:
    """Exactly what the hook would inject for ``text``: the daemon's answer to it (without
    a session: nothing is held back as already given), else the same code in-process."""
    from precedents.recall import auto_context as recall_auto_context

    _check_query(text)
    cwd = str(project or Path.cwd())

    def asked(client: DaemonClient) -> tuple[str | None]:
        answer = _when_loaded(settings, client, lambda: client.recall(text, cwd, 1, RECALL_S))
        return (answer["context"],)

    def here() -> tuple[str | None]:
        return (recall_auto_context(settings, text, project),)

    # In a tuple: None is what the hook injects when nothing stands out, not "ask here".
    return daemon_client.daemon_or_here(settings.run_dir, asked, here)[0]


def status(settings: Settings) -> dict[str, Any]:
    """What is indexed, by kind and project, with the model, device and store size."""
    info: dict[str, Any] = {
        "state_dir": str(settings.home),
        "index_dir": str(settings.index_dir),
        "model": settings.model,
        # Not probed here: finding out would import torch (about a second) for
        # a command that should answer at once. The device the model last ran
        # on is recorded with the store (below); else the setting.
        "device": settings.device,
        "indexed_model": None,
        "dimension": None,
        # A team folder marked ("origin": "team"), with its config's problem if any.
        "sources": source_rows(configured_sources(settings)),
        # Files left out for a secret in their path (masked), as the last pass found them.
        "withheld_paths": read_withheld(settings.cache_dir),
        # Each git project's problems (a shallow clone, a corrupt pack) as the last pass
        # found them: one line each (docs/commits.md).
        "git_problems": [
            {**g, "project": shown_path(g["project"])} for g in read_problems(settings.cache_dir)
        ],
        "kinds": {},
        "projects": {},
        "documents": 0,
        "chunks": 0,
        "store_bytes": 0,
        "last_indexed": None,
        "indexing": read_progress(settings.run_dir),
    }
    # From the summary saved when the store was last read whole (by the daemon's
    # export, a `reindex` or an earlier `status`) while the folder is unchanged;
    # else read with `lance` now. A store that cannot be read is a StoreError:
    # one line naming the fix, exit 1 (issue #21). No daemon, no model, no LanceDB.
    from precedents.store.health import summary as store_summary

    found, via = store_summary(settings.index_dir, settings.cache_dir)
    done = info if found is None else {**info, **found, "via": via}
    return {**done, "device": _device_in_use(settings, found or {}), "org": org_status(settings)}


def org_pull(settings: Settings, uri: str | None = None) -> dict[str, Any]:
    """Pull the org index's served version now (`org_uri`, or ``uri``): only the files
    that changed; the status. An :class:`OrgError` (one line) keeps the previous one."""
    from precedents.org.pull import pull

    pull(settings, uri)
    return org_status(settings) or {}


def org_status(settings: Settings) -> dict[str, Any] | None:
    """The org index held here (version, age, records, repositories, last error), from
    its status file: no network. None when none is configured or was ever pulled."""
    from precedents.org.status import described
    from precedents.secrets.mask import mask_secrets

    return described(settings.org_dir, mask_secrets(settings.org_uri))


def _device_in_use(settings: Settings, found: dict[str, Any]) -> str:
    """The device the model of ``settings`` runs on, never "auto" (issue #29); the one
    recorded with the store when it last ran this model (`reindex` records it)."""
    from precedents.config import parse_model_id
    from precedents.profiles.registry import device_in_use

    stored = found.get("indexed_model")
    same = stored and parse_model_id(stored)[0] == parse_model_id(settings.model)[0]
    recorded = found.get("device") if same else None
    return device_in_use(settings.model, settings.device, settings.runtime, recorded)


def setup(settings: Settings, model: str | None = None) -> dict[str, Any]:
    """Download (if needed) and load ``model``: the only call that may use the network."""
    spec = settings.with_overrides(model=model).model_spec()
    from precedents.models.embedding import load_embedder, setup_model

    where = setup_model(spec)
    embedder = load_embedder(spec)
    return {
        "model": embedder.model_id,
        "path": where,
        "dimension": embedder.dimension,
        "device": embedder.device,
        "load_seconds": round(embedder.load_seconds, 2),
    }


def evaluate(
    settings: Settings,
    sets: Sequence[Path],
    *,
    tune: bool = False,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Score retrieval and selection on eval ``sets`` (docs/eval.md) at the model's
    thresholds; with ``tune``, also search the threshold grid and report the best."""
    from precedents.evaluation import core as evaluation
    from precedents.models.embedding import canonical_model_id

    run = evaluation.prepare(settings, sets, progress)
    current = settings.thresholds_for(canonical_model_id(settings.model_spec()))
    out: dict[str, Any] = {
        "model": settings.model,
        "thresholds": asdict(current),
        "scores": evaluation.score(run, current),
    }
    if tune:
        best, scores = evaluation.tune(run)
        out["tuned"] = {"thresholds": asdict(best), "scores": scores}
    return out


def why(settings: Settings, project: str | None = None, n: int = 5) -> list[dict[str, Any]]:
    """The last ``n`` hook answers of ``project`` (default: this folder's), from the daemon's
    log: decision, scores and the records shown; never the message text."""
    from precedents.query_daemon.history import recent_answers

    return recent_answers(settings.log_dir, project_root(project or Path.cwd()), n)


def mute(settings: Settings, path: Path, *, undo: bool = False) -> dict[str, Any]:
    """Never inject the record at ``path`` again (``undo``: inject it again); a path
    that names no file is a :class:`UsageError` (recall/mute.py says what is taken)."""
    from precedents.recall.mute import MuteList

    muted = MuteList(settings.home)
    muted.check(path, undo=undo)  # a path that names no file is refused, not listed
    target, changed = muted.unmute(path) if undo else muted.mute(path)
    return {"path": target, "muted": not undo, "changed": changed}


def remember(
    settings: Settings,
    text: str,
    *,
    title: str | None = None,
    project: str | None = None,
    team: bool = False,
    start_daemon: bool = False,
) -> dict[str, Any]:
    """Save ``text`` as a memory note of ``project`` (default: this folder's), or with
    ``team`` into its repository's team folder, to commit (docs/team.md); and make it
    searchable: by the running watcher, else by the daemon's warm model (one it is
    still loading indexes it once loaded: ``queued``), else here and now. With
    ``start_daemon`` (the CLI) a daemon that is down is started and handed the note,
    rather than the model loaded here (issue #29: seconds, where the CLI takes < 1 s)."""
    from precedents.ingest.promote import save_personal, save_team

    save = save_team if team else save_personal
    return _index_saved(settings, save(settings, text, title, project), start_daemon)


def promote(settings: Settings, note: str, *, project: str | None = None) -> dict[str, Any]:
    """Copy personal note ``note`` (a path, or a name of this project's notes) into the
    repository's team folder, masked, with author and date (ingest/promote.py)."""
    from precedents.ingest.promote import promote as promote_note

    return _index_saved(settings, promote_note(settings, note, project), False)


def _index_saved(settings: Settings, saved: Saved, start: bool) -> dict[str, Any]:
    """Make ``saved`` searchable: the running watcher's job when it watches the note's
    folder, else the daemon's (started first with ``start``), else done here. The note is
    written: a full disk from here on (the state folder's) says so, and how to finish."""
    try:
        return {**saved.to_json(), **_indexed_by(settings, saved, start)}
    except (OSError, PrecedentsError) as exc:
        if not is_disk_full(exc):
            raise
        then = f"{saved.path} is saved but not searchable yet; free some space, then "
        then += "`precedents reindex`"
        raise disk_full(exc, settings.home, then) from None


def _indexed_by(settings: Settings, saved: Saved, start: bool) -> dict[str, Any]:
    from precedents.query_daemon.handover import hand_over

    # The watcher's role by name: importing precedents.watcher costs 0.7 s (LanceDB).
    watcher = runlock.Claim(settings.run_dir, WATCHER_ROLE)
    if saved.watched and not watcher.acquire():  # a watcher holds it: the save is its job
        return {"indexed_by": "watcher"}
    watcher.release()
    taken = hand_over(settings, str(saved.path), saved.key, start=start)
    if taken is not None:  # indexed on the daemon's time, once its model is loaded
        return {"indexed_by": "daemon", "loaded": taken}
    from precedents.ingest.indexer import lazy_store
    from precedents.ingest.remember import index_remembered

    index_remembered(settings, lazy_store(settings).model(), saved.path, saved.key)
    return {"indexed_by": "remember"}


def recall(settings: Settings, text: str, project: str | None, k: int) -> RecallResult:
    """What the hook would inject for ``text`` in ``project`` (default: this folder's),
    and its top ``k`` records: the MCP `recall` tool.

    One round trip to a warm daemon; one that is down or loading is started as the
    hook starts it and waited for; else in-process.
    """
    text = protocol.clip_prompt(text)  # as the hook: the model reads no more than the start
    root = project_root(project or Path.cwd())

    def asked(client: DaemonClient) -> RecallResult:
        try:
            answer = client.recall(text, root, k, RECALL_S)
        except Unavailable as exc:
            if exc.why == "timeout" or not daemon_client.ensure_daemon(settings.home, client):
                raise
            answer = client.recall(text, root, k, RECALL_S)
        return {
            "project": root,
            "injected": answer["context"],
            "records": answer["results"],
            "via": "daemon",
        }

    def here() -> RecallResult:
        injected = auto_context(settings, text, project=root)
        ranked = query(settings, text, project=root, k=k)
        return {
            "project": root,
            "injected": injected,
            "records": ranked["results"],
            "via": ranked["via"],
        }

    return daemon_client.daemon_or_here(settings.run_dir, asked, here)


def adr_graph(
    settings: Settings, folder: str | Path | None = None, *, confined: bool = False
) -> AdrGraph:
    """The ADR graph of ``folder`` (default: the configured or conventional ADR folder
    of this repository), cached, its text masked: how every command and tool builds one.

    ``confined`` (the MCP tools, whose folder an agent names): ``folder`` must lie
    inside this project or a configured ADR folder (``dir="/"`` once walked the whole
    filesystem, issue #20); elsewhere it is a :class:`UsageError`.
    """
    # Imported here: the graph's parser loads only for the ADR commands and tools.
    from precedents.adr_graph import build_graph, default_adr_dir
    from precedents.adr_graph.duplicates import mark_duplicates
    from precedents.secrets.mask import mask_secrets

    cwd = Path.cwd()
    if folder is None or folder == "":
        target = default_adr_dir(cwd, settings.adrs)
    elif confined:
        target = _inside_adr_roots(settings, str(folder), cwd)
    else:
        target = Path(folder)
    graph = build_graph(target, settings.cache_dir / "adr", mask_secrets)
    # An id another ADR folder of the repository claims too is marked (issue #28).
    siblings = lambda f: build_graph(f, settings.cache_dir / "adr", mask_secrets)  # noqa: E731
    return mark_duplicates(graph, settings.adrs, siblings)


def adr_view(
    settings: Settings, folder: str | Path | None = None, *, confined: bool = False
) -> AdrView:
    """:func:`adr_graph` as output: every field inert (adr_graph/view.py)."""
    from precedents.adr_graph.view import AdrView

    return AdrView(adr_graph(settings, folder, confined=confined))


def adr_check(
    settings: Settings, folder: str | Path | None = None
) -> tuple[AdrView, list[dict[str, Any]]]:
    """`adr check`: the view of ``folder`` (see :func:`adr_graph`) and its findings, the
    ids another ADR folder of the repository claims too among them (adr_graph/duplicates.py)."""
    from precedents.adr_graph.duplicates import folder_duplicates

    view = adr_view(settings, folder)
    others = folder_duplicates(view.graph, settings.adrs, lambda f: adr_graph(settings, f))
    return view, view.check([*view.graph.check(), *others])


def check(
    settings: Settings, files: Sequence[str] = (), *, all_files: bool = False
) -> dict[str, Any]:
    """`precedents check`: secrets, ADR graph errors, misread rule front matter and
    near-duplicate team notes in the staged files (or ``files``, or every tracked
    one with ``all_files``) of this folder's repository (docs/check.md)."""
    from precedents.check.runner import run

    return run(files, all_files=all_files, adr_dirs=settings.adrs).as_dict()


def _inside_adr_roots(settings: Settings, folder: str, cwd: Path) -> Path:
    """``folder``, resolved, when it lies in the project (the git root of ``cwd``) or a
    configured ADR folder or repository. A "project" that is the filesystem root or the
    home folder (a server started outside any repository) is none: it would open all."""
    from precedents.kinds import git_root

    if "\0" in folder or len(folder) > MAX_PATH_CHARS:
        raise UsageError("dir: not a usable path")
    target = Path(folder).expanduser()
    real = (target if target.is_absolute() else cwd / target).resolve()
    roots = [Path(p).expanduser().resolve() for p in (*settings.adrs, *settings.repos)]
    project = git_root(cwd).resolve()
    if project != Path(project.anchor) and project != Path.home().resolve():
        roots.append(project)
    if any(real == root or root in real.parents for root in roots):
        return real
    allowed = ", ".join(str(r) for r in roots) or "none (no project here, none configured)"
    raise UsageError(
        f"dir {folder[:200]!r} is outside the project and the configured ADR folders "
        f"(allowed: {allowed})"
    )


def serve(settings: Settings, *, idle_timeout_s: float | None = None, tcp: bool = False) -> str:
    """Run the daemon here (logging to its log) until it stops: why (``error: ...``: failed)."""
    from precedents.query_daemon.server import configure_logging
    from precedents.query_daemon.server import serve as run_daemon

    configure_logging(settings)
    return run_daemon(settings, idle_timeout_s=idle_timeout_s, transport="tcp" if tcp else None)


def daemon_status(settings: Settings) -> dict[str, object]:
    """``running`` (who holds its lock), ``answering``, ``pid`` and its ping's answer."""
    from precedents.query_daemon.presence import status as server_status

    return server_status(settings.run_dir)


def stop_daemon(settings: Settings) -> bool:
    """Ask the running daemon to exit; False when none answered."""
    return daemon_client.stop_daemon(settings.run_dir)


def install_hook(
    settings: Settings,
    *,
    project: Path | None = None,
    shared: bool = False,
    uninstall: bool = False,
    form: str = "auto",
    http: bool = False,
) -> HookSetup:
    """Register (or remove) the hooks in Claude Code's settings, without the plugin."""
    from precedents.hook.install import install_hook as install

    return install(
        settings, project=project, shared=shared, uninstall=uninstall, form=form, http=http
    )


def watch(settings: Settings, folders: Sources, debounce_s: float) -> None:
    """Index ``folders`` (none named: every source) as they change, until SIGINT/SIGTERM."""
    from precedents.watcher.foreground import configure_logging, run_until_signalled

    configure_logging()
    run_until_signalled(settings, folders, debounce_s)


def install_service(
    settings: Settings, *, daemon: bool = True, load: bool = True, dry_run: bool = False
) -> ServiceResult:
    """Write (and load) the login units of the watcher and, with ``daemon``, the daemon."""
    from precedents.service.units import install_service as install

    return install(settings, daemon=daemon, load=load, dry_run=dry_run)


def uninstall_service(*, load: bool = True) -> ServiceResult:
    """Stop and remove the units :func:`install_service` writes (no settings: none needed)."""
    from precedents.service.units import uninstall_service as uninstall

    return uninstall(load=load)


def unanswered_calls(settings: Settings, since: str = "", n: int = 5) -> list[dict[str, Any]]:
    """The last ``n`` hook calls since ``since`` that no daemon answered (`why`)."""
    from precedents.query_daemon.history import unanswered_calls as unanswered

    return unanswered(settings.log_dir, since, n)


def report_lines(scores: dict[str, Any]) -> Iterable[str]:
    """:func:`evaluate`'s scores as the lines `eval` prints."""
    from precedents.evaluation.core import report_lines as lines

    return lines(scores)


def uninstall(settings: Settings, *, keep_data: bool = False, load: bool = True) -> UninstallResult:
    """Stop precedents' processes and remove its units, hooks, caches and, unless
    ``keep_data``, its state folder (service/uninstall.py); failures are in the result."""
    from precedents.service.uninstall import uninstall as remove_all

    return remove_all(settings, keep_data=keep_data, load=load)


def org_build(
    settings: Settings,
    repos_from: Path,
    to: str,
    *,
    workers: int | None = None,
    ray: str | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """`org build`: the repositories ``repos_from`` lists, read, checked, masked and
    embedded into the org index at ``to`` (docs/org.md, "Building"). A URI that is no
    URI, a bad repos file: :class:`UsageError`; the storage's refusals: the org errors."""
    from precedents.errors import OrgError

    try:
        from precedents.org.builder import build
        from precedents.org.location import OrgLocation
        from precedents.org.repos import read_repos
    except ImportError as exc:  # obstore: the org extra
        raise OrgError(f"org build needs precedents[org] ({exc.name} is not installed)") from None
    try:
        location = OrgLocation.parse(to)
    except OrgError as exc:  # a URI that cannot be is the caller's mistake
        raise UsageError(str(exc)) from None
    if workers is not None and workers < 1:
        raise UsageError("--workers must be 1 or more")
    specs = read_repos(repos_from)
    executor = None
    if ray is not None:
        # Ray and lance-ray imported, the cluster's address answering, before the lock is taken.
        from precedents.org.ray_build import ray_executor

        executor = ray_executor(ray, location.table_uri, workers=workers)
    report = build(settings, specs, location, workers=workers, executor=executor, progress=progress)
    return report.as_dict()
