"""`precedents install-hook`: register the hooks in Claude Code's settings, without the plugin.

The plugin (``plugin/`` in the repository, see docs/plugin.md) is the usual
way; this is for users who do not use plugins. Which file (:func:`settings_path`):
the user's own ``settings.json`` in Claude Code's folder by default; with a
project, that project's ``.claude/settings.local.json`` (not committed); its
committed ``.claude/settings.json`` only when asked for explicitly (``shared``),
since the entries hold this machine's absolute paths.

The hooks (``UserPromptSubmit``, ``PreToolUse`` of the file tools,
``SessionStart``, and ``InstructionsLoaded`` when ``claude --version`` says
2.1.69 or later: an older one drops every hook of a file naming an event it
does not know) run the venv's Python
directly, ``-I -S`` with the launcher script (:mod:`precedents.hook.launch`):
no shell, no console-script wrapper, no site-packages scan on the hot path.

- Exec form (``command`` = the interpreter, ``args`` = the rest) where Claude
  Code supports ``args`` (2.1.139 and later, or when its version is unknown);
  a quoted shell-form ``command`` for older versions.
- Merges with what is there: other hooks, other settings and their order are
  kept; our entries are recognised by the launcher path and replaced, never
  duplicated. ``uninstall`` removes exactly those entries (and the groups and
  event lists that only held them).
- A settings.json that is not valid JSON, or whose ``hooks`` is not the shape
  Claude Code uses, is reported and left untouched.
- ``http_url`` (``install-hook --http``): UserPromptSubmit becomes a
  ``"type": "http"`` hook POSTing to the daemon (Claude Code 2.1.63 and later;
  refused otherwise). Its token header names ``$PRECEDENTS_HTTP_TOKEN`` and
  lists it in ``allowedEnvVars``: the secret itself is never written into a
  settings file. SessionStart stays a command hook: Claude Code skips HTTP
  hooks for SessionStart (checked in 2.1.332), and that hook is also what
  starts the daemon when it is down. Our http entries are recognised by their
  token header, so switching forms replaces the old entries.

:func:`install_hook` is the whole command (``api.install_hook``): which file,
the budgets and the http setup from the settings, and what to tell the user.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precedents.config import HTTP_TOKEN_ENV
from precedents.errors import UsageError
from precedents.hook.installs import record

if TYPE_CHECKING:
    from precedents.config import Settings

EVENTS = {
    "UserPromptSubmit": "prompt",
    "SessionStart": "session",
    "PreToolUse": "file",
    "InstructionsLoaded": "instructions",
}
# The tools that touch one file (docs/rules.md): their PreToolUse gets the file's rules.
FILE_TOOLS = "Read|Edit|MultiEdit|Write|NotebookEdit"
# The instruction files Claude Code loads during a session (a file read in scope); those
# it loads at start are never given by the file hook anyway: no process for each.
LOADED_REASONS = "path_glob_match|nested_traversal"
MATCHERS = {"PreToolUse": FILE_TOOLS, "InstructionsLoaded": LOADED_REASONS}
# Events only some versions have: InstructionsLoaded came in 2.1.69. An older Claude Code
# ignores every hook of a settings file that names an event it does not know (measured
# with 2.1.50), so it is installed only when `claude --version` says 2.1.69 or later.
EVENTS_SINCE = {"InstructionsLoaded": (2, 1, 69)}
TIMEOUT_S = 5
# Claude Code's timeout is this much above the hook's first-prompt budget (the longest
# a hook waits, for a daemon that is starting): the interpreter's start and the print.
TIMEOUT_MARGIN_S = 2
ARGS_SINCE = (2, 1, 139)
# Claude Code's changelog: "Added HTTP hooks" in 2.1.63.
HTTP_SINCE = (2, 1, 63)
LAUNCHER_MARK = "precedents/hook/launch.py"
# Kept equal to query_daemon.http's (the hook package imports no daemon module).
TOKEN_HEADER = "X-Precedents-Token"
TOKEN_ENV = HTTP_TOKEN_ENV  # one spelling: config.py


def launcher_path() -> Path:
    """The launcher script next to this module."""
    return Path(__file__).resolve().with_name("launch.py")


def claude_version(claude: str | None = None) -> tuple[int, ...] | None:
    """Claude Code's version from ``claude --version``, or None when it cannot be told."""
    exe = claude or shutil.which("claude")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(g) for g in match.groups()) if match else None


