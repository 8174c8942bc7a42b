"""A pass's progress on disk, for `precedents status` (stdlib only: status reads it
without importing the indexer, the model or LanceDB)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from precedents.runlock import write_private

# Told (files done, files in the pass, chunks embedded so far) as a pass goes.
Progress = Callable[[int, int, int], None]


class PassProgress:
    """A pass's progress, also written to ``run/progress.json`` (at most once a second)
    for `precedents status` to show while a long first index runs in the background."""

    FILE = "progress.json"

    def __init__(self, run_dir: Path, forward: Progress | None) -> None:
        self.path = run_dir / self.FILE
        self.forward = forward
        self.started = time.time()
        self._last = 0.0

    def __call__(self, done: int, total: int, chunks: int) -> None:
        if self.forward is not None:
            self.forward(done, total, chunks)
        now = time.monotonic()
        if now - self._last >= 1.0 or done == total:
            self._last = now
            text = json.dumps(
                {"pid": os.getpid(), "files_done": done, "files_total": total,
                 "chunks": chunks, "started": self.started}
            )  # fmt: skip
            try:
                self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                write_private(self.path, text)
            except OSError:
                pass  # progress is a courtesy: never a reason to stop indexing

    def done(self) -> None:
        """The pass ended (or was interrupted): nothing is in progress any more."""
        self.path.unlink(missing_ok=True)


def read_progress(run_dir: Path) -> dict[str, Any] | None:
    """The pass in progress, if its process still runs; None otherwise."""
    try:
        data = json.loads((run_dir / PassProgress.FILE).read_text(encoding="utf-8"))
        os.kill(int(data["pid"]), 0)  # a pass killed -9 leaves its file behind
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if isinstance(data, dict) else None
