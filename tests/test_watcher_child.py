"""The watcher's store side in a child process (issue #28, watcher/child.py).

Real parts: the watcher's real child process (``python -P -c ...``), the real
bundled model loaded there, the real LanceDB store read back by a reader view,
real watchdog observers, `python -m precedents.watcher` as users run it.

- a saved note is indexed by the child; the watcher's own process never loads the
  model, ONNX Runtime or LanceDB, and stays small;
- the child ends when idle, and the next save starts a fresh one;
- a child above its memory ceiling after a job is replaced before the next;
- a child killed in the middle of a job costs one logged line: its group is due
  again, a fresh child indexes it;
- stopping the watcher stops a child in the middle of a pull between two batches;
- a watcher killed outright leaves no child behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from precedents.config import Settings, load_settings
from precedents.ingest.sources import SourceDir, Sources
from precedents.store import Store
from precedents.watcher import Watcher, WatchTiming
from precedents.watcher.child import ChildSide
from tests.processes import alive, children

LINUX = sys.platform.startswith("linux")
pytestmark = pytest.mark.skipif(not LINUX, reason="process memory and maps are read from /proc")
TIMEOUT = 240.0  # a busy 2-core box: the child imports LanceDB and loads the model
FAST = WatchTiming(quiet_s=0.1, conversation_quiet_s=0.3, max_wait_s=2.0, rescan_s=30.0)


def note(i: int) -> str:
    return (
        f"---\nname: Decision {i}\ndescription: what we settled in meeting {i}\n---\n"
        f"Deploys freeze on Fridays; meeting {i} kept the rule and named its owner.\n"
    )


def wait_for(check: Callable[[], bool], timeout: float = TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


def status(pid: int, key: str) -> int:
    """A /proc/PID/status field in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


class Indexed:
    """A reader view of the store the child writes."""

    def __init__(self, settings: Settings, model: Any) -> None:
        self.settings, self.model = settings, model
        self._store: Store | None = None

    def paths(self) -> set[str]:
        if self._store is None:
            if not self.settings.index_dir.exists():
                return set()
            try:
                self._store = Store(
                    self.settings.index_dir,
                    self.model.model_id,
                    self.model.dimension,
                    reader=True,
                    create=False,
                )
            except Exception:
                return set()  # not created yet
        return set(self._store.files())


@pytest.fixture
def notes(home: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "first.md").write_text(note(0), encoding="utf-8")
    return folder


@pytest.fixture
def running(notes: Path, embedder: Any) -> Iterator[tuple[Watcher, Indexed]]:
    settings = load_settings(discover_claude=False)
    timing = WatchTiming(**{**FAST.__dict__, "child_idle_s": 3.0})
    watcher = Watcher(
        settings, folders=Sources(project=str(notes.parent), notes=[notes]), timing=timing
    )
    with watcher:
        assert watcher.wait_ready(TIMEOUT)
        yield watcher, Indexed(settings, embedder)


def test_the_child_indexes_a_save_and_ends_when_idle(
    running: tuple[Watcher, Indexed], notes: Path
) -> None:
    watcher, indexed = running
    side = watcher.side
    assert isinstance(side, ChildSide)
    assert str(notes / "first.md") in indexed.paths()  # the start-up reconcile, by the child
    # Idle for child_idle_s (3 s): the child ends and its memory goes with it.
    assert wait_for(lambda: side.pid is None, 60), "the idle child did not end"
    started = side.started
    (notes / "second.md").write_text(note(2), encoding="utf-8")
    assert wait_for(lambda: str(notes / "second.md") in indexed.paths())
    assert side.started == started + 1  # a fresh child for the save
    assert watcher.stats.files_indexed >= 2 and watcher.stats.failures == 0


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_child_killed_mid_job_costs_one_line_and_its_group_is_due_again(
    running: tuple[Watcher, Indexed], notes: Path, caplog: pytest.LogCaptureFixture
) -> None:
    watcher, indexed = running
    side = watcher.side
    assert isinstance(side, ChildSide)
    if side.pid is None:  # the reconcile's child ended already (3 s idle): wake one
        (notes / "warm.md").write_text(note(1), encoding="utf-8")
        assert wait_for(lambda: str(notes / "warm.md") in indexed.paths())
    child = side.pid
    assert child is not None
    before = cpu_s(child)
    wanted = set()
    for i in range(40):  # one group (no heads: under BURST_HEADS_FROM), seconds to embed
        path = notes / f"batch-{i:02d}.md"
        path.write_text(note(100 + i) * 12, encoding="utf-8")
        wanted.add(str(path))
    # Killed while it embeds the group (out of memory, or a user's kill).
    assert wait_for(lambda: cpu_s(child) - before > 0.5, 60)
    os.kill(child, signal.SIGKILL)
    # The group is due again: a fresh child indexes every file of it.
    assert wait_for(lambda: wanted <= indexed.paths()), sorted(wanted - indexed.paths())[:3]
    assert side.started >= 2 and watcher.stats.failures >= 1
    lost = [r.getMessage() for r in caplog.records if "ended without an answer" in r.getMessage()]
    assert len(lost) == 1 and "\n" not in lost[0], lost


