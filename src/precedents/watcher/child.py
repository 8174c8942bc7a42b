"""The watcher's store side in a child process.

Why (issue #28): the watcher runs all day. Holding the model (~125 MiB) and
LanceDB with pyarrow (~145 MiB) it rested at ~470 MiB, and a pull of 5,000
notes grew it to ~980 MiB that glibc never gave back. Here the watcher keeps
only its observers and debouncer (~70 MiB); every job that reads or writes the
store runs in a child started on the first job, which exits when it has been
idle ``IDLE_S`` seconds, or after a job that left it above ``RECYCLE_MIB`` (the
next job starts a fresh one): a big pull is indexed in bounded memory, and what
it cost goes back to the system when it ends.

The child embeds at background priority (:data:`precedents.ingest.background.BACKGROUND_NICE`,
from its first batch on, as the watcher's worker did) and runs in a session of
its own, so a terminal's Ctrl-C reaches the watcher alone, which then stops the
child: SIGTERM makes the child stop between two batches, like
the in-process worker did; a watcher killed outright leaves it reading an
end of file, and it exits after its job. The child takes the store's writer lock
for each write, as every writer does.

Messages: length-prefixed pickles of :class:`Job` (watcher -> child) and of
:class:`Reply` (child -> watcher) over the child's stdin and stdout, between two
processes of the same installed code and the same user. The child's stderr is
the watcher's: its log lines appear where the watcher's do.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from types import FrameType
from typing import IO, Any, Final

from precedents.config import Settings
from precedents.errors import PrecedentsError
from precedents.ingest.background import release_memory
from precedents.secrets.mask import mask_secrets
from precedents.watcher.side import InlineSide, Interrupted, Outcome, open_side

log = logging.getLogger("precedents.watcher")

# A child with nothing to do for this long exits (a save after it costs a start: ~2.5
# s); the watcher passes the settings' `watch_idle_s`.
IDLE_S: Final = 900.0
# A child above this after a job is replaced before the next (LanceDB's write path and
# glibc keep what a big pull's batches used; a fresh process starts at ~350 MiB).
RECYCLE_MIB: Final = 600
_HEADER = struct.Struct("!I")
_ENTRY: Final = "import sys; from precedents.watcher.child import main; sys.exit(main())"
_JOBS: Final = frozenset(
    {"reconcile", "heads", "apply", "read_commits", "drop_under", "files_under", "preload"}
)


class IndexingChildError(PrecedentsError):
    """The indexing child process could not be started or ended without answering."""


@dataclass(frozen=True)
class Job:
    """One job for the child: a :class:`~precedents.watcher.side.Side` method and its
    arguments (the first job is ``init`` with the settings)."""

    op: str
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Reply:
    """The child's answer: ``ok`` with the job's value, ``interrupted`` (stopping), or
    ``failed`` with a message that is safe to log (ours, or an exception's type)."""

    status: str
    value: Any = None
    message: str = ""
    rss_mib: float = 0.0
    recycle: bool = False


def send(stream: IO[bytes], message: Job | Reply) -> None:
    """Write one message."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    """Read one message; None at end of file."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        return None
    return pickle.loads(data)


def rss_mib() -> float:
    """This process's resident memory (VmRSS), MiB; 0 where /proc is not there."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


# -- the watcher's end -------------------------------------------------------------


class ChildSide:
    """The store side's jobs, run in a child process (started on demand, one job at a
    time). Its methods are :class:`~precedents.watcher.side.Side`'s."""

    def __init__(
        self,
        settings: Settings,
        stopping: threading.Event,
        idle_s: float = IDLE_S,
        recycle_mib: float = RECYCLE_MIB,
    ) -> None:
        """``stopping``: the watcher's; set, a job cut off raises :class:`Interrupted`."""
        self.settings = settings
        self.idle_s = idle_s
        self.recycle_mib = recycle_mib
        self.started = 0  # children started so far (the tests and the bench read it)
        self.peak_mib = 0.0  # the highest VmRSS a child reported after a job
        self._stopping = stopping
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # one job at a time
        self._last = time.monotonic()
        self._closed = False
        self._warming = threading.Event()

    @property
    def pid(self) -> int | None:
        """The running child's pid (None when none runs)."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def reconcile(self, sources: Any, walked: Any) -> Outcome:
        """See :meth:`InlineSide.reconcile`."""
        return self._outcome("reconcile", sources, walked)

    def heads(self, sources: Any, paths: list[str], arriving: bool) -> Outcome:
        """See :meth:`InlineSide.heads`."""
        return self._outcome("heads", sources, paths, arriving)

    def apply(self, sources: Any, paths: list[str]) -> Outcome:
        """See :meth:`InlineSide.apply`."""
        return self._outcome("apply", sources, paths)

    def read_commits(self, sources: Any, only: Any) -> Outcome:
        """See :meth:`InlineSide.read_commits`."""
        return self._outcome("read_commits", sources, only)

    def drop_under(self, root: str) -> Outcome:
        """See :meth:`InlineSide.drop_under`."""
        return self._outcome("drop_under", root)

    def files_under(self, sources: Any, folder: str) -> list[str]:
        """See :meth:`InlineSide.files_under`."""
        return list(self._call("files_under", sources, folder))

    def preload(self) -> None:
        """Start the child and load its model (the first saved note must not wait)."""
        try:
            self._call("preload")
        except Interrupted:
            pass
        except PrecedentsError as exc:
            log.warning("%s", exc)

    def warm(self) -> None:
        """Start a child in the background when none runs: called at a file's first
        event, so that its start overlaps the quiet period the file waits anyway."""
        if self._proc is not None or self._closed or self._warming.is_set():
            return
        self._warming.set()

        def run() -> None:
            try:
                self.preload()
            finally:
                self._warming.clear()

        threading.Thread(target=run, name="child-start", daemon=True).start()

    def idle(self) -> None:
        """End the child when it has had nothing to do for ``idle_s``."""
        if self._proc is None or time.monotonic() - self._last < self.idle_s:
            return
        if self._lock.acquire(blocking=False):
            try:
                if time.monotonic() - self._last >= self.idle_s:
                    self._end("idle")
            finally:
                self._lock.release()

    def until_idle(self) -> float:
        """Seconds until :meth:`idle` would end the running child (inf when none runs)."""
        if self._proc is None:
            return float("inf")
        return max(0.0, self.idle_s - (time.monotonic() - self._last))

    def close(self, timeout_s: float) -> None:
        """Stop the child: SIGTERM (it stops between two batches), then SIGKILL."""
        self._closed = True
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            try:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                log.warning("the indexing process did not stop within %.0f s", timeout_s)
                proc.kill()
                proc.wait()
            except OSError:
                pass
        with self._lock:
            self._reap()

    # -- one job -----------------------------------------------------------------

    def _outcome(self, op: str, *args: Any) -> Outcome:
        value = self._call(op, *args)
        assert isinstance(value, Outcome), value
        return value

    def _call(self, op: str, *args: Any) -> Any:
        with self._lock:
            if self._closed or self._stopping.is_set():
                raise Interrupted
            proc = self._start()
            assert proc.stdin is not None and proc.stdout is not None
            try:
                send(proc.stdin, Job(op, args))
                reply = receive(proc.stdout)
            except (OSError, ValueError):
                reply = None
            self._last = time.monotonic()
            if reply is None:
                return self._lost(proc)
            assert isinstance(reply, Reply), type(reply)
            self.peak_mib = max(self.peak_mib, reply.rss_mib)
            if reply.recycle:
                self._end(f"{reply.rss_mib:.0f} MiB after its job")
            if reply.status == "interrupted":
                if self._stopping.is_set() or self._closed:
                    raise Interrupted
                # Someone else stopped the child (a SIGTERM of its own): the watcher goes
                # on, and the next job starts a fresh child (the files are still due).
                self._end("stopped from outside")
                raise IndexingChildError("the indexing process was stopped during a job")
            if reply.status == "failed":
                raise IndexingChildError(reply.message)
            return reply.value

    def _start(self) -> subprocess.Popen[bytes]:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            return proc
        self._reap()
        try:
            proc = subprocess.Popen(
                # -P: no working directory on sys.path (a cloned repository's own
                # `precedents/` is not our code); the module imported, not run as
                # __main__, so that the messages' classes are the watcher's.
                [sys.executable, "-P", "-c", _ENTRY],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                start_new_session=True,  # a terminal's Ctrl-C is the watcher's to handle
                close_fds=True,
            )
        except OSError as exc:
            raise IndexingChildError(f"could not start the indexing process: {exc}") from exc
        self._proc = proc
        self.started += 1
        assert proc.stdin is not None and proc.stdout is not None
        try:
            send(proc.stdin, Job("init", (self.settings, self.recycle_mib)))
            reply = receive(proc.stdout)
        except (OSError, ValueError):
            reply = None
        if reply is None:
            self._lost(proc)
        if isinstance(reply, Reply) and reply.status == "failed":
            self._end("its start failed")
            raise IndexingChildError(reply.message)
        log.debug("indexing process %d started", proc.pid)
        return proc

    def _lost(self, proc: subprocess.Popen[bytes]) -> Any:
        """The child ended without an answer: stopping, or it died (killed, out of memory)."""
        code = proc.wait()
        self._reap()
        if self._stopping.is_set() or self._closed:
            raise Interrupted
        raise IndexingChildError(f"the indexing process ended without an answer (exit {code})")

    def _end(self, why: str) -> None:
        """End the child after its job (the caller holds the lock): its stdin closed, it
        exits; killed if it does not within a few seconds."""
        proc = self._proc
        if proc is None:
            return
        log.debug("ending indexing process %d (%s)", proc.pid, why)
        try:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        except OSError:
            pass
        self._reap()

    def _reap(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# -- the child's end ---------------------------------------------------------------


def _serve(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    stop = threading.Event()
    busy = threading.Event()

    def on_term(signum: int, frame: FrameType | None) -> None:
        stop.set()
        if not busy.is_set():
            raise SystemExit(0)  # waiting for a job: nothing to finish

    def check() -> None:
        if stop.is_set():
            raise Interrupted

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the watcher decides when to stop
    first = receive(stdin)
    if not isinstance(first, Job) or first.op != "init":
        return 2
    settings, recycle_mib = first.args
    assert isinstance(settings, Settings)
    busy.set()
    # The secret scanner's rules (~0.5 s to build) beside LanceDB's import (~1.3 s): a
    # save after the child ended waits for both (issue #28).
    scanner = threading.Thread(target=mask_secrets, args=("warm",), name="scanner", daemon=True)
    scanner.start()
    try:
        side = open_side(settings, check)
    except Exception as exc:
        send(stdout, Reply("failed", message=_message(exc)))
        return 1
    # The model loads beside the first job's reading (a save after the child ended waits
    # for a fresh child: its start is the save's latency, issue #28).
    loader = threading.Thread(target=side.preload, name="model-load", daemon=True)
    loader.start()
    try:
        send(stdout, Reply("ok", rss_mib=rss_mib()))
        return _jobs(side, stdin, stdout, stop, busy, recycle_mib)
    finally:
        # ONNX Runtime aborts the process if the interpreter tears down under its start.
        loader.join()


def _jobs(
    side: InlineSide,
    stdin: IO[bytes],
    stdout: IO[bytes],
    stop: threading.Event,
    busy: threading.Event,
    recycle_mib: float,
) -> int:
    while not stop.is_set():
        busy.clear()
        job = receive(stdin)
        busy.set()
        if job is None or not isinstance(job, Job):
            return 0  # the watcher closed our stdin (idle, recycled) or is gone
        if job.op not in _JOBS:
            send(stdout, Reply("failed", message=f"unknown job {job.op!r}"))
            continue
        reply = _run(side, job, stop)
        release_memory()
        rss = rss_mib()
        send(stdout, Reply(reply.status, reply.value, reply.message, rss, rss > recycle_mib))
    return 0


def _run(side: InlineSide, job: Job, stop: threading.Event) -> Reply:
    if stop.is_set():
        return Reply("interrupted")
    try:
        value = getattr(side, job.op)(*job.args)
    except Interrupted:
        return Reply("interrupted")
    except Exception as exc:  # the watcher logs it and backs off, as for its own jobs
        return Reply("failed", message=_message(exc))
    return Reply("ok", value)


def _message(exc: BaseException) -> str:
    """Only our own errors' messages: another library's could quote the text it choked on."""
    return str(exc) if isinstance(exc, PrecedentsError) else type(exc).__name__


def configure_logging() -> None:
    """INFO from precedents to stderr (a handler only if nobody has set one up): the
    watcher's entry points (watcher/foreground.py) and its child alike."""
    logger = logging.getLogger("precedents")
    logger.setLevel(logging.INFO)
    if not logging.getLogger().handlers and not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)


def main() -> int:
    """Serve the watcher's jobs on stdin/stdout until it closes stdin or sends SIGTERM."""
    configure_logging()
    # No lower priority for the whole child: its start (LanceDB's import, the store, the
    # secret scanner) is what a save waits for, and at nice 10 on a busy machine it took
    # ten times as long. Embedding is background work as it was in the watcher: the
    # thread that embeds lowers itself at its first batch, and the model's threads are
    # born lowered (watcher/embcache.py).
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    # Nothing else may write to the message pipe: a print would corrupt a frame.
    sys.stdout = sys.stderr
    try:
        return _serve(stdin, stdout)
    except (BrokenPipeError, ConnectionResetError):
        # The watcher is gone (killed outright): nobody to answer. The pipe's buffer
        # must not fail again when the interpreter closes it.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        return 0
