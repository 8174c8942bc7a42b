"""`precedents-hook`: Claude Code's UserPromptSubmit / PreToolUse / SessionStart hook client.

Standard library only, and as few modules as possible: Python's own start-up
is most of the hook's time budget (SPEC §7). It reads Claude Code's stdin
JSON, asks the daemon within a 300 ms budget and prints
``{"hookSpecificOutput": {...}}`` or nothing. It always exits 0: a hook that
fails must never block the conversation.

- Prompts shorter than 8 characters are not sent; longer than
  :data:`~precedents.protocol.MAX_PROMPT_CHARS`, only their start is.
- A daemon that is down is started in the background (detached, output to
  nowhere) by the daemon's starter, :mod:`precedents.query_daemon.starter`,
  read only then: at once when the last daemon had become ready (it answered,
  then died); a start that never reached ready holds the next one back for a
  minute; after one that failed on a full disk, as soon as the disk has room.
- A daemon that is starting (issue #21: the one this hook just started, one
  whose ``run/daemon.starting`` mark is there, or one that answers
  "starting") is waited for within the longer first-prompt budget
  (:data:`FIRST_BUDGET_MS`; ``--first-budget-ms``,
  ``PRECEDENTS_FIRST_PROMPT_BUDGET_MS``): the daemon holds the answer until
  its model is loaded (:func:`_ask_waiting`). So the first prompt of a
  session, and SessionStart, which starts the daemon, get their context.
- Stdin is read within the hook's budget (issue #20): a JSON object that has
  arrived is used without waiting for the end of input; a stdin never closed
  and never complete is given up at the budget (``stdin-timeout``), and one over
  :data:`MAX_STDIN_BYTES` is not read on (``bad-input``). Nothing is printed.
- The prompt is never written anywhere: ``logs/hook.log`` gets exactly one
  line per call, with the outcome, byte count, timing and a random request id
  (``rid``, sent to the daemon too, which logs it with its decision: `why`
  joins the two) only. (The line is written by hand: importing
  :mod:`logging` would cost the hook milliseconds on every message; for the
  same reason JSON goes through :mod:`protocol`'s C-level codec.)

Arguments: ``prompt`` (default), ``file`` (PreToolUse of the file tools: the
project's rules scoped to the file, and records that name it) or ``session``
(SessionStart: the rules that always apply and the live ADRs), or
``instructions`` (InstructionsLoaded: a CLAUDE.md or ``.claude/rules`` file
Claude Code loaded itself, passed on so that the daemon does not give it
again; it prints nothing and starts no daemon), and ``--budget-ms N`` and
``--first-budget-ms N``. The mode also follows
``hook_event_name`` on stdin. The session's id (and, for prompts, its
transcript's path) go to the daemon, which gives a record once per session;
the file's path goes to the daemon only.
"""

from __future__ import annotations

import os
import sys
import time

from precedents.protocol import (
    STARTING_MARK,
    DaemonClient,
    Refused,
    Unavailable,
    default_home,
    dumps,
    hook_output,
    loads,
)
from precedents.query_daemon.hook_input import EVENTS_OUT, MAX_PATH_CHARS, request_for

TYPE_CHECKING = False  # typing itself costs the hook milliseconds; mypy knows this name
if TYPE_CHECKING:
    from collections.abc import Callable

    from precedents.protocol import HookAnswer, HookRequest

PROMPT_BUDGET_MS = 300.0
# A daemon still starting is waited for this long from the hook's start. Measured
# here (docs/daemon.md): a cold start is ready in 1.0-1.8 s, 3.0-3.7 s with both
# cores busy; Claude Code's hook timeout (hook/install.py) is set above it.
FIRST_BUDGET_MS = 8000.0
# SessionStart happens once per session and nobody is waiting on a keystroke.
SESSION_BUDGET_MS = 1000.0
LOG_MAX_BYTES = 1_000_000
# Waiting for a starting daemon: how often a socket not yet bound is tried again; how
# long before the hook's deadline the daemon answers "still starting" (so that its
# answer, not a socket timeout, says what happened).
POLL_S = 0.05
ANSWER_MARGIN_S = 0.15
# Stdin past this is no hook input (a 5 MB prompt is fine); reading on would only cost memory.
MAX_STDIN_BYTES = 64 * 1024 * 1024
# However late the hook started, stdin gets at least this long: Claude Code writes it at
# once, but a large one comes in pipe-sized pieces that each need its writer to run.
STDIN_GRACE_S = 0.1

