"""``python -m precedents.query_daemon``: the daemon as the hook starts it in the background.

No typer, no output (the hook sends it to nowhere): settings, file logging,
serve. A second start while one runs exits 0 quietly, since several hooks may
race to start it.
"""

from __future__ import annotations

import logging
import os
import sys

# One BLAS thread, set before numpy loads OpenBLAS. A question's ranking is one
# matrix-vector product (30,000 org records: 44 MiB read). Split over two threads, it
# waits whenever the second thread is not scheduled. On a busy 2-CPU machine that
# wait is a whole time slice: the org ranking's p50 measured 8.0 ms with two threads
# and 2.3 ms with one (bench/org_hook.py, docs/org.md "Measured").
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> int:
    """Serve until idle; 0 when another daemon already runs, 1 on an error, 2 on a wrong
    setting (one line on stderr, and in the log for a wrong setting)."""
    from precedents.config import Settings, load_settings, private_umask, state_dir
    from precedents.errors import ConfigError, PrecedentsError
    from precedents.query_daemon.server import DaemonRunning, configure_logging, serve

    private_umask()
    try:
        settings = load_settings()
    except ConfigError as exc:
        # The hook started it with nowhere to print: its log says why it would not
        # start (a wrong setting), once; the hook's spawn stamp keeps it from retrying.
        configure_logging(Settings(home=state_dir()))
        logging.getLogger("precedents.daemon").error(
            "daemon %d exited (error: %s)", os.getpid(), exc
        )
        print(f"precedents: {exc}", file=sys.stderr)
        return 2
    try:
        configure_logging(settings)
        reason = serve(settings)
    except DaemonRunning:
        return 0
    except PrecedentsError as exc:  # a full disk included (DiskFull): one line
        print(f"precedents: {exc}", file=sys.stderr)
        return 1
    if reason.startswith("error"):
        print(f"precedents: daemon stopped: {reason.removeprefix('error: ')}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
