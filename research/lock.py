"""Write research/requirements.lock: every package the research installs, pinned, with hashes.

    .venv/bin/python research/lock.py        (make research-lock; needs pip >= 25.1)

pip resolves (``pip lock``, PEP 751) the requirements of precedents with its
``torch`` extra and of precedents-research with its ``test`` extra, read from
the two pyproject.toml files, but not the two projects themselves: they are
installed from their folders, editable and without dependencies, after the lock
(``make research-install``). The resolution is written in pip's requirements
format, one ``name==version`` with its hashes a line, so that a plain
``pip install -r research/requirements.lock`` installs exactly it, hash-checked,
wherever the same files are served. Like every pip lock it holds for this
machine's Python and platform (CPython 3.11, Linux x86-64), and torch is the CPU
build from the machine's wheel folder.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

RESEARCH = Path(__file__).resolve().parent
REPO = RESEARCH.parent
LOCK = RESEARCH / "requirements.lock"
LOCAL = ("precedents", "precedents-research")


def local(requirement: str) -> bool:
    """Whether ``requirement`` names one of the two projects of this repository."""
    name = requirement.split(";")[0].split("[")[0]
    for sep in "<>=!~ ":
        name = name.split(sep)[0]
    return name.strip().lower().replace("_", "-") in LOCAL


def requirements() -> list[str]:
    """The third-party requirements of precedents[torch] and precedents-research[test]."""
    product = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    research = tomllib.loads((RESEARCH / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = [
        *product["dependencies"],
        *product["optional-dependencies"]["torch"],
        *research["dependencies"],
        *research["optional-dependencies"]["test"],
    ]
    return [r for r in dict.fromkeys(wanted) if not local(r)]


def lock_lines(pylock: dict[str, object]) -> list[str]:
    """pip's PEP 751 lock as requirement lines: ``name==version --hash=...`` per package."""
    lines = []
    packages = pylock["packages"]
    assert isinstance(packages, list)
    for package in sorted(packages, key=lambda p: str(p["name"]).lower()):
        files = [*package.get("wheels", []), *([package["sdist"]] if "sdist" in package else [])]
        hashes = sorted({f"{algo}:{value}" for f in files for algo, value in f["hashes"].items()})
        pins = [f"{package['name']}=={package['version']}", *(f"--hash={h}" for h in hashes)]
        lines.append(" \\\n    ".join(pins))
    return lines


def main() -> int:
    wanted = requirements()
    with tempfile.TemporaryDirectory() as tmp:
        reqs, pylock = Path(tmp) / "requirements.in", Path(tmp) / "pylock.toml"
        reqs.write_text("\n".join(wanted) + "\n", encoding="utf-8")
        command = [sys.executable, "-m", "pip", "lock", "-q", "-r", str(reqs), "-o", str(pylock)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            sys.stderr.write(done.stdout + done.stderr)
            return done.returncode
        resolved = tomllib.loads(pylock.read_text(encoding="utf-8"))
    header = [
        "# The research's third-party packages, resolved by `pip lock` from:",
        *(f"#   {r}" for r in wanted),
        "# Written by research/lock.py (make research-lock); do not edit by hand.",
        "# Install: pip install -r research/requirements.lock, then",
        "#          pip install --no-deps -e . -e research (make research-install).",
    ]
    LOCK.write_text("\n".join([*header, *lock_lines(resolved)]) + "\n", encoding="utf-8")
    print(f"wrote {LOCK.relative_to(REPO)}: {len(resolved['packages'])} packages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