_STARTED = time.perf_counter()


def _log(home: str, **fields: object) -> None:
    """Append one line to ``logs/hook.log``: never the prompt, only what happened."""
    try:
        folder = os.path.join(home, "logs")
        os.makedirs(folder, mode=0o700, exist_ok=True)
        path = os.path.join(folder, "hook.log")
        try:
            if os.stat(path).st_size > LOG_MAX_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        fields["ms"] = round((time.perf_counter() - _STARTED) * 1000, 1)
        line = time.strftime("%Y-%m-%dT%H:%M:%S ") + "INFO precedents.hook: " + dumps(fields)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except OSError:
        pass  # a log that cannot be written must not cost the user anything


def _parse_args(argv: list[str]) -> tuple[str, float | None, float | None]:
    """(mode, ``--budget-ms``, ``--first-budget-ms``); a budget that is no number is None."""
    mode = "prompt"
    budgets: dict[str, float | None] = {"--budget-ms": None, "--first-budget-ms": None}
    it = iter(argv)
    for arg in it:
        if arg in ("prompt", "session", "file", "instructions"):
            mode = arg
        elif arg in budgets:
            try:
                budgets[arg] = float(next(it, ""))
            except ValueError:
                budgets[arg] = None
    return mode, budgets["--budget-ms"], budgets["--first-budget-ms"]


def read_stdin(deadline: float) -> tuple[bytes, str]:
    """Stdin, read until its end, or until a whole JSON object has come, or until
    ``deadline`` (a :func:`time.perf_counter` time): (the bytes, "" or why they are
    not the input: ``stdin-timeout``, ``bad-input`` for over :data:`MAX_STDIN_BYTES`)."""
    stream = sys.stdin
    if stream is None:
        return b"", ""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return stream.buffer.read(MAX_STDIN_BYTES + 1), ""  # not a file: it cannot hang
    if os.name == "nt":
        return _read_stdin_thread(stream, deadline)
    import select

    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            ready, _, _ = select.select([fd], [], [], max(deadline - time.perf_counter(), 0))
        except (OSError, ValueError):
            ready = [fd]  # select cannot watch it (a closed or odd fd): read and see
        if not ready:
            return b"".join(chunks), "stdin-timeout"
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            return b"".join(chunks), ""
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_STDIN_BYTES:
            return b"", "bad-input"
        # The object may be whole while stdin stays open: only then is it parsed early.
        if chunk.rstrip().endswith(b"}") and _whole_object(b"".join(chunks)):
            return b"".join(chunks), ""


def _whole_object(data: bytes) -> bool:
    try:
        return isinstance(loads(data.decode("utf-8")), dict)
    except ValueError:
        return False


def _read_stdin_thread(stream: object, deadline: float) -> tuple[bytes, str]:
    """Windows, where select() cannot watch a pipe: read on a thread, wait till ``deadline``."""
    import threading

    got: list[bytes] = []
    reader = threading.Thread(
        target=lambda: got.append(stream.buffer.read(MAX_STDIN_BYTES + 1)),  # type: ignore[attr-defined]
        daemon=True,
    )
    reader.start()
    reader.join(max(deadline - time.perf_counter(), 0))
    if not got:
        return b"", "stdin-timeout"
    return (b"", "bad-input") if len(got[0]) > MAX_STDIN_BYTES else (got[0], "")


