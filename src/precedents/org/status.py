"""What the last pull of the organisation's index did: ``<org_dir>/status.json``.

Written by :mod:`precedents.org.pull` (the pull itself, or the daemon when it had
to stop a hung pull), read by `precedents org status`, `precedents status` and
the daemon, which decides from it whether a SessionStart calls for a pull. Standard
library only: the daemon imports this module, and must not import pyarrow, Lance
or obstore for it. The URI is stored as shown (masked): never a credential.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

# In Settings.org_dir: the file the pull writes and the daemon reads, this status,
# and the mirrored copy of the served version (mirror/chunks.lance). The first two
# are precedents.org.snapshot's names too (a test checks they agree): spelled here
# as well so that the daemon reads the status without importing the export's module.
ORG_SNAPSHOT: Final = "snapshot.npz"
ORG_STATUS: Final = "status.json"
MIRROR: Final = "mirror"
PULL_ROLE: Final = "pull"  # <org_dir>/pull.lock, held by the pull running, and pull.pid
# A pull's exit status when another pull holds the lock (the daemon's child: not an error).
BUSY_EXIT: Final = 3
PULL_LOG: Final = "org-pull.log"  # in Settings.log_dir: the daemon's pull children write here


@dataclass
class OrgStatus:
    """The served version this machine holds, and how the last pull went."""

    uri: str = ""  # as shown (masked)
    version: int | None = None  # the Lance version the snapshot holds; None: none pulled yet
    built_at: str = ""  # when the build served it (ISO 8601, UTC)
    model: str = ""
    dimension: int = 0
    records: int = 0
    repositories: int = 0
    pulled_at: str = ""  # the last pull that succeeded (found the served version, or copied it)
    changed_at: str = ""  # when the snapshot last changed
    attempted_at: str = ""  # the last pull, whatever its outcome
    bytes_copied: int = 0  # by the last pull that succeeded
    files_copied: int = 0
    mirror_bytes: int = 0  # the served version's files on this machine
    seconds: float = 0.0  # the last pull's duration
    last_error: str = ""  # one line, "" when the last pull succeeded

    def to_json(self) -> dict[str, Any]:
        """The status as JSON data (`org status --json`, `status --json`)."""
        return asdict(self)

    def age_s(self, now: datetime | None = None) -> float | None:
        """Seconds since the last pull that succeeded; None when none has."""
        return _since(self.pulled_at, now)

    def due(self, every_s: float, now: datetime | None = None) -> bool:
        """Whether a pull is due: none tried for ``every_s`` seconds (a failed try counts:
        an unreachable storage is not asked at every session start)."""
        since = _since(self.attempted_at, now)
        return since is None or since >= every_s


def now_iso() -> str:
    """The time now, as the status records it (ISO 8601, UTC, seconds)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _since(stamp: str, now: datetime | None) -> float | None:
    if not stamp:
        return None
    try:
        then = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return max(((now or datetime.now(UTC)) - then).total_seconds(), 0.0)


def read_status(org_dir: Path) -> OrgStatus | None:
    """The status in ``org_dir``; None when there is none (or it cannot be read: a torn
    or foreign file is treated as no pull yet, and the next pull rewrites it)."""
    try:
        raw = json.loads((org_dir / ORG_STATUS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict):
        return None
    known = {f.name for f in fields(OrgStatus)}
    try:
        return OrgStatus(**{k: v for k, v in raw.items() if k in known})
    except TypeError:
        return None


def write_status(org_dir: Path, status: OrgStatus) -> None:
    """Write ``status`` atomically, 0600: a reader sees the old file or the new one."""
    org_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".status-", suffix=".json", dir=org_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(status.to_json(), out, indent=1, sort_keys=True)
        os.replace(tmp, org_dir / ORG_STATUS)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def record_failure(org_dir: Path, uri: str, error: str) -> OrgStatus:
    """Keep what was pulled before; note this attempt and its one-line error."""
    status = read_status(org_dir) or OrgStatus()
    status.uri = uri
    status.attempted_at = now_iso()
    status.last_error = error
    write_status(org_dir, status)
    return status


def described(org_dir: Path, configured: str) -> dict[str, Any] | None:
    """What `org status` and `status` show: the configured URI (``configured``, masked by
    the caller), the version held, its age, records, repositories, the last error, the pid
    of a pull running now; None when none is configured and none was ever pulled."""
    status = read_status(org_dir)
    if not configured and status is None:
        return None
    held = status or OrgStatus()
    return {
        **held.to_json(),
        "configured": configured,
        "age_s": held.age_s(),
        "pulling": pulling(org_dir),
    }


def pulling(org_dir: Path) -> int | None:
    """The pid of the pull running now (it holds ``pull.lock``: precedents.runlock's
    flock), 0 when its pid is unknown; None when none runs."""
    lock = org_dir / f"{PULL_ROLE}.lock"
    try:
        import fcntl
    except ImportError:  # Windows: not told
        return None
    try:
        with lock.open("r") as fh:
            try:
                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                try:
                    return int((org_dir / f"{PULL_ROLE}.pid").read_text().strip())
                except (OSError, ValueError):
                    return 0
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
    except OSError:
        return None
    return None
