"""Run a command with every CPU busy: ``make test-loaded`` (issue #21, item 6).

    python scripts/with_load.py [--cpus N] -- COMMAND...

Starts N processes that spin (default: one per CPU, as a browser, a build or
another agent would keep a laptop's cores busy), runs COMMAND, stops them
whatever happens (its exit, Ctrl-C, a SIGTERM from CI), and exits with
COMMAND's code. The spinners run at the same priority as the command: a test
that passes only on an idle machine fails here, not on a user's.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from types import FrameType

SPIN = "while True: pass"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 2, help="spinners")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    spinners = [
        subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.DEVNULL)
        for _ in range(max(args.cpus, 0))
    ]

    def stop(signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt(signum)

    signal.signal(signal.SIGTERM, stop)
    print(f"with_load: {len(spinners)} spinning process(es) while: {' '.join(command)}", flush=True)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130
    finally:
        for proc in spinners:
            proc.kill()
        for proc in spinners:
            proc.wait()


if __name__ == "__main__":
    sys.exit(main())