def hook_timeout(first_budget_ms: float | None = None) -> int:
    """Claude Code's timeout for our hooks, in whole seconds: above the first-prompt budget."""
    from precedents.hook.core import FIRST_BUDGET_MS

    first = FIRST_BUDGET_MS if first_budget_ms is None else first_budget_ms
    return max(TIMEOUT_S, math.ceil(first / 1000) + TIMEOUT_MARGIN_S)


def hook_entry(
    mode: str,
    *,
    python: str,
    exec_form: bool,
    budget_ms: float | None = None,
    first_budget_ms: float | None = None,
) -> dict[str, Any]:
    """One hook handler for Claude Code: the interpreter, ``-I -S``, the launcher, ``mode``.

    ``budget_ms`` and ``first_budget_ms`` (the ``hook_budget_ms`` and
    ``first_prompt_budget_ms`` settings, when not the defaults) are passed on
    the command line: the hook does not read the config file.
    """
    args = ["-I", "-S", str(launcher_path()), mode]
    if budget_ms is not None:
        args += ["--budget-ms", f"{budget_ms:g}"]
    if first_budget_ms is not None:
        args += ["--first-budget-ms", f"{first_budget_ms:g}"]
    timeout = hook_timeout(first_budget_ms)
    if exec_form:
        return {"type": "command", "command": python, "args": args, "timeout": timeout}
    command = " ".join(shlex.quote(a) for a in [python, *args])
    return {"type": "command", "command": command, "timeout": timeout}


def http_entry(url: str) -> dict[str, Any]:
    """The ``"type": "http"`` handler: the token comes from the environment, never literally."""
    return {
        "type": "http",
        "url": url,
        "timeout": TIMEOUT_S,
        "headers": {TOKEN_HEADER: f"${TOKEN_ENV}"},
        "allowedEnvVars": [TOKEN_ENV],
    }


def is_ours(handler: Any) -> bool:
    """Whether a hook handler is one precedents installed (by the launcher or token header)."""
    if not isinstance(handler, dict):
        return False
    headers = handler.get("headers")
    if handler.get("type") == "http" and isinstance(headers, dict):
        return TOKEN_HEADER.lower() in (str(k).lower() for k in headers)
    parts = [handler.get("command", "")]
    args = handler.get("args")
    if isinstance(args, list):
        parts += args
    text = " ".join(str(p) for p in parts).replace("\\", "/")
    return LAUNCHER_MARK in text or "precedents-hook" in text


@dataclass
class InstallReport:
    """What ``install`` did to one settings file."""

    path: Path
    action: str  # "installed" | "unchanged" | "uninstalled" | "absent"
    exec_form: bool = True
    removed: int = 0
    added: list[str] = field(default_factory=list)
    http: bool = False

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape."""
        return {
            "path": str(self.path),
            "action": self.action,
            "exec_form": self.exec_form,
            "removed": self.removed,
            "added": self.added,
            "http": self.http,
        }


def settings_path(project: Path | None, claude_dir: Path, *, shared: bool = False) -> Path:
    """Which settings file: the user's own, or a project's local (or, ``shared``, committed) one.

    - no ``project``, not ``shared``: ``<claude_dir>/settings.json``;
    - ``project``: ``<project>/.claude/settings.local.json``;
    - ``shared``: ``<project or here>/.claude/settings.json``.
    """
    if project is None and not shared:
        return claude_dir / "settings.json"
    root = (project or Path.cwd()).expanduser().resolve()
    if not root.is_dir():
        raise UsageError(f"{root}: no such folder")
    return root / ".claude" / ("settings.json" if shared else "settings.local.json")


def plugin_enabled(claude_dir: Path) -> bool:
    """Whether the user's settings enable the precedents plugin (its hooks would run twice)."""
    try:
        data = json.loads((claude_dir / "settings.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    enabled = data.get("enabledPlugins") if isinstance(data, dict) else None
    if not isinstance(enabled, dict):
        return False
    return any(str(k).startswith("precedents@") and v for k, v in enabled.items())


def has_ours(path: Path) -> bool:
    """Whether the settings file ``path`` holds precedents hooks (False when unreadable)."""
    try:
        hooks = json.loads(path.read_text(encoding="utf-8")).get("hooks", {})
        return any(
            is_ours(h) for groups in hooks.values() for g in groups for h in g.get("hooks", [])
        )
    except (OSError, ValueError, AttributeError, TypeError):
        return False


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise UsageError(f"{path}: cannot read ({exc.strerror}); left untouched") from None
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc}); left untouched") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a JSON object; left untouched")
    hooks = data.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise UsageError(f"{path}: `hooks` is not a table of event lists; left untouched")
    return data