def test_a_child_past_its_memory_ceiling_is_replaced_before_the_next_job(
    home: Path, notes: Path
) -> None:
    settings = load_settings(discover_claude=False)
    stopping = threading.Event()
    side = ChildSide(settings, stopping, idle_s=60, recycle_mib=1)  # every child is past 1 MiB
    source = SourceDir("note", notes, str(notes.parent))
    try:
        side.reconcile([source], [source])
        assert side.pid is None and side.started == 1 and side.peak_mib > 1
        (notes / "second.md").write_text(note(2), encoding="utf-8")
        outcome = side.apply([source], [str(notes / "second.md")])
        assert outcome.files_indexed == 1 and side.started == 2 and side.pid is None
    finally:
        side.close(30)


def test_stopping_the_watcher_stops_its_child_mid_pull(
    running: tuple[Watcher, Indexed], notes: Path
) -> None:
    watcher, _ = running
    side = watcher.side
    assert isinstance(side, ChildSide)
    for i in range(400):  # a pull: headed, then minutes of full indexing on 2 cores
        (notes / f"pulled-{i:03d}.md").write_text(note(1000 + i) * 20, encoding="utf-8")
    assert wait_for(lambda: side.pid is not None and watcher.stats.headed > 0, TIMEOUT)
    child = side.pid
    assert child is not None
    started = time.monotonic()
    watcher.stop(timeout_s=60)
    # Between two batches of the full pass: seconds, not the minutes the pass takes.
    assert time.monotonic() - started < 60
    assert not alive(child)


def test_the_watcher_holds_no_model_and_a_killed_watcher_leaves_no_child(
    home: Path, notes: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    watcher = subprocess.Popen(
        [sys.executable, "-m", "precedents.watcher", "--notes", str(notes)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=notes.parent,
    )
    try:

        def child() -> int | None:
            found = children(watcher.pid)
            return found[0] if found else None

        assert wait_for(lambda: child() is not None), "no indexing child started"
        pid = child()
        assert pid is not None
        maps = Path(f"/proc/{pid}/maps").read_text()
        (notes / "second.md").write_text(note(2), encoding="utf-8")
        assert wait_for(
            lambda: "onnxruntime" in Path(f"/proc/{pid}/maps").read_text() or not alive(pid)
        )
        own = Path(f"/proc/{watcher.pid}/maps").read_text()
        assert "onnxruntime" not in own and "lancedb" not in own and "libtorch" not in own
        # Python, watchdog and the package's light modules: nothing near the ~470 MiB
        # the watcher rested at holding the model and LanceDB.
        assert status(watcher.pid, "VmHWM") < 200 * 1024, status(watcher.pid, "VmHWM")
        del maps
        watcher.kill()  # no stop(): the child reads an end of file and exits
        watcher.wait(30)
        assert wait_for(lambda: not alive(pid), 120), "the child outlived its watcher"
    finally:
        if watcher.poll() is None:
            watcher.kill()
            watcher.wait(30)
        assert watcher.stderr is not None
        err = watcher.stderr.read().decode("utf-8", "replace")
        assert "Traceback" not in err, err[-2000:]
