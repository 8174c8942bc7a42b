"""A full disk is one line, everywhere (issue #20, item 4).

Real full disks: a private 2 MiB tmpfs (``unshare -rm``: root or user
namespaces; skipped elsewhere) filled until the kernel says ENOSPC, and the
real commands run on it: `reindex`, `remember` (the note's disk full; the
index's disk full), `serve`, the daemon as the hook starts it, and the hook
itself before and after space returns. Before: `reindex`, `serve`, the
daemon's start and `remember` with a full index disk ended in a traceback
(54-56 lines), `remember` with a full note disk said so in one line but as a
usage error (exit 2); a daemon that died of it held the hook back a minute.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from precedents.errors import DiskFull, disk_full, is_disk_full

from .conftest import REPO
from .test_data_safety import can_mount_tmpfs

# Mount a 2 MiB tmpfs at $1, make the folders, fill it to the last block, run the rest.
FULL_DISK = (
    'mount -t tmpfs -o size=2m tmpfs "$1" && mkdir -p "$1/state" "$1/claude" && '
    '{ dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null; true; } && shift && exec "$@"'
)


@pytest.fixture
def tmpfs_ok() -> None:
    if not can_mount_tmpfs():
        pytest.skip("needs `unshare -rm` and tmpfs mounts (Linux, root or user namespaces)")


def on_full_disk(
    disk: Path, args: list[str], *, cwd: Path, claude: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m precedents.cli ARGS`` with its state folder on a completely full disk."""
    disk.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    env.update(
        PRECEDENTS_HOME=str(disk / "state"),
        PRECEDENTS_CLAUDE_DIR=str(claude or disk / "claude"),
        PYTHONPATH=str(REPO / "src"),
        HF_HUB_OFFLINE="1",
    )
    command = [sys.executable, "-m", "precedents.cli", *args]
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", FULL_DISK, "sh", str(disk), *command],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
        check=False,
    )


def one_line_about_the_disk(proc: subprocess.CompletedProcess[str]) -> str:
    err = proc.stderr
    assert proc.returncode == 1, (proc.returncode, err)
    assert "Traceback" not in err and "Logging error" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("precedents: "), err
    assert "is full" in lines[0] and "free some space" in lines[0], err
    return lines[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".git").mkdir(parents=True)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "deploy.md").write_text("---\nname: Deploy\ndescription: how\n---\nBlue-green.\n")
    return root


@pytest.mark.usefixtures("tmpfs_ok")
def test_reindex_on_a_full_disk(tmp_path: Path, project: Path) -> None:
    proc = on_full_disk(
        tmp_path / "disk",
        ["reindex", "--notes", str(tmp_path / "notes"), "--project", str(project)],
        cwd=project,
    )
    line = one_line_about_the_disk(proc)
    assert str(tmp_path / "disk" / "state") in line and "run the command again" in line


@pytest.mark.usefixtures("tmpfs_ok")
def test_remember_when_the_notes_disk_is_full(tmp_path: Path, project: Path) -> None:
    proc = on_full_disk(tmp_path / "disk", ["remember", "Ship on Tuesdays only."], cwd=project)
    line = one_line_about_the_disk(proc)
    assert "/memory is full" in line and "save the note again" in line


@pytest.mark.usefixtures("tmpfs_ok")
def test_remember_when_only_the_index_disk_is_full(tmp_path: Path, project: Path) -> None:
    claude = tmp_path / "claude"  # on the ordinary disk: the note fits, its indexing does not
    claude.mkdir()
    proc = on_full_disk(
        tmp_path / "disk", ["remember", "Ship on Tuesdays only."], cwd=project, claude=claude
    )
    line = one_line_about_the_disk(proc)
    saved = list(claude.rglob("*.md"))
    assert len(saved) == 1 and "Ship on Tuesdays only." in saved[0].read_text()
    assert f"{saved[0]} is saved but not searchable yet" in line and "reindex" in line


@pytest.mark.usefixtures("tmpfs_ok")
def test_serve_on_a_full_disk(tmp_path: Path, project: Path) -> None:
    proc = on_full_disk(tmp_path / "disk", ["serve"], cwd=project)
    assert "the next prompt starts the daemon" in one_line_about_the_disk(proc)


@pytest.mark.usefixtures("tmpfs_ok")
def test_the_hook_starts_a_daemon_as_soon_as_space_returns(tmp_path: Path) -> None:
    """The daemon as the hook starts it dies of the full disk in one line and clears
    the hook's one-a-minute stamp; no daemon is started while the disk is full; the
    first hook after space returns starts one, which logs what happened."""
    disk = tmp_path / "disk"
    disk.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        ["unshare", "-rm", sys.executable, str(REPO / "tests" / "disk_full_driver.py"), str(disk)],
        capture_output=True,
        text=True,
        env=env,
        timeout=400,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["free_bytes_when_full"] == 0
    daemon = seen["daemon"]
    assert daemon["code"] == 1 and "Traceback" not in daemon["stderr"]
    lines = daemon["stderr"].splitlines()
    assert len(lines) == 1 and "is full" in lines[0], daemon["stderr"]
    assert seen["stamp_mtime_after_daemon"] == 0  # the minute's wait is lifted
    assert seen["mark_left"]
    # Still full: the hook starts nothing (it would die at once), prints nothing, exits 0.
    assert (seen["hook_full"]["code"], seen["hook_full"]["stdout"]) == (0, "")
    assert not seen["pid_while_full"]
    # Space back: the very next hook starts one, well inside the old 60 s.
    assert (seen["hook_space"]["code"], seen["hook_space"]["stdout"]) == (0, "")
    assert '"started_daemon": true' in seen["hook_log"], seen["hook_log"]
    assert seen["spawned_after_s"] < 30 and seen["pid_after_space"]
    assert seen["logged"], seen["daemon_log"]


def test_a_full_disk_is_recognised_through_the_layers() -> None:
    import errno

    plain = OSError(errno.ENOSPC, "No space left on device")
    quota = OSError(errno.EDQUOT, "Disk quota exceeded")
    lance = RuntimeError("lance error: LanceError(IO): No space left on device (os error 28)")
    try:
        try:
            raise plain
        except OSError as exc:
            raise ValueError("wrapped") from exc
    except ValueError as wrapped:
        assert is_disk_full(wrapped)
    assert all(is_disk_full(e) for e in (plain, quota, lance))
    assert not is_disk_full(OSError(errno.EACCES, "Permission denied"))
    named = OSError(errno.ENOSPC, "No space left on device", "/data/state/run/x.pid")
    assert str(disk_full(named)).startswith("the disk holding /data/state/run is full")
    assert isinstance(disk_full(plain, "/s"), DiskFull)


def test_the_cli_boundary_makes_any_os_error_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    import errno

    import typer

    from precedents.cli.common import errors

    def raising(exc: BaseException) -> None:
        raise exc

    cases = [
        (PermissionError(errno.EACCES, "Permission denied", "/x/y"), "Permission denied: /x/y"),
        (RuntimeError("LanceError(IO): No space left on device (os error 28)"), "is full"),
        (OSError(errno.ENOSPC, "No space left on device"), "is full; free some space"),
    ]
    for exc, said in cases:
        with pytest.raises(typer.Exit) as ended:
            errors(raising)(exc)
        assert ended.value.exit_code == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("precedents: ") and said in err, err
    with pytest.raises(RuntimeError):  # anything else is a bug: left to show itself
        errors(raising)(RuntimeError("boom"))