def _strip_ours(hooks: dict[str, Any]) -> int:
    """Remove our handlers from every event; returns how many went."""
    removed = 0
    for event in list(hooks):
        groups = hooks[event]
        kept_groups = []
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                kept_groups.append(group)
                continue
            handlers = group["hooks"]
            kept = [h for h in handlers if not is_ours(h)]
            removed += len(handlers) - len(kept)
            if kept or not handlers:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    return removed


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".precedents-tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def install(
    path: Path,
    *,
    python: str | None = None,
    exec_form: bool | None = None,
    uninstall: bool = False,
    claude: str | None = None,
    budget_ms: float | None = None,
    http_url: str | None = None,
    first_budget_ms: float | None = None,
) -> InstallReport:
    """Add (or with ``uninstall`` remove) precedents' hooks in the settings file ``path``.

    ``exec_form`` None asks ``claude --version`` (``claude``: which executable,
    default the one on PATH): exec form from 2.1.139 on or when the version is
    unknown, shell form before. ``http_url``: UserPromptSubmit as an http hook
    to that URL; refused (:class:`UsageError`) unless ``claude --version`` says
    2.1.63 or later.
    """
    version = check_http_support(claude) if http_url is not None and not uninstall else None
    data = _read(path)
    before = json.dumps(data, sort_keys=True)
    hooks: dict[str, Any] = dict(data.get("hooks", {}))
    removed = _strip_ours(hooks)
    if uninstall:
        if not removed:
            return InstallReport(path, "absent")
        if hooks:
            data["hooks"] = hooks
        else:
            data.pop("hooks", None)
        _write(path, data)
        return InstallReport(path, "uninstalled", removed=removed)
    version = version or claude_version(claude)
    if exec_form is None:
        exec_form = version is None or version >= ARGS_SINCE
    interpreter = python or sys.executable
    added = []
    for event, mode in EVENTS.items():
        if event in EVENTS_SINCE and (version is None or version < EVENTS_SINCE[event]):
            continue  # a Claude Code without this event would drop every hook of the file
        if http_url is not None and mode == "prompt":
            entry = http_entry(http_url)
        else:
            entry = hook_entry(
                mode,
                python=interpreter,
                exec_form=exec_form,
                budget_ms=budget_ms if mode != "session" else None,
                first_budget_ms=first_budget_ms,
            )
        group: dict[str, Any] = {"hooks": [entry]}
        if event in MATCHERS:
            group = {"matcher": MATCHERS[event], **group}
        hooks.setdefault(event, []).append(group)
        added.append(event)
    data["hooks"] = hooks
    http = http_url is not None
    if json.dumps(data, sort_keys=True) == before:
        return InstallReport(path, "unchanged", exec_form, removed, [], http)
    _write(path, data)
    return InstallReport(path, "installed", exec_form, removed, added, http)


def check_http_support(claude: str | None = None) -> tuple[int, ...]:
    """Claude Code's version when it takes http hooks; else a one-line :class:`UsageError`."""
    version = claude_version(claude)
    need = ".".join(map(str, HTTP_SINCE))
    if version is None:
        raise UsageError(
            f"--http: cannot tell Claude Code's version (`claude --version`); "
            f"http hooks need {need} or later"
        )
    if version < HTTP_SINCE:
        raise UsageError(
            f"--http: Claude Code {'.'.join(map(str, version))} has no http hooks "
            f"(they need {need} or later); install without --http"
        )
    return version


