"""`precedents serve`: the resident daemon behind the hook.

Lifecycle:
- One daemon per state directory: an exclusive lock on ``run/daemon.lock``
  (``flock``; Windows ``msvcrt.locking``). The OS releases it when the process
  dies in any way, so holding the lock proves any socket or pid file left in
  ``run/`` is stale, and it is replaced. A second daemon fails with
  :class:`DaemonRunning`.
- The socket is bound *before* the model loads (1-4 s): a hook asking then gets
  a quick empty answer instead of "down", so it does not start a second daemon;
  one that sends ``wait_ms`` (a hook within its first-prompt budget, issue
  #21) gets its answer the moment the model is loaded. From taking the lock
  until then, ``run/daemon.starting`` tells a hook to wait that long.
  A socket file removed or replaced while the daemon runs is noticed within
  ``ACCEPT_POLL_S`` and recreated at the same path; a lost lock file (the
  ``run/`` folder deleted) makes the daemon exit, so that a new one can start.
- Only processes of the daemon's own uid are served (``SO_PEERCRED`` on
  Linux, ``LOCAL_PEERCRED`` on macOS/FreeBSD), besides the 0700 folder.
- Questions are handled on a thread pool; embeddings are batched by one
  worker (see :mod:`recall`). A refresher thread reloads the vectors within
  ``REFRESH_S`` of the watcher's commits.
- Exits after ``idle_timeout_s`` without a question, counted from when it is
  ready (a slow model load is not idleness), on SIGTERM/SIGINT/SIGHUP, or on
  an error, and always removes its socket and pid file on the way out.
- A full disk (issue #20) at start or while loading is one :class:`DiskFull`
  line, never a traceback: the log gets it if it has room; an empty
  ``run/daemon.disk-full`` mark (a name, no data: it fits where a line does
  not) has the next daemon log that it happened; and the starter's spawn stamp is
  dated back, so that the hook starts a daemon as soon as there is room again,
  not a minute later. A log line that cannot be written is dropped silently.
- Once loaded it dates the spawn stamp back too (:mod:`.starter`): a daemon that
  was ready and then died is started again by the next hook, at once.

Transport: a UNIX socket in the 0700 ``run/`` folder; on Windows TCP on
127.0.0.1 with a shared secret in a user-only file and an HMAC answer tag
(:mod:`protocol`). ``transport="tcp"`` forces the latter (tests use it here).
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import secrets
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from precedents import protocol, runlock
from precedents.config import Settings
from precedents.errors import DiskFull, PrecedentsError, UsageError, is_disk_full
from precedents.protocol import (
    DAEMON_ROLE,
    PORT_NAME,
    PROTOCOL_VERSION,
    SECRET_NAME,
    SOCKET_NAME,
    STARTING_MARK,
)
from precedents.query_daemon.logs import configure_logging as configure_logging  # entry points
from precedents.query_daemon.logs import note_disk_full, note_earlier_disk_full
from precedents.query_daemon.ops import Answers, Given, Reply
from precedents.query_daemon.org_pull import OrgPulls
from precedents.query_daemon.presence import peer_uid
from precedents.query_daemon.projects import FirstSessions
from precedents.query_daemon.starter import allow_respawn

if TYPE_CHECKING:
    from precedents.recall.core import Recall

log = logging.getLogger("precedents.daemon")

REFRESH_S = 0.25
# How often the accept loop looks at the clock and at its socket file: the
# longest a removed socket stays missing.
ACCEPT_POLL_S = 0.5
CLIENT_TIMEOUT_S = 10.0
WORKERS = 16
# A model and index still loading after this long (or after the idle timeout,
# if longer) are stuck: exit rather than answer "starting" for ever.
LOAD_LIMIT_S = 600.0
# How long a stop waits for a model still loading (see _serve).
LOADER_JOIN_S = 30.0
# The socket is bound here and renamed into place, so that it appears whole
# (never a moment with a socket file nobody listens on, or none at all). No
# longer than SOCKET_NAME: a UNIX socket path has ~104 bytes.
BIND_NAME = "daemon.new"


class DaemonRunning(UsageError):
    """Another daemon already serves this state directory."""


def _file_id(path: Path) -> tuple[int, int, bool] | None:
    """What identifies the file at ``path``: device, inode, whether it is a socket."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, stat.S_ISSOCK(st.st_mode)


