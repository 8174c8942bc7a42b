"""Pull the organisation's served version into ``<org_dir>`` (`precedents org pull`, the daemon).

    python -m precedents.org.pull URI      # the daemon's background child

One pull: read the pointer; when it names the version already held, stop there
(one small read, no byte copied). Otherwise mirror the version's new files
(:mod:`.mirror`), export them to the daemon's snapshot file in a child process
(``python -m precedents.org.snapshot``: Lance's memory goes back to the system),
under a temporary name renamed over :data:`ORG_SNAPSHOT` (the daemon's refresh
sees the old file or the new one, never half of one), then drop the files the
version does not need. :data:`ORG_STATUS` records the outcome. Any failure —
unreachable, denied, not an index, too new, another model — is one line in the
status and to the caller, and the snapshot served before keeps serving.

One pull at a time per state folder (``<org_dir>/pull.lock``): `org pull` by
hand while the daemon's child pulls is told so (:class:`OrgBusy`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

from precedents.config import Settings, ensure_private_dir, load_settings, parse_model_id
from precedents.errors import OrgBusy, OrgError, PrecedentsError, UsageError, is_disk_full
from precedents.org.location import OrgLocation
from precedents.org.mirror import Mirrored, mirror, open_store, prune, read_served
from precedents.org.status import (
    BUSY_EXIT,
    MIRROR,
    ORG_SNAPSHOT,
    PULL_ROLE,
    OrgStatus,
    now_iso,
    read_status,
    record_failure,
    write_status,
)
from precedents.org.table import Served
from precedents.runlock import Claim

EXPORT_MODULE: Final = "precedents.org.snapshot"
EXPORT_LIMIT_S: Final = 600.0  # an export child still running after this is stuck


def configured(settings: Settings, uri: str | None = None) -> OrgLocation:
    """The org index's location: ``uri`` if given, else the ``org_uri`` setting."""
    value = uri or settings.org_uri
    if not value:
        raise UsageError(
            "no org index configured: set org_uri in config.toml or PRECEDENTS_ORG_URI "
            "(or name one: `precedents org pull --from URI`)"
        )
    return OrgLocation.parse(value)


def pull(settings: Settings, uri: str | None = None) -> OrgStatus:
    """Bring ``<org_dir>`` to the served version at ``uri`` (default ``org_uri``).

    Returns the new status; raises an :class:`OrgError` (one line, also recorded as
    the status's ``last_error``) when it cannot, the previous snapshot kept."""
    location = configured(settings, uri)
    org_dir = ensure_private_dir(settings.org_dir)
    claim = Claim(org_dir, PULL_ROLE)
    if not claim.acquire():
        pid = claim.holder()
        raise OrgBusy(
            f"another pull of the org index is running{f' (pid {pid})' if pid else ''}; "
            "`precedents org status` shows what it did"
        )
    try:
        return _pull(settings, location, org_dir)
    except OrgError as exc:
        record_failure(org_dir, str(location), str(exc))
        raise
    except OSError as exc:  # this machine's disk (full, unwritable): one line, recorded
        line = f"org pull: {'the disk is full' if is_disk_full(exc) else exc.strerror or exc}"
        with contextlib.suppress(OSError):
            record_failure(org_dir, str(location), line)
        raise
    finally:
        claim.release()


def _pull(settings: Settings, location: OrgLocation, org_dir: Path) -> OrgStatus:
    started = time.monotonic()
    for stale in org_dir.glob(".snapshot-pulling*"):  # a killed pull's (we hold the lock)
        stale.unlink(missing_ok=True)
    store = open_store(location)
    served = read_served(location, store)
    _same_model(location, served, settings.model)
    before = read_status(org_dir) or OrgStatus()
    held = (
        before.version == served.version
        and before.built_at == served.built_at
        and before.uri == str(location)
        and (org_dir / ORG_SNAPSHOT).is_file()
    )
    status = before if held else OrgStatus()
    if not held:
        done = mirror(location, store, served, org_dir / MIRROR)
        records = _export(done, org_dir)
        prune(done.table, done.needed)
        status = _new_status(done, records)
    status.uri = str(location)
    status.pulled_at = status.attempted_at = now_iso()
    status.bytes_copied = 0 if held else status.bytes_copied
    status.files_copied = 0 if held else status.files_copied
    status.seconds = round(time.monotonic() - started, 3)
    status.last_error = ""
    write_status(org_dir, status)
    return status


def _same_model(location: OrgLocation, served: Served, model: str) -> None:
    """The org vectors are compared with this machine's query vectors: same model only
    (a runtime variant, ``X#onnx-int8``, computes X's vectors: the same)."""
    if parse_model_id(served.model)[0] != parse_model_id(model)[0]:
        raise OrgError(
            f"org index {location}: built with model {served.model}, this machine embeds "
            f"with {model}: its records cannot be compared (set model = "
            f'"{served.model}", or ask its builders)'
        )


def _new_status(done: Mirrored, records: int) -> OrgStatus:
    served = done.served
    return OrgStatus(
        version=served.version,
        built_at=served.built_at,
        model=served.model,
        dimension=served.dimension,
        records=records,
        repositories=len(served.repos),
        changed_at=now_iso(),
        bytes_copied=done.bytes_copied,
        files_copied=done.files_copied,
        mirror_bytes=done.bytes_total,
    )


def _export(done: Mirrored, org_dir: Path) -> int:
    """The snapshot file of the mirrored version, written by a child under a temporary
    name, then renamed over the served one; its row count."""
    served = done.served
    tmp = org_dir / ".snapshot-pulling.npz"
    command = [
        sys.executable,
        "-m",
        EXPORT_MODULE,
        str(done.table),
        str(served.version),
        str(tmp),
        served.model,
        str(served.dimension),
    ]
    try:
        child = subprocess.run(
            command,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=EXPORT_LIMIT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        tmp.unlink(missing_ok=True)
        raise OrgError(f"org pull: the snapshot export ran over {EXPORT_LIMIT_S:.0f}s") from None
    if child.returncode != 0:
        tmp.unlink(missing_ok=True)
        lines = (child.stderr or "").strip().splitlines()
        raise OrgError(
            f"org pull: version {served.version} could not be exported: "
            + (lines[-1][:300] if lines else f"exit {child.returncode}")
        )
    os.replace(tmp, org_dir / ORG_SNAPSHOT)
    try:
        return int(child.stdout.split()[0])
    except (IndexError, ValueError):
        return 0


def main(argv: list[str] | None = None) -> int:
    """The daemon's child: 0 pulled, 1 failed (one line on stderr), :data:`BUSY_EXIT`
    another pull runs, 2 misuse."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m precedents.org.pull URI", file=sys.stderr)
        return 2
    try:
        status = pull(load_settings(create_home=False), args[0])
    except OrgBusy as exc:
        print(f"org pull: {exc}", file=sys.stderr)
        return BUSY_EXIT
    except (PrecedentsError, OSError) as exc:
        print(f"org pull: {exc}", file=sys.stderr)
        return 1
    print(
        f"org pull: version {status.version}, {status.records} records, "
        f"{status.bytes_copied} bytes copied in {status.seconds:.2f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