@dataclass
class HookSetup:
    """What `install-hook` did: the settings file's report, and what to tell the user."""

    settings: Settings
    report: InstallReport
    warnings: list[str]  # first, on stderr: hooks that would run twice
    url: str | None = None  # the http hook's URL, when installed as one

    def message(self) -> str:
        """The one line that says what was done."""
        report, path = self.report, self.report.path
        kind = "http" if report.http else "exec" if report.exec_form else "shell"
        return {
            "installed": f"hooks registered in {path} ({kind} form)",
            "unchanged": f"hooks already registered in {path}",
            "uninstalled": f"removed {report.removed} precedents hook(s) from {path}",
            "absent": f"no precedents hooks in {path}",
        }[report.action]

    def http_notes(self) -> list[str]:
        """What the user still has to do for the http hook: the token in Claude Code's
        environment, a daemon restart. Looked up when asked (it probes the port)."""
        if self.url is None:
            return []
        import socket

        from precedents.config import HTTP_TOKEN_ENV, exported_http_token
        from precedents.query_daemon.http import ensure_secret, secret_path
        from precedents.query_daemon.presence import status as server_status

        home, notes = self.settings.home, []
        if exported_http_token() != ensure_secret(home):
            notes.append(
                f"note: Claude Code must see {HTTP_TOKEN_ENV}; add to your shell profile "
                f'(the secret stays in its 0600 file): export {HTTP_TOKEN_ENV}="$(cat '
                f'{shlex.quote(str(secret_path(home)))})"'
            )
        port = int(self.url.rsplit(":", 1)[1].split("/", 1)[0])
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.settimeout(0.5)
            listening = probe.connect_ex(("127.0.0.1", port)) == 0
        if not listening and server_status(self.settings.run_dir)["running"]:
            notes.append(
                "note: the running daemon has no HTTP listener yet; restart it "
                "(`precedents serve --stop`; the next session's hook starts it again)"
            )
        return notes


def install_hook(
    settings: Settings,
    *,
    project: Path | None = None,
    shared: bool = False,
    uninstall: bool = False,
    form: str = "auto",
    http: bool = False,
) -> HookSetup:
    """`install-hook`: the hooks in the settings file :func:`settings_path` picks, with the
    budgets the settings hold (only those other than the hook's defaults go into its
    arguments); ``form``: auto (ask ``claude --version``), exec or shell; ``http``: the
    prompt hook as an http hook to the daemon (``http_port`` picked and recorded in
    config.toml when unset, the secret created when missing)."""
    from precedents.hook.core import FIRST_BUDGET_MS, PROMPT_BUDGET_MS

    path = settings_path(project, settings.claude_dir, shared=shared)
    budget, first = settings.hook_budget_ms, settings.first_prompt_budget_ms
    url = None
    if http and not uninstall:
        check_http_support()  # before anything is written
        url = _http_setup(settings)
    report = install(
        path,
        uninstall=uninstall,
        exec_form=None if form == "auto" else form == "exec",
        budget_ms=None if budget == PROMPT_BUDGET_MS else budget,
        http_url=url,
        first_budget_ms=None if first == FIRST_BUDGET_MS else first,
    )
    # Remembered for `precedents uninstall`, which cannot find a project's file otherwise.
    record(settings.home, path, present=report.action in ("installed", "unchanged"))
    warnings = []
    if report.action == "installed" and plugin_enabled(settings.claude_dir):
        warnings.append(
            "note: the precedents plugin is enabled too; its hooks and these would both run "
            "(keep one: `precedents install-hook --uninstall` or `/plugin disable precedents`)"
        )
    committed = path.with_name("settings.json")
    if report.action == "installed" and committed != path and has_ours(committed):
        warnings.append(
            f"note: {committed} still holds precedents hooks from an earlier install "
            "(remove them: `precedents install-hook --project DIR --shared --uninstall`)"
        )
    return HookSetup(settings, report, warnings, url)


def _http_setup(settings: Settings) -> str:
    """The http hook's URL: ``http_port`` (picked and recorded in config.toml when unset);
    the per-install secret is created if missing."""
    from precedents.config import CONFIG_FILE, record_http_port
    from precedents.query_daemon.http import ensure_secret, hook_url, pick_port

    port = settings.http_port
    if not port:
        port = pick_port()
        record_http_port(settings.home / CONFIG_FILE, port)
    ensure_secret(settings.home)
    return hook_url(port)
