"""`precedents uninstall`: everything precedents put on this machine, gone (issue #29).

In this order, so that nothing removed comes back while the rest is removed:

1. the service units (``service uninstall``): systemd would restart a watcher
   stopped by a signal while its unit is still enabled;
2. the hooks in Claude Code's settings: the user's ``settings.json`` and every
   file ``install-hook`` recorded (hook/installs.py); a hook that runs after
   the daemon is stopped would start it again;
3. the processes of the state folder: every ``run/<role>.lock`` that a process
   holds, with its ``run/<role>.pid`` (the daemon, the watcher, a writer), is
   sent SIGTERM and waited for. The held lock is what proves the pid is still
   the process that wrote it (runlock.py): a stale pid file is never signalled,
   and nothing is killed by name;
4. the caches precedents created outside the state folder: its platform cache
   folder (the model cache, ``~/.cache/precedents`` on Linux) and kingfisher's
   rule cache, which precedents' secret scanner fills (``~/.cache/kingfisher``);
5. the state folder itself (``PRECEDENTS_HOME``), unless ``keep_data``, or
   a process of it did not stop: removed under a live process, it would come
   back in part.

A step that fails is reported (one line) and the others still run: the user
sees everything that is left, and running it again finishes the job.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from precedents import runlock
from precedents.config import CONFIG_FILE, Settings, default_cache_dir, model_cache_dir
from precedents.errors import PrecedentsError, UsageError
from precedents.hook.installs import RECORD_FILE

# How long a process may take to exit after SIGTERM: the daemon closes its store,
# the watcher finishes the file it is writing. Generous; a busy machine is slow.
STOP_WAIT_S = 20.0
# What a state folder holds at its top (Settings' folders, config.toml, the models a
# read-only cache made it build, the hook record): one of them must be there before
# the folder is removed as a whole, so a PRECEDENTS_HOME pointing at a folder of the
# user's own is never emptied.
STATE_MARKS = ("index", "run", "logs", "cache", CONFIG_FILE, "models", RECORD_FILE)
# Where kingfisher's SDK caches the compiled rules (kingfisher_sdk.Rules, default
# cache): beside precedents' own cache folder. Its folder is removed only when
# nothing else is left in it (a kingfisher CLI of the user's may keep more there).
KINGFISHER = ("kingfisher", "rule-cache")


@dataclass
class Removed:
    """One thing `uninstall` removed (or stopped)."""

    what: str  # service | hooks | process | cache | state
    path: str
    line: str  # what the user is told

    def to_json(self) -> dict[str, str]:
        """The ``--json`` shape of one removal."""
        return {"what": self.what, "path": self.path, "line": self.line}


@dataclass
class UninstallResult:
    """What was removed, what could not be (one line each), and what it left on purpose."""

    home: Path
    keep_data: bool
    removed: list[Removed] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether everything was removed (the command's exit status 0)."""
        return not self.failures

    def summary(self) -> str:
        """The last line: how many things went, and what is left."""
        if self.failures:
            return (
                f"precedents uninstall: {len(self.removed)} removed, "
                f"{len(self.failures)} could not be (above); fix them and run it again"
            )
        if not self.removed:
            return "nothing to remove: no precedents process, hook, service unit, cache or data"
        kept = f"; the state folder {self.home} is kept (--keep-data)" if self.keep_data else ""
        return f"precedents uninstalled: {len(self.removed)} removed{kept}"

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape."""
        return {
            "ok": self.ok,
            "home": str(self.home),
            "keep_data": self.keep_data,
            "removed": [r.to_json() for r in self.removed],
            "failures": self.failures,
            "notes": self.notes,
        }


def uninstall(
    settings: Settings,
    *,
    keep_data: bool = False,
    load: bool = True,
    stop_wait_s: float = STOP_WAIT_S,
) -> UninstallResult:
    """Remove everything precedents installed or wrote (see the module's docstring).

    ``load`` False leaves the service manager alone (only the unit files go);
    ``stop_wait_s``: how long each process may take to exit after SIGTERM.
    """
    result = UninstallResult(settings.home, keep_data)
    _services(result, load)
    _hooks(result, settings)
    still_running = _processes(result, settings.run_dir, stop_wait_s)
    _caches(result)
    if still_running and not keep_data:
        # Removed under a live process, the folder would come back in part as it
        # writes (its logs, its pid file): kept, so that the next run removes it whole.
        result.failures.append(f"{settings.home}: kept while a process of it still runs")
    elif not keep_data:
        _state(result, settings.home)
    from precedents.hook.install import plugin_enabled

    if plugin_enabled(settings.claude_dir):
        result.notes.append(
            "the precedents plugin is still enabled in Claude Code, and its hooks start the "
            "daemon again: run `claude plugin uninstall precedents@precedents` now"
        )
    return result


def _services(result: UninstallResult, load: bool) -> None:
    from precedents.service.units import uninstall_service

    try:
        done = uninstall_service(load=load)
    except UsageError:
        return  # no service manager on this platform: `service install` wrote nothing
    except PrecedentsError as exc:
        result.failures.append(str(exc))
        return
    for path in done.files:
        result.removed.append(Removed("service", path, f"removed the service unit {path}"))
    result.notes += [n for n in done.notes if done.files]


def _hooks(result: UninstallResult, settings: Settings) -> None:
    from precedents.hook.install import install, settings_path
    from precedents.hook.installs import recorded

    files = [settings_path(None, settings.claude_dir), *recorded(settings.home)]
    for path in dict.fromkeys(files):
        if not path.exists():
            continue
        try:
            report = install(path, uninstall=True)
        except PrecedentsError as exc:
            result.failures.append(str(exc))
            continue
        if report.action == "uninstalled":
            line = f"removed {report.removed} precedents hook(s) from {path}"
            result.removed.append(Removed("hooks", str(path), line))


def running(run_dir: Path) -> dict[int, list[str]]:
    """The processes that hold a claim in ``run_dir``: pid -> their roles.

    A role counts when its lock is held by another process and its pid file names
    one; a lock we can take ourselves is stale, whatever its pid file says.
    """
    found: dict[int, list[str]] = {}
    if not run_dir.is_dir():
        return found
    for pid_file in sorted(run_dir.glob("*.pid")):
        role = pid_file.stem
        lock_path = run_dir / f"{role}.lock"
        pid = runlock.read_pid(run_dir, role)
        if pid is None or pid == os.getpid() or not lock_path.exists():
            continue
        if not _held(lock_path):
            continue
        found.setdefault(pid, []).append(role)
    return found


def _held(lock_path: Path) -> bool:
    probe = runlock.FileLock(lock_path)
    if probe.acquire():
        probe.release()
        return False
    return True


def _processes(result: UninstallResult, run_dir: Path, wait_s: float) -> bool:
    """Stop every process of ``run_dir``; True when one is still running."""
    left = False
    for pid, roles in running(run_dir).items():
        who = f"the {_named(roles)} (pid {pid})"
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue  # gone between the look and the signal: what was asked
        except OSError as exc:
            result.failures.append(f"{who}: cannot be stopped ({exc.strerror})")
            left = True
            continue
        locks = [run_dir / f"{role}.lock" for role in roles]
        deadline = time.monotonic() + wait_s
        while any(_held(lock) for lock in locks):
            if time.monotonic() > deadline:
                result.failures.append(
                    f"{who} did not exit within {wait_s:g} s of SIGTERM; "
                    f"stop it (kill {pid}) and run `precedents uninstall` again"
                )
                left = True
                break
            time.sleep(0.05)
        else:
            result.removed.append(Removed("process", str(pid), f"stopped {who}"))
    return left


def _named(roles: list[str]) -> str:
    """What the user knows a process as: the watcher also holds the writer's lock
    while it indexes; the writer alone is a `reindex` (or `remember`) running."""
    named = [r for r in roles if r != runlock.WRITER] or ["indexing process (writer)"]
    return " and ".join(named)


def cache_paths() -> list[Path]:
    """The cache folders precedents creates outside its state folder, on this platform."""
    own = default_cache_dir()
    # On Windows precedents' folder is <LOCALAPPDATA>/precedents/cache: two levels down.
    root = own.parent.parent if os.name == "nt" else own.parent
    return [own, root.joinpath(*KINGFISHER)]


def _caches(result: UninstallResult) -> None:
    own, kingfisher = cache_paths()
    _remove_tree(result, own, "cache", "the cache folder")
    if _remove_tree(result, kingfisher, "cache", "kingfisher's rule cache") is not False:
        _rmdir_if_empty(kingfisher.parent)
    models = model_cache_dir()
    if not models.is_relative_to(own):
        _remove_model_files(result, models)


def _remove_model_files(result: UninstallResult, folder: Path) -> None:
    """In a model cache of the user's choosing, only what precedents built or assembled."""
    # The built ONNX models with their locks (models/onnx_embedder.py), and the
    # assembled part-wheel models (models/parts.py): nothing else of the folder.
    from precedents.models.onnx_embedder import FILE_PREFIX
    from precedents.models.parts import PARTED_MODELS

    if not folder.is_dir():
        return
    ours = {m.folder for m in PARTED_MODELS.values()}
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(f"{FILE_PREFIX}-") or entry.name in ours:
            _remove_tree(result, entry, "cache", "the built model")
    _rmdir_if_empty(folder)


def _state(result: UninstallResult, home: Path) -> None:
    if not home.exists():
        return
    if home.is_dir() and not _looks_like_state(home):
        result.failures.append(
            f"{home}: not removed, it does not look like a precedents state folder "
            "(PRECEDENTS_HOME points at it); remove it yourself if it is one"
        )
        return
    _remove_tree(result, home, "state", "the state folder (index, config, logs)")


def _looks_like_state(home: Path) -> bool:
    """Whether ``home`` is a folder precedents made: one of its marks, and not a place
    that holds the user's own things (their home folder, a root, a repository)."""
    resolved = home.resolve()
    user = Path.home().resolve()
    if resolved == user or resolved in user.parents or resolved.parent == resolved:
        return False
    if (home / ".git").exists():
        return False
    return any((home / mark).exists() for mark in STATE_MARKS) or not any(home.iterdir())


def _remove_tree(result: UninstallResult, path: Path, what: str, label: str) -> bool | None:
    """Remove ``path`` (a folder or a file); True when removed, None when absent,
    False (and a failure line) when it could not be."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError as exc:
        where = exc.filename or path
        result.failures.append(f"{path}: not removed ({exc.strerror or exc} on {where})")
        return False
    result.removed.append(Removed(what, str(path), f"removed {label} {path}"))
    return True


def _rmdir_if_empty(folder: Path) -> None:
    # Not empty (someone else's files) or already gone: left as it is.
    with contextlib.suppress(OSError):
        folder.rmdir()