class Daemon(Answers):
    """One running daemon: socket, lock, pid file, the recall engine and its threads."""

    def __init__(
        self,
        settings: Settings,
        *,
        idle_timeout_s: float | None = None,
        transport: str | None = None,
        recall_factory: Callable[[Settings], Recall] | None = None,
    ) -> None:
        self.settings = settings
        self.idle_timeout_s = settings.idle_timeout_s if idle_timeout_s is None else idle_timeout_s
        self.transport = transport or ("tcp" if protocol.USE_TCP else "unix")
        self.run = settings.run_dir
        self._recall_factory = recall_factory
        self.recall: Recall | None = None
        self._stop = threading.Event()
        # Set once the load is over, done or failed, or the daemon stops: waiters go on.
        self._loaded = threading.Event()
        self._started = time.monotonic()
        self._last_question = self._started  # set again when ready: loading is not idleness
        self._claimed = runlock.Claim(self.run, DAEMON_ROLE)
        self._lock_id: tuple[int, int, bool] | None = None
        self._sock: socket.socket | None = None
        self._sock_id: tuple[int, int, bool] | None = None
        self._uid = os.geteuid() if hasattr(os, "geteuid") else None
        self._secret: bytes | None = None
        self._owned: list[Path] = []
        self._http: Any = None  # the HTTP hook listener (query_daemon.http), when configured
        # The projects the hooks come from, taken on at their first session (issue #29).
        self.first_sessions = FirstSessions(settings, self._stop)
        self.org_pulls = OrgPulls(settings, self._stop)  # the org index, in the background
        self.stop_reason = ""

    # -- start and stop ------------------------------------------------------------

    def _claim(self) -> None:
        if not self._claimed.acquire():
            pid = self._claimed.holder()
            raise DaemonRunning(
                f"a daemon is already running for {self.settings.home}"
                + (f" (pid {pid})" if pid else "")
            )
        self._lock_id = _file_id(self.run / f"{DAEMON_ROLE}.lock")
        for name in (SOCKET_NAME, PORT_NAME, SECRET_NAME, BIND_NAME):
            stale = self.run / name
            if stale.exists() or stale.is_symlink():
                log.info("removing stale %s left by a daemon that died", name)
                stale.unlink(missing_ok=True)
        mark = self.run / STARTING_MARK
        try:
            mark.touch()
            self._owned.append(mark)
        except OSError:
            pass  # only a hint: a hook then learns "starting" from the answer instead

    def _bind(self) -> None:
        if self.transport == "tcp":
            self._secret = secrets.token_hex(32).encode("ascii")
            runlock.write_private(self.run / SECRET_NAME, self._secret.decode("ascii"))
            self._owned.append(self.run / SECRET_NAME)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            runlock.write_private(self.run / PORT_NAME, f"{sock.getsockname()[1]}\n")
            self._owned.append(self.run / PORT_NAME)
            sock.listen(64)
            sock.settimeout(ACCEPT_POLL_S)
        else:
            sock = self._bind_unix()
        self._sock = sock

    def _bind_unix(self) -> socket.socket:
        """A listening socket at ``run/daemon.sock``, replacing whatever is there."""
        path, staging = self.run / SOCKET_NAME, self.run / BIND_NAME
        staging.unlink(missing_ok=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(str(staging))
            os.chmod(staging, 0o600)
            sock.listen(64)
            sock.settimeout(ACCEPT_POLL_S)
            os.replace(staging, path)
        except OSError:
            sock.close()
            with contextlib.suppress(OSError):
                staging.unlink(missing_ok=True)
            raise
        self._sock_id = _file_id(path)
        return sock

    def _run_folder_lost(self) -> str:
        """Why the daemon cannot go on (its lock file is gone), or ""."""
        if self._lock_id is not None and _file_id(self.run / f"{DAEMON_ROLE}.lock") != (
            self._lock_id
        ):
            return "its lock file was removed (the run folder deleted?)"
        return ""

    def _keep_socket(self, pool: ThreadPoolExecutor) -> None:
        """Recreate the socket file if it was removed or replaced; exit if that cannot be."""
        if self.transport != "unix" or self._sock is None:
            return
        path = self.run / SOCKET_NAME
        if _file_id(path) == self._sock_id:
            return
        lost = self._run_folder_lost()
        if lost:
            log.error("exiting: %s", lost)
            self.stop("run folder lost")
            return
        old = self._sock
        try:
            self._sock = self._bind_unix()
        except OSError as exc:
            log.error("the socket %s was lost and cannot be recreated (%s): exiting", path, exc)
            self.stop("socket lost")
            return
        # Clients that connected just before the switch are still served.
        old.setblocking(False)
        while True:
            try:
                conn, _ = old.accept()
            except OSError:
                break
            pool.submit(self._handle, conn)
        old.close()
        log.warning("the socket %s was removed or replaced: recreated it", path)

    def _start_http(self) -> None:
        """The HTTP hook listener on 127.0.0.1:``http_port``, when set (docs/daemon.md).

        A port that cannot be bound is logged and skipped: the socket still serves.
        """
        port = self.settings.http_port
        if not port:
            return
        from precedents.query_daemon.http import HttpListener, ensure_secret

        try:
            listener = HttpListener(port, ensure_secret(self.settings.home), self._dispatch)
        except (OSError, OverflowError) as exc:
            log.error("the HTTP hook listener cannot use 127.0.0.1:%s (%s)", port, exc)
            return
        listener.start()
        self._http = listener

    def _cleanup(self) -> None:
        if self._http is not None:
            with contextlib.suppress(Exception):
                self._http.stop()
            self._http = None
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
            path = self.run / SOCKET_NAME
            if self._sock_id is not None and _file_id(path) == self._sock_id:
                with contextlib.suppress(OSError):
                    path.unlink()  # ours: whatever replaced it is left alone
        for path in self._owned:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        self._owned.clear()
        self.first_sessions.close()
        self.org_pulls.close()
        if self.recall is not None:
            with contextlib.suppress(Exception):
                self.recall.close()
        self._claimed.release()

    def stop(self, reason: str = "stopped") -> None:
        """Ask the daemon to exit (from any thread or a signal handler)."""
        self.stop_reason = self.stop_reason or reason
        self._stop.set()
        self._loaded.set()

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for name in ("SIGTERM", "SIGHUP", "SIGINT"):
            sig = getattr(signal, name, None)
            if sig is not None:
                signal.signal(sig, lambda *_: self.stop("signal"))

    # -- running -----------------------------------------------------------------

    def serve(self, ready: threading.Event | None = None) -> str:
        """Run until idle, signalled or stopped; returns why it stopped.

        Raises :class:`DiskFull` (one line) when the disk is full at start.
        """
        try:
            return self._serve(ready)
        except (OSError, RuntimeError) as exc:
            if not is_disk_full(exc):
                raise
            raise self._disk_full(exc) from None

    def _disk_full(self, exc: BaseException) -> DiskFull:
        full = note_disk_full(self.settings, exc)
        self.stop_reason = f"error: {full}"
        return full

    def _serve(self, ready: threading.Event | None) -> str:
        self._claim()
        note_earlier_disk_full(self.run)
        try:
            self._bind()
            self._start_http()
            self.org_pulls.start()
            self._install_signals()
            log.info(
                "daemon %d listening (%s) for %s", os.getpid(), self.transport, self.settings.home
            )
            pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="client")
            loader = threading.Thread(target=self._load, name="load", daemon=True)
            loader.start()
            try:
                self._accept_loop(pool, ready, loader)
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
                # Stopped while the model loads: let it finish (bounded) before the
                # interpreter exits under it, which aborts in onnxruntime's native
                # start-up (seen in the watcher, exit -6). A hung load is not awaited.
                if not self.stop_reason.startswith("still loading"):
                    loader.join(LOADER_JOIN_S)
        except BaseException as exc:
            self.stop_reason = self.stop_reason or (
                "error: disk full" if is_disk_full(exc) else f"error: {exc!r}"
            )
            raise
        finally:
            self._cleanup()
            log.info("daemon %d exited (%s)", os.getpid(), self.stop_reason or "stopped")
        return self.stop_reason

    def _load(self) -> None:
        try:
            if self._recall_factory is not None:
                recall = self._recall_factory(self.settings)
            else:
                from precedents.recall.core import Recall

                # Exported: the vectors come from a child process that reads the
                # store while the model loads here, so LanceDB (~130 MiB) is never
                # resident in the daemon (recall/exported.py).
                recall = Recall(self.settings, batch=True, exported=True)
        except Exception as exc:
            if is_disk_full(exc):
                self._disk_full(exc)
                self.stop()
                return
            if isinstance(exc, PrecedentsError):
                log.error("cannot serve: %s", exc)
                self.stop(f"error: {exc}")
                return
            log.exception("loading the model or index failed")
            self.stop(f"error: {exc!r}")
            return
        self._last_question = time.monotonic()  # the idle clock starts now
        self.recall = recall
        self._loaded.set()
        with contextlib.suppress(OSError):
            (self.run / STARTING_MARK).unlink(missing_ok=True)
        # This start proved itself: should the daemon die from now on (kill -9, the OOM
        # killer), the next hook starts another at once, not a minute later (starter).
        allow_respawn(str(self.settings.home))
        log.info(
            "ready: model %s in %.2fs",
            getattr(recall.embedder, "model_id", "?"),
            time.monotonic() - self._started,
        )
        threading.Thread(
            target=self._refresh_loop, args=(recall,), name="refresh", daemon=True
        ).start()
        self.first_sessions.attach(recall)

    def _refresh_loop(self, recall: Recall) -> None:
        while not self._stop.wait(REFRESH_S):
            try:
                recall.refresh()
            except Exception:  # keep serving the last good snapshot
                log.exception("refresh failed")

    def _accept_loop(
        self, pool: ThreadPoolExecutor, ready: threading.Event | None, loader: threading.Thread
    ) -> None:
        assert self._sock is not None
        if ready is not None:
            ready.set()
        load_limit = max(self.idle_timeout_s, LOAD_LIMIT_S)
        while not self._stop.is_set():
            now = time.monotonic()
            if self.recall is not None:
                if now - self._last_question > self.idle_timeout_s:
                    self.stop(f"idle for {self.idle_timeout_s:.0f}s")
                    break
            elif now - self._started > load_limit and loader.is_alive():
                self.stop(f"still loading after {load_limit:.0f}s")
                break
            self._keep_socket(pool)
            if self._stop.is_set():
                break
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if self._stop.is_set():
                    break
                log.warning("accept failed: %s", exc)
                time.sleep(0.05)
                continue
            pool.submit(self._handle, conn)

    # -- one client --------------------------------------------------------------

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(CLIENT_TIMEOUT_S)
            try:
                if not self._peer_allowed(conn):
                    conn.sendall(
                        protocol.encode(
                            {"v": PROTOCOL_VERSION, "ok": False, "error": "unauthorized"}
                        )
                    )
                    return
                reader = conn.makefile("rb")
                while not self._stop.is_set():
                    line = reader.readline(protocol.MAX_LINE_BYTES + 1)
                    if not line:
                        return
                    if len(line) > protocol.MAX_LINE_BYTES:
                        # Not read on as more requests: one answer, then the door.
                        conn.sendall(
                            protocol.encode(
                                {"v": PROTOCOL_VERSION, "ok": False, "error": "too long"}
                            )
                        )
                        return
                    answer, given = self._answer(line)
                    try:
                        conn.sendall(protocol.encode(answer))
                    except OSError:
                        self.take_back(given)  # the hook gave up: its records are not given
                        raise
            except (OSError, TimeoutError):
                return  # the client gave up (its budget ran out) or vanished

    def _peer_allowed(self, conn: socket.socket) -> bool:
        """Whether the client runs as our uid (UNIX sockets; TCP has its secret)."""
        if self.transport != "unix" or self._uid is None:
            return True
        try:
            uid = peer_uid(conn)
        except OSError as exc:
            log.warning("refused a connection: its uid cannot be read (%s)", exc)
            return False
        if uid is None or uid == self._uid:
            return True
        log.warning("refused a connection from uid %d (this daemon serves uid %d)", uid, self._uid)
        return False

    def _answer(self, line: bytes) -> tuple[dict[str, object], Given | None]:
        """The answer line's object (versioned, tagged on Windows), and what it gives a session."""
        try:
            request = protocol.decode(line)
        except ValueError:
            return {"v": PROTOCOL_VERSION, "ok": False, "error": "bad request"}, None
        tag: dict[str, str] = {}
        if self._secret is not None:
            auth = str(request.get("auth", "")).encode("ascii", "replace")
            if not hmac.compare_digest(auth, self._secret):
                return {"v": PROTOCOL_VERSION, "ok": False, "error": "unauthorized"}, None
            tag = {"tag": protocol.answer_tag(self._secret, str(request.get("nonce", "")))}
        if request.get("v") != PROTOCOL_VERSION:
            return {"v": PROTOCOL_VERSION, "ok": False, "error": "version", **tag}, None
        try:
            reply = self._dispatch(request)
        except Exception as exc:  # a bad question must not take the daemon down
            log.exception("request failed")
            reply = Reply({"ok": False, "error": type(exc).__name__})
        return {"v": PROTOCOL_VERSION, **reply.answer, **tag}, reply.given


def serve(
    settings: Settings,
    *,
    idle_timeout_s: float | None = None,
    transport: str | None = None,
) -> str:
    """Run the daemon in this process until it stops; returns why it stopped."""
    return Daemon(settings, idle_timeout_s=idle_timeout_s, transport=transport).serve()