def stdin_deadline(argv: list[str]) -> float:
    """When stdin must have come: the hook's budget from its start, or a short grace
    from now when start-up alone used the budget."""
    mode, budget_ms, _ = _parse_args(argv)
    budget = (budget_ms or SESSION_BUDGET_MS) / 1000 if mode == "session" else _budget(budget_ms)
    return max(_STARTED + budget, time.perf_counter() + STDIN_GRACE_S)


def run(argv: list[str], stdin: bytes, stdin_problem: str = "") -> str | None:
    """The hook's work without the process around it: the line to print, or None.

    Whatever happens, exactly one line goes to ``logs/hook.log``: an outcome,
    and for a failure nobody foresaw, ``error`` with the exception's type (its
    message could quote the prompt).
    """
    mode, budget_ms, first_ms = _parse_args(argv)
    if os.name != "nt":
        os.umask(0o077)  # the log and any state folder it creates are the user's alone
    home = default_home()
    fields: dict[str, object] = {"event": mode, "outcome": "error"}
    try:
        if stdin_problem:
            fields["outcome"] = stdin_problem
            return None
        return _call(home, mode, (budget_ms, first_ms), stdin, fields)
    except Exception as exc:
        fields.update(outcome="error", error=type(exc).__name__)
        return None
    finally:
        _log(home, **fields)


def _cwd(data: dict[str, object]) -> str:
    cwd = data.get("cwd")
    if isinstance(cwd, str) and cwd and len(cwd) <= MAX_PATH_CHARS:
        return cwd
    try:
        return os.getcwd()
    except OSError:  # the hook's own folder was deleted under it
        return os.path.abspath(os.sep)


def _budget(budget_ms: float | None) -> float:
    """The answer budget in seconds: the environment beats the installed ``--budget-ms``
    (a one-off override), which beats the default."""
    env_budget = os.environ.get("PRECEDENTS_HOOK_BUDGET_MS")
    try:
        return float(env_budget or budget_ms or PROMPT_BUDGET_MS) / 1000
    except ValueError:
        return PROMPT_BUDGET_MS / 1000


def _first_budget(first_ms: float | None, warm: float) -> float:
    """The first-prompt budget in seconds, as :func:`_budget` resolves its own; never
    below ``warm``, the budget of a daemon that is up."""
    env_budget = os.environ.get("PRECEDENTS_FIRST_PROMPT_BUDGET_MS")
    try:
        first = float(env_budget or first_ms or FIRST_BUDGET_MS) / 1000
    except ValueError:
        first = FIRST_BUDGET_MS / 1000
    return max(first, warm)


def _left(budget: float) -> float:
    """What is left of ``budget`` seconds counted from the hook's start (start-up included)."""
    return max(budget - (time.perf_counter() - _STARTED), 0.001)


def _ask(
    request: HookRequest, home: str, warm: float, first: float, fields: dict[str, object]
) -> HookAnswer:
    """The daemon's answer: within ``warm`` seconds of the hook's start from a daemon that
    is up; within ``first`` from one that is starting, or down and started here.

    Raises :class:`Unavailable` and :class:`Refused`. Adds ``started_daemon`` to
    ``fields`` when the daemon was down, and ``waited`` when a starting daemon was
    waited for.
    """
    run = os.path.join(home, "run")
    client = DaemonClient(run)
    if not os.path.exists(os.path.join(run, STARTING_MARK)):
        try:
            return client.hook(request, _left(warm))
        except Unavailable as exc:
            if exc.why == "timeout":
                raise
            if exc.why == "down":  # else "starting": wait for it below
                if client.listening(POLL_S):
                    raise  # something answers there, but not as a daemon does
                from precedents.query_daemon.starter import coming_up, start_daemon

                fields["started_daemon"] = start_daemon(home)
                if not fields["started_daemon"] and not coming_up(run):
                    raise
    fields["waited"] = True
    try:
        return _ask_waiting(client, request, lambda: _left(first))
    except Unavailable as exc:
        # A mark left by a daemon that was killed while it loaded: start one now.
        if exc.why != "down" or "started_daemon" in fields or client.listening(POLL_S):
            raise
        from precedents.query_daemon.starter import start_daemon

        fields["started_daemon"] = start_daemon(home)
        if not fields["started_daemon"]:
            raise
        return _ask_waiting(client, request, lambda: _left(first))


