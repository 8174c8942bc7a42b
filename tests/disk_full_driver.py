"""Run inside a private mount namespace (``unshare -rm``) by tests/test_disk_full.py.

``python tests/disk_full_driver.py DISK`` mounts a 2 MiB tmpfs at DISK (the
state folder lives on it), then, with the disk completely full:

1. a daemon is started as the hook starts it, a second after a hook stamped
   its start (so the hook would wait a minute before the next one);
2. the hook is run with the disk still full;
3. the filler is removed (space returns) and the hook is run again.

It prints one JSON object with what it saw; the test asserts on it. The mount
and everything on it vanish with the namespace.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
LAUNCHER = HERE.parent / "src" / "precedents" / "hook" / "launch.py"


def fill(disk: Path) -> None:
    fh = open(disk / "fill", "wb")  # noqa: SIM115 - closing it fails too, on a full disk
    with contextlib.suppress(OSError):
        while True:
            fh.write(b"\0" * 65536)
    with contextlib.suppress(OSError):
        fh.close()


def hook(home: Path, env: dict[str, str]) -> dict[str, object]:
    stdin = json.dumps(
        {
            "session_id": "s",
            "cwd": str(home.parent),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "how do we deploy the web tier these days?",
        }
    ).encode()
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-I", "-S", str(LAUNCHER), "prompt"],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    return {
        "code": proc.returncode,
        "stdout": proc.stdout.decode(errors="replace"),
        "stderr": proc.stderr.decode(errors="replace"),
        "seconds": round(time.monotonic() - started, 2),
    }


def wait_for(predicate: object, limit: float) -> bool:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def main(disk: Path) -> dict[str, object]:
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], check=True)
    home = disk / "state"
    run = home / "run"
    run.mkdir(parents=True)
    (home / "logs").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(PRECEDENTS_HOME=str(home), PRECEDENTS_HOOK_BUDGET_MS="300", HF_HUB_OFFLINE="1")
    stamp = run / "daemon.spawned"
    stamp.touch()  # a hook started a daemon just now
    fill(disk)
    out: dict[str, object] = {"free_bytes_when_full": os.statvfs(disk).f_bavail * 4096}
    # 1. The daemon, as the hook starts it, on the full disk.
    daemon = subprocess.run(
        [sys.executable, "-m", "precedents.query_daemon"],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    out["daemon"] = {
        "code": daemon.returncode,
        "stderr": daemon.stderr.decode(errors="replace"),
    }
    out["stamp_mtime_after_daemon"] = stamp.stat().st_mtime
    out["mark_left"] = (run / "daemon.disk-full").exists()
    # 2. The hook while the disk is still full: no daemon is started.
    out["hook_full"] = hook(home, env)
    out["pid_while_full"] = (run / "daemon.pid").exists()
    # 3. Space returns; the very next hook starts a daemon.
    (disk / "fill").unlink()
    returned = time.monotonic()
    out["hook_space"] = hook(home, env)
    out["spawned_after_s"] = round(time.monotonic() - returned, 2)
    pid_path = run / "daemon.pid"
    out["pid_after_space"] = wait_for(pid_path.exists, 60)
    log = home / "logs" / "daemon.log"
    out["logged"] = wait_for(
        lambda: log.exists() and "the disk was full" in log.read_text(errors="replace"), 60
    )
    out["daemon_log"] = log.read_text(errors="replace") if log.exists() else ""
    hook_log = home / "logs" / "hook.log"
    out["hook_log"] = hook_log.read_text(errors="replace") if hook_log.exists() else ""
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pid_path.read_text().strip()), signal.SIGTERM)
    return out


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
