"""`precedents serve`: the resident daemon behind the hook.

Lifecycle:
- One daemon per state directory: an exclusive lock on ``run/daemon.lock``
  (``flock``; Windows ``msvcrt.locking``). The OS releases it when the process
  dies in any way, so holding the lock proves any socket or pid file left in
  ``run/`` is stale, and it is replaced. A second daemon fails with
  :class:`DaemonRunning`.
- The socket is bound *before* the model loads (~6 s): a hook asking then gets
  a quick empty answer instead of "down", so it does not start a second daemon.
- Questions are handled on a thread pool; embeddings are batched by one
  worker (see :mod:`recall`). A refresher thread reloads the vectors within
  ``REFRESH_S`` of the watcher's commits.
- Exits after ``idle_timeout_s`` without a question, on SIGTERM/SIGINT/SIGHUP,
  or on an error, and always removes its socket and pid file on the way out.

Transport: a UNIX socket in the 0700 ``run/`` folder; on Windows TCP on
127.0.0.1 with a shared secret in a user-only file and an HMAC answer tag
(:mod:`protocol`). ``transport="tcp"`` forces the latter (tests use it here).
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from precedents import __version__, protocol, runlock
from precedents.config import Settings, ensure_private_dir
from precedents.errors import PrecedentsError, UsageError
from precedents.protocol import (
    DAEMON_ROLE,
    PORT_NAME,
    PROTOCOL_VERSION,
    SECRET_NAME,
    SOCKET_NAME,
)

log = logging.getLogger("precedents.daemon")

REFRESH_S = 0.25
ACCEPT_POLL_S = 0.5
CLIENT_TIMEOUT_S = 10.0
WORKERS = 16


class DaemonRunning(UsageError):
    """Another daemon already serves this state directory."""


def read_pid(run: Path) -> int | None:
    """The pid recorded by a daemon in ``run``, if any."""
    return runlock.read_pid(run, DAEMON_ROLE)


class Daemon:
    """One running daemon: socket, lock, pid file, the recall engine and its threads."""

    def __init__(
        self,
        settings: Settings,
        *,
        idle_timeout_s: float | None = None,
        transport: str | None = None,
        recall_factory: Callable[[Settings], Any] | None = None,
    ) -> None:
        self.settings = settings
        self.idle_timeout_s = settings.idle_timeout_s if idle_timeout_s is None else idle_timeout_s
        self.transport = transport or ("tcp" if protocol.USE_TCP else "unix")
        self.run = settings.run_dir
        self._recall_factory = recall_factory
        self.recall: Any = None
        self._stop = threading.Event()
        self._last_question = time.monotonic()
        self._claimed = runlock.Claim(self.run, DAEMON_ROLE)
        self._sock: socket.socket | None = None
        self._secret: bytes | None = None
        self._owned: list[Path] = []
        self.stop_reason = ""

    # -- start and stop ------------------------------------------------------------

    def _claim(self) -> None:
        if not self._claimed.acquire():
            pid = self._claimed.holder()
            raise DaemonRunning(
                f"a daemon is already running for {self.settings.home}"
                + (f" (pid {pid})" if pid else "")
            )
        for name in (SOCKET_NAME, PORT_NAME, SECRET_NAME):
            stale = self.run / name
            if stale.exists() or stale.is_symlink():
                log.info("removing stale %s left by a daemon that died", name)
                stale.unlink(missing_ok=True)

    def _bind(self) -> None:
        if self.transport == "tcp":
            self._secret = secrets.token_hex(32).encode("ascii")
            runlock.write_private(self.run / SECRET_NAME, self._secret.decode("ascii"))
            self._owned.append(self.run / SECRET_NAME)
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            runlock.write_private(self.run / PORT_NAME, f"{sock.getsockname()[1]}\n")
            self._owned.append(self.run / PORT_NAME)
        else:
            path = self.run / SOCKET_NAME
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(str(path))
            self._owned.append(path)
            os.chmod(path, 0o600)
        sock.listen(64)
        sock.settimeout(ACCEPT_POLL_S)
        self._sock = sock

    def _cleanup(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None
        for path in self._owned:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        self._owned.clear()
        if self.recall is not None:
            with contextlib.suppress(Exception):
                self.recall.close()
        self._claimed.release()

    def stop(self, reason: str = "stopped") -> None:
        """Ask the daemon to exit (from any thread or a signal handler)."""
        self.stop_reason = self.stop_reason or reason
        self._stop.set()

    def _install_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for name in ("SIGTERM", "SIGHUP", "SIGINT"):
            sig = getattr(signal, name, None)
            if sig is not None:
                signal.signal(sig, lambda *_: self.stop("signal"))

    # -- running -----------------------------------------------------------------

    def serve(self, ready: threading.Event | None = None) -> str:
        """Run until idle, signalled or stopped; returns why it stopped."""
        self._claim()
        try:
            self._bind()
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
        except BaseException as exc:
            self.stop_reason = self.stop_reason or f"error: {exc!r}"
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

                recall = Recall(self.settings, batch=True)
        except PrecedentsError as exc:
            log.error("cannot serve: %s", exc)
            self.stop(f"error: {exc}")
            return
        except Exception as exc:  # any load failure must end the daemon, not hang it
            log.exception("loading the model or index failed")
            self.stop(f"error: {exc!r}")
            return
        self.recall = recall
        log.info("ready: model %s", getattr(recall.embedder, "model_id", "?"))
        threading.Thread(target=self._refresh_loop, name="refresh", daemon=True).start()

    def _refresh_loop(self) -> None:
        while not self._stop.wait(REFRESH_S):
            try:
                self.recall.refresh()
            except Exception:  # keep serving the last good snapshot
                log.exception("refresh failed")

    def _accept_loop(
        self, pool: ThreadPoolExecutor, ready: threading.Event | None, loader: threading.Thread
    ) -> None:
        assert self._sock is not None
        if ready is not None:
            ready.set()
        while not self._stop.is_set():
            if time.monotonic() - self._last_question > self.idle_timeout_s:
                self.stop(f"idle for {self.idle_timeout_s:.0f}s")
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
            reader = conn.makefile("rb")
            try:
                while not self._stop.is_set():
                    line = reader.readline(protocol.MAX_LINE_BYTES + 1)
                    if not line:
                        return
                    answer = self._answer(line)
                    conn.sendall(protocol.encode(answer))
            except (OSError, TimeoutError):
                return  # the client gave up (its budget ran out) or vanished

    def _answer(self, line: bytes) -> dict[str, Any]:
        try:
            request = protocol.decode(line)
        except ValueError:
            return {"v": PROTOCOL_VERSION, "ok": False, "error": "bad request"}
        tag: dict[str, str] = {}
        if self._secret is not None:
            auth = str(request.get("auth", "")).encode("ascii", "replace")
            if not hmac.compare_digest(auth, self._secret):
                return {"v": PROTOCOL_VERSION, "ok": False, "error": "unauthorized"}
            tag = {"tag": protocol.answer_tag(self._secret, str(request.get("nonce", "")))}
        if request.get("v") != PROTOCOL_VERSION:
            return {"v": PROTOCOL_VERSION, "ok": False, "error": "version", **tag}
        try:
            body = self._dispatch(request)
        except Exception as exc:  # a bad question must not take the daemon down
            log.exception("request failed")
            body = {"ok": False, "error": type(exc).__name__}
        return {"v": PROTOCOL_VERSION, **body, **tag}

    def _dispatch(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "ping":
            return {
                "ok": True,
                "pid": os.getpid(),
                "version": __version__,
                "ready": self.recall is not None,
                "model": self.settings.model,
            }
        if op == "stop":
            self.stop("asked to stop")
            return {"ok": True}
        if op not in ("context", "session"):
            return {"ok": False, "error": f"unknown op {op!r}"}
        self._last_question = time.monotonic()
        cwd = request.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            return {"ok": False, "error": "cwd missing"}
        if self.recall is None:
            log.info("answer %s", json.dumps({"op": op, "reason": "starting"}))
            return {"ok": True, "context": None, "starting": True}
        if op == "session":
            started = time.perf_counter()
            text = self.recall.session_context(cwd)
            log.info(
                "answer %s",
                json.dumps(
                    {
                        "op": op,
                        "bytes": len(text.encode()) if text else 0,
                        "ms": round((time.perf_counter() - started) * 1000, 1),
                    }
                ),
            )
            return {"ok": True, "context": text}
        prompt = request.get("prompt")
        if not isinstance(prompt, str):
            return {"ok": False, "error": "prompt missing"}
        answer = self.recall.context(prompt, cwd)
        # Ids, bytes, scores and timings only: never the prompt's text.
        log.info("answer %s", json.dumps({"op": op, **answer.log_fields()}))
        return {"ok": True, "context": answer.context}


def serve(
    settings: Settings,
    *,
    idle_timeout_s: float | None = None,
    transport: str | None = None,
) -> str:
    """Run the daemon in this process until it stops; returns why it stopped."""
    return Daemon(settings, idle_timeout_s=idle_timeout_s, transport=transport).serve()


def configure_logging(settings: Settings) -> None:
    """Entry points only: the daemon logs to ``logs/daemon.log``, rotated, at INFO."""
    from logging.handlers import RotatingFileHandler

    ensure_private_dir(settings.log_dir)
    logger = logging.getLogger("precedents")
    handler = RotatingFileHandler(
        settings.log_dir / "daemon.log", maxBytes=2_000_000, backupCount=2, encoding="utf-8"
    )
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