def _ask_waiting(
    client: DaemonClient, request: HookRequest, left: Callable[[], float]
) -> HookAnswer:
    """``request``'s answer from a starting daemon within ``left()`` seconds: the daemon
    holds it until its model is loaded (``wait_ms``); while no daemon listens yet and
    one is coming up (:func:`~precedents.query_daemon.starter.coming_up`), asked again.
    Raises :class:`Unavailable`."""
    while True:
        budget = left()
        wait_ms = round(max(budget - ANSWER_MARGIN_S, 0.0) * 1000)
        try:
            return client.hook(request, budget, wait_ms)
        except Unavailable as exc:
            if exc.why != "down" or left() <= POLL_S:
                raise
            from precedents.query_daemon.starter import coming_up

            if not coming_up(client.run):
                raise
        time.sleep(POLL_S)


def _call(
    home: str,
    mode: str,
    budgets_ms: tuple[float | None, float | None],
    stdin: bytes,
    fields: dict[str, object],
) -> str | None:
    """Read the stdin JSON, ask the daemon, fill ``fields`` with what happened."""
    try:
        data = loads(stdin.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and too-deep nesting included
        fields["outcome"] = "bad-input"
        return None
    if not isinstance(data, dict):
        fields["outcome"] = "bad-input"
        return None
    kind, request, outcome = request_for(data, mode, _cwd(data))
    fields["event"] = kind
    if request is None:
        fields["outcome"] = outcome
        return None
    budget_ms, first_ms = budgets_ms
    budget = (budget_ms or SESSION_BUDGET_MS) / 1000 if kind == "session" else _budget(budget_ms)
    # A random id, in this log and the daemon's, joins what it decided with what this
    # hook delivered (`precedents why`); it says nothing about the prompt.
    request["rid"] = fields["rid"] = os.urandom(6).hex()
    if kind == "instructions":
        _tell(home, request, budget, fields)
        return None
    try:
        answer = _ask(request, home, budget, _first_budget(first_ms, budget), fields)
    except Unavailable as exc:  # "starting" included: nothing was searched in time
        fields["outcome"] = exc.why
        return None
    except Refused as exc:
        fields["outcome"] = "error"
        fields["daemon_error"] = exc.error[:40]  # the daemon's words
        return None
    context = answer.get("context")
    if not isinstance(context, str) or not context:
        fields["outcome"] = "none"
        return None
    line = hook_output(context, EVENTS_OUT[kind])
    fields.update(outcome="injected", bytes=len(line.encode("utf-8")) + 1)
    return line


def _tell(home: str, request: HookRequest, budget: float, fields: dict[str, object]) -> None:
    """Pass an InstructionsLoaded event on to a daemon that is up: it answers nothing
    to print, and it is no reason to start one (SessionStart, before it, does)."""
    try:
        DaemonClient(os.path.join(home, "run")).hook(request, _left(budget))
    except Unavailable as exc:
        fields["outcome"] = exc.why
        return
    except Refused as exc:
        fields["outcome"] = "error"
        fields["daemon_error"] = exc.error[:40]
        return
    fields["outcome"] = "recorded"


def main(argv: list[str] | None = None) -> int:
    """Entry point: read stdin, print the hook JSON or nothing, exit 0 whatever happens."""
    try:
        args = sys.argv[1:] if argv is None else argv
        stdin, problem = read_stdin(stdin_deadline(args))
        line = run(args, stdin, problem)
        if line is not None:
            out = sys.stdout.buffer
            out.write(line.encode("utf-8") + b"\n")
            out.flush()
    except BaseException:
        pass
    return 0
