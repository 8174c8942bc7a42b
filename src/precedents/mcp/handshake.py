"""What the SDK's server answers to the MCP handshake, captured from the SDK itself.

:mod:`precedents.mcp.front` answers ``initialize``, ``tools/list`` and the
other fixed lists from :mod:`precedents.mcp.answers` while the SDK (0.7 s of
CPU to import) is still loading. Those answers are written by this module,
from the real server (``precedents.mcp.server.serve``, no front) over its real
stdio, once per protocol version the handshake can agree on; a test captures
them again and compares, so a changed tool, docstring or SDK cannot go
unnoticed. After changing any of them:

    .venv/bin/python -m precedents.mcp.handshake   # rewrites mcp/answers.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from precedents.mcp.front import LISTS, sdk_version

ANSWERS_FILE = Path(__file__).with_name("answers.py")
CLIENT = {"name": "precedents-handshake-capture", "version": "0"}
_SDK_SERVER = "from precedents.mcp.server import serve; serve()"


def _session(version: str) -> list[dict[str, Any]]:
    """The lines a client sends: initialize at ``version``, initialized, then the lists."""
    init = {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT}
    lines: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    lines += [{"jsonrpc": "2.0", "id": i, "method": m} for i, m in enumerate(LISTS, 1)]
    return lines


def capture(versions: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The SDK server's results to :func:`_session`, by protocol version (one fresh
    server per version, all at once)."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    wanted = versions or tuple(HANDSHAKE_PROTOCOL_VERSIONS)
    with tempfile.TemporaryDirectory(prefix="precedents-handshake-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
        env["PRECEDENTS_HOME"] = str(Path(tmp) / "state")
        procs = {
            v: subprocess.Popen(
                [sys.executable, "-c", _SDK_SERVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=tmp,
            )
            for v in wanted
        }
        results = {v: _results(proc, v) for v, proc in procs.items()}
    return {"sdk": sdk_version(), "latest": LATEST_HANDSHAKE_VERSION, "versions": results}


def _results(proc: subprocess.Popen[bytes], version: str) -> dict[str, Any]:
    session = _session(version)
    text = b"".join(json.dumps(m).encode() + b"\n" for m in session)
    out, err = proc.communicate(text, timeout=120)
    by_id = {}
    for line in out.splitlines():
        reply = json.loads(line)
        by_id[reply.get("id")] = reply
    methods = {m["id"]: m["method"] for m in session if "id" in m}
    if len(by_id) != len(methods) or any("result" not in r for r in by_id.values()):
        raise RuntimeError(f"the SDK server did not answer the handshake: {out!r} {err[-500:]!r}")
    return {methods[i]: by_id[i]["result"] for i in methods}


def write(answers: dict[str, Any], path: Path = ANSWERS_FILE) -> None:
    """Write ``answers`` as the module :mod:`precedents.mcp.answers`."""
    text = json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=True)
    if "'''" in text or "\\'" in text:
        raise ValueError("the answers hold a triple quote: cannot be written as a raw string")
    path.write_text(
        '"""The SDK server\'s answers to the MCP handshake (generated: do not edit).\n\n'
        "Written by ``python -m precedents.mcp.handshake``; tests/test_mcp_front.py\n"
        'captures them again from the SDK and compares."""\n\n'
        "# ruff: noqa: E501\n\n"
        f"ANSWERS_JSON = r'''{text}'''\n",
        encoding="utf-8",
    )


def main() -> int:
    """Capture the answers and rewrite :mod:`precedents.mcp.answers`."""
    answers = capture()
    write(answers)
    print(f"{ANSWERS_FILE}: {len(answers['versions'])} protocol versions, SDK {answers['sdk']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
