"""Planted secrets never reach a state file or an output (issue #20, goal: 0 of >= 40).

Secrets are planted in note, rule and ADR content, front matter and titles,
conversation logs (pasted by the user, echoed by the assistant before and
after, read by a tool), as passphrases, URL userinfo, connection strings,
command lines, and in file and folder names. Then the real pipeline runs:
`precedents reindex` (CLI subprocess, bundled model, LanceDB on disk), the
daemon as a subprocess (it exports cache/snapshot.npz), the hook as Claude
Code runs it (prompt, file and SessionStart modes), `query --json`,
`query --auto`, `why --json`, `status`, and a real MCP client (`recall`,
`adr_find`, `adr_status`, `remember`). Every byte of every file under the
state folder (zip members of the snapshot opened too) and every output is
searched for every planted value: none may be found.

Positive control: each indexed file carries a plain canary word, which must
be found in the state files' bytes (so the search can see what is stored),
and each withheld file a canary that must not be found (it was never read).
"""

from __future__ import annotations

import asyncio
import json
import random
import string
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("tests.conftest_daemon")
from tests.conftest_daemon import (  # noqa: E402 - after the rewrite registration
    file_json,
    hook_env,
    prompt_json,
    run_hook,
    running_daemon,
)

pytest_plugins = ["tests.conftest_daemon"]

_RNG = random.Random(20_20)
_ALNUM = string.ascii_letters + string.digits


def _digits(n: int) -> str:
    return "".join(_RNG.choice(string.digits) for _ in range(n))


def _aws_id() -> str:
    return "AKIA" + "".join(_RNG.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") for _ in range(16))


def _token(n: int, alphabet: str = _ALNUM) -> str:
    """Random characters with upper, lower and a digit, as real keys have."""
    while True:
        token = "".join(_RNG.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in token) and token.lower() != token != token.upper():
            return token


@dataclass
class Planted:
    """Every planted secret, by where it was planted."""

    secrets: dict[str, str] = field(default_factory=dict)  # value -> where
    indexed_canaries: list[str] = field(default_factory=list)
    withheld_canaries: list[str] = field(default_factory=list)

    def add(self, where: str, value: str) -> str:
        assert value not in self.secrets, value
        self.secrets[value] = where
        return value


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _notes(root: Path, p: Planted) -> None:
    s = p.add
    _write(
        root / "redis.md",
        "# Redis cache\n\nThe session cache runs on cache01 (zebracanaryredis). "
        f"REDIS_PASSWORD={s('note env', 'Harbor-Lantern-7781')} is set in the unit file.\n",
    )
    _write(
        root / "admin.md",
        "---\nname: Admin console access\n"
        f"description: the admin password is {s('note description', 'Maple-Orbit-5521-q')}\n"
        "---\nThe admin console lives on port 8443 (zebracanaryadmin).\n",
    )
    _write(
        root / "database.md",
        "# Database connections\n\nzebracanarydatabase\n\n"
        f"- app: postgres://app:{s('URL userinfo', 'Wolf-Summer-2024x')}@db.internal:5432/app\n"
        f"- libpq: host=db user=app password={s('libpq DSN', 'Orchid-Valley-1184')} dbname=app\n"
        f"- oracle: jdbc:oracle:thin:scott/{s('JDBC userinfo', 'Tiger-Lake-7734')}@db:1521:orcl\n",
    )
    _write(
        root / "sqlserver.md",
        "# SQL Server\n\nzebracanarysqlserver\n\n"
        f"Server=sql01;Database=app;User Id=sa;Password={s('ADO string', 'Quartz Meadow 8812')};\n"
        "Driver={ODBC Driver 18};Server=sql02;Uid=sa;"
        f"Pwd={{{s('ODBC', 'Copper-Falcon-3390')}}};\n",
    )
    _write(
        root / "cli-access.md",
        "# Command-line access\n\nzebracanarycli\n\n"
        f"    mysql -u root -p{s('mysql -p', 'River-Stone-6620')} app\n"
        f"    redis-cli -h cache01 -a {s('redis-cli -a', 'Lunar-Basket-2287')} ping\n"
        f"    sshpass -p {s('sshpass -p', 'Cobalt-Meadow-4416')} ssh deploy@web01\n"
        f"    curl -u deploy:{s('curl -u', 'Ember-Cactus-9051')} https://ci.example.com/api\n"
        f"    psql --password {s('--password', 'Saffron-Glacier-7719')} -h db\n",
    )
    _write(
        root / "vpn.md",
        "# VPN and wifi\n\nzebracanaryvpn\n\n"
        f"Use password {s('password <value>', 'Tulip-Engine-4471')} for the VPN. "
        f"The wifi passphrase is '{s('quoted passphrase', 'velvet thunder orchard lamp')}'.\n",
    )
    aws_secret = _token(40, _ALNUM + "+/")
    _write(
        root / "tokens.md",
        f"---\nname: CI token {s('note name', 'glpat-' + _token(20))}\n"
        "description: tokens the CI uses\n---\nzebracanarytokens\n\n"
        f"GitHub: {s('vendor token', 'ghp_' + _token(36))}\n"
        f"aws_access_key_id = {s('AWS key id', _aws_id())}\n"
        f"aws_secret_access_key = {s('AWS secret', aws_secret)}\n"
        f"Authorization: Bearer {s('bearer header', _token(48))}\n",
    )
    key_lines = [_token(64, _ALNUM + "+/") for _ in range(4)]
    s("private key line", key_lines[1])
    _write(
        root / "signing.md",
        "# Release signing\n\nzebracanarysigning\n\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "\n".join(key_lines)
        + "\n-----END OPENSSH PRIVATE KEY-----\n",
    )
    # Names: a file and folders whose names carry a secret (issue's memory/token-hf_….md).
    _write(root / f"token-{s('file name', 'hf_' + _token(34))}.md", "# HF\n\nwithheldcanaryhf\n")
    aws_folder = s("folder name", _aws_id())
    _write(root / aws_folder / "deploy-keys.md", "# Keys\n\nwithheldcanaryaws\n")
    _write(
        root / f"password={s('file name key=value', 'Velvet-Anchor-6604')}.md",
        "# pw\n\nwithheldcanarypw\n",
    )
    slack = s("folder name", "xoxb-" + _digits(12) + "-" + _token(24))
    _write(root / f"team-{slack}" / "oncall.md", "# Oncall\n\nwithheldcanaryslack\n")
    p.indexed_canaries += [
        f"zebracanary{n}"
        for n in ("redis", "admin", "database", "sqlserver", "cli", "vpn", "tokens", "signing")
    ]
    p.withheld_canaries += ["withheldcanaryhf", "withheldcanaryaws", "withheldcanarypw"]
    p.withheld_canaries.append("withheldcanaryslack")


def _rules(root: Path, p: Planted) -> None:
    s = p.add
    slack = "xoxb-" + _digits(12) + "-" + _digits(13) + "-" + _token(24)
    _write(
        root / "deploy-rules.md",
        "# Deploy rules\n\nzebracanarydeployrules\n\n"
        f"Never commit SLACK_BOT_TOKEN={s('rule env', slack)}.\n"
        f"The staging password is {s('rule prose', 'Coral-Violin-3307')}.\n",
    )
    _write(
        root / "keystore.mdc",
        "---\ndescription: Android keystore\nalwaysApply: true\n---\nzebracanarykeystore\n\n"
        f"keytool -list -storepass {s('keytool', 'Juniper-Wharf-8830')}\n"
        f"ANTHROPIC_API_KEY={s('rule vendor key', 'sk-ant-api03-' + _token(80, _ALNUM + '-_'))}\n",
    )
    _write(root / f"{s('rule file name', 'ghp_' + _token(36))}.md", "# GH\n\nwithheldcanaryrule\n")
    p.indexed_canaries += ["zebracanarydeployrules", "zebracanarykeystore"]
    p.withheld_canaries.append("withheldcanaryrule")


def _adrs(root: Path, p: Planted) -> None:
    s = p.add
    _write(
        root / "0001-use-mongodb-atlas.md",
        "# 1. Use MongoDB Atlas\n\nDate: 2024-03-01\n\n## Status\n\nAccepted\n\n## Decision\n\n"
        "zebracanaryatlas. Connect with "
        f"mongodb+srv://svc:{s('ADR URL userinfo', 'Granite-Pepper-6628')}@cluster0.example.net/ "
        "and report from "
        "Data Source=rpt;Initial Catalog=x;User ID=u;"
        f"Password={s('ADR ADO', 'Plum-Harvest-4093')};\n",
    )
    stripe = s("ADR title", "sk_" + "live_" + _token(24))
    _write(
        root / "0002-rotate-the-stripe-key.md",
        f"# 2. Rotate the Stripe key {stripe}\n\nDate: 2024-05-02\n\n## Status\n\nAccepted\n\n"
        "## Decision\n\nzebracanarystripe. Rotate it every quarter.\n",
    )
    _write(
        root / f"0003-revoke-{s('ADR file name', 'sk_' + 'live_' + _token(24))}.md",
        "# 3. Revoke\n\nDate: 2024-06-01\n\n## Status\n\nAccepted\n\nwithheldcanaryadr\n",
    )
    p.indexed_canaries += ["zebracanaryatlas", "zebracanarystripe"]
    p.withheld_canaries.append("withheldcanaryadr")


def _line(kind: str, body: dict[str, Any], n: int, cwd: Path) -> str:
    base = {
        "type": kind,
        "uuid": f"u{n}",
        "sessionId": "sess-planted",
        "cwd": str(cwd),
        "timestamp": f"2024-07-01T10:{n:02d}:00Z",
        "entrypoint": "cli",
    }
    return json.dumps({**base, **body})


def _conversation(folder: Path, project: Path, p: Planted) -> None:
    s = p.add
    ghp = s("conversation vendor token", "ghp_" + _token(36))
    openai = s("tool output vendor key", "sk-proj-" + _token(60, _ALNUM + "-_"))
    turns: list[tuple[str, Any]] = [
        ("user", "why does the login fail on staging? zebracanaryconversation"),
        ("text", f"Maybe {s('echo before the secret', 'Pebble-Tundra-3195')} is stale."),
        (
            "user",
            f"set DB_PASSWORD=Pebble-Tundra-3195 and "
            f"REDIS_PASSWORD={s('pasted env', 'Iris-Compass-5170')}",
        ),
        ("text", "Done: Iris-Compass-5170 for redis, Pebble-Tundra-3195 for the database."),
        ("user", f"the dsn is postgres://app:{s('pasted URL', 'Mango-Rocket-8843x')}@db/app"),
        ("text", "Connecting with Mango-Rocket-8843x."),
        ("tool_use", {"command": "cat .env"}),
        (
            "tool_result",
            f"STRIPE_SECRET={s('tool output', 'Walnut-Canyon-7402')}\nOPENAI_API_KEY={openai}\n",
        ),
        ("text", f"Found Walnut-Canyon-7402 and {openai} in .env."),
        ("tool_use", {"command": f"mysql -u root -p{s('tool input', 'Hazel-Tornado-5528')} app"}),
        ("tool_result", "ERROR 1045"),
        ("text", "Hazel-Tornado-5528 was refused."),
        ("user", f"the admin password is {s('pasted prose', 'Fjord-Saddle-2261-k')}"),
        ("text", "Noted: Fjord-Saddle-2261-k."),
        ("user", f"the wifi passphrase is '{s('pasted passphrase', 'amber falcon river stone')}'"),
        ("text", "ok, amber falcon river stone it is."),
        ("user", f"my token is {ghp}"),
        ("text", f"I'll use {ghp} for the push."),
        ("user", f"the api key is {s('pasted api key', 'Saturn-Kettle-7740')}"),
        ("text", "Saturn-Kettle-7740 saved in the vault."),
    ]
    lines = [
        json.dumps(
            {"type": "ai-title", "aiTitle": "Fix the staging login with Fjord-Saddle-2261-k"}
        )
    ]
    for n, (kind, value) in enumerate(turns):
        if kind == "user":
            body = {"message": {"role": "user", "content": value}}
            lines.append(_line("user", body, n, project))
        elif kind == "text":
            block = {"type": "text", "text": value}
            message = {"id": f"m{n}", "role": "assistant", "model": "claude", "content": [block]}
            lines.append(_line("assistant", {"message": message}, n, project))
        elif kind == "tool_use":
            block = {"type": "tool_use", "id": f"t{n}", "name": "Bash", "input": value}
            message = {"id": f"m{n}", "role": "assistant", "model": "claude", "content": [block]}
            lines.append(_line("assistant", {"message": message}, n, project))
        else:
            block = {"type": "tool_result", "tool_use_id": f"t{n - 1}", "content": value}
            body = {"message": {"role": "user", "content": [block]}}
            lines.append(_line("user", body, n, project))
    _write(folder / "8f2c1a9e-4b3d-4c2a-9e1f-0a1b2c3d4e5f.jsonl", "\n".join(lines) + "\n")
    name = s("conversation file name", "glpat-" + _token(20))
    _write(
        folder / f"{name}.jsonl",
        _line("user", {"message": {"role": "user", "content": "withheldcanaryconv"}}, 0, project),
    )
    p.indexed_canaries.append("zebracanaryconversation")
    p.withheld_canaries.append("withheldcanaryconv")


def _cli(
    home: Path, cwd: Path, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
        check=False,
    )


async def _mcp_calls(
    env: dict[str, str], cwd: Path, calls: list[tuple[str, dict[str, Any]]]
) -> list[str]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable, args=["-m", "precedents.cli", "mcp"], env=env, cwd=str(cwd)
    )
    out: list[str] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for name, args in calls:
            result = await session.call_tool(name, args)
            out.append(json.dumps(result.model_dump(mode="json"), ensure_ascii=False))
    return out


def _state_bytes(home: Path) -> dict[str, bytes]:
    """Every file under the state folder, and each member of a zip (the snapshot)."""
    found: dict[str, bytes] = {}
    for path in sorted(home.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        found[str(path)] = data
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                for member in zf.namelist():
                    found[f"{path}!{member}"] = zf.read(member)
    return found


def _forms(value: str) -> list[bytes]:
    """How a value may sit in a file: UTF-8, JSON-escaped, UTF-16 (numpy's str arrays
    are UTF-32, also searched), and with its spaces as in a one-line title."""
    return [
        value.encode(),
        json.dumps(value)[1:-1].encode(),
        value.encode("utf-16-le"),
        value.encode("utf-32-le"),
    ]


@pytest.mark.slow
def test_no_planted_secret_reaches_a_state_file_or_an_output(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    planted = Planted()
    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    notes, rules, adrs = project / "notes", project / "rules", project / "docs" / "adr"
    convs = tmp_path / "logs"
    _notes(notes, planted)
    _rules(rules, planted)
    _adrs(adrs, planted)
    _conversation(convs, project, planted)
    home = tmp_path / "state"
    claude = tmp_path / "claude"
    claude.mkdir()
    env = hook_env(home, PRECEDENTS_CLAUDE_DIR=str(claude))
    folders = ["--notes", str(notes), "--rules", str(rules), "--adrs", str(adrs)]
    folders += ["--conversations", str(convs), "--project", str(project)]

    outputs: dict[str, str] = {}

    def keep(name: str, proc: subprocess.CompletedProcess[str]) -> None:
        outputs[name] = proc.stdout + proc.stderr

    first = _cli(home, project, env, "reindex", *folders, "--json")
    keep("reindex --json", first)
    assert first.returncode == 0, first.stderr
    report = json.loads(first.stdout)
    assert report["files_indexed"] == 13, report
    withheld = [x for x in report["problems"] if "a secret in" in x["reason"]]
    assert len(withheld) == 7, report["problems"]
    keep("reindex", _cli(home, project, env, "reindex", *folders))
    keep("status --json", _cli(home, project, env, "status", "--json"))
    status = json.loads(outputs["status --json"])
    assert len(status["withheld_paths"]) == 7
    keep("status", _cli(home, project, env, "status"))
    assert "withheld: 7 not indexed, a secret in the path (masked)" in outputs["status"]
    assert outputs["reindex"].count("a secret in") == 7  # each named, masked

    prompts = [
        "how do I connect to the redis session cache?",
        "what is the admin console password?",
        "how do I connect to the sql server database?",
        "how do I get on the VPN and the wifi?",
        "which token does the CI use for GitHub?",
        "why did we pick MongoDB Atlas?",
        "when do we rotate the Stripe key?",
        "why did the staging login fail last time?",
        "what are the deploy rules for the slack bot token?",
    ]
    with running_daemon(home):
        for n, prompt in enumerate(prompts):
            proc = run_hook(home, prompt_json(prompt, project, f"s{n}"), cwd=project)
            outputs[f"hook prompt {n}"] = (proc.stdout + proc.stderr).decode()
        for n, target in enumerate([adrs / "0002-rotate-the-stripe-key.md", notes / "redis.md"]):
            proc = run_hook(home, file_json(target, project, f"f{n}"), "file", cwd=project)
            outputs[f"hook file {n}"] = (proc.stdout + proc.stderr).decode()
        start = {"session_id": "ss", "cwd": str(project), "hook_event_name": "SessionStart"}
        proc = run_hook(home, json.dumps({**start, "source": "startup"}).encode(), "session")
        outputs["hook session"] = (proc.stdout + proc.stderr).decode()
        for n, prompt in enumerate(prompts):
            keep(f"query {n}", _cli(home, project, env, "query", "--json", "-k", "50", prompt))
            keep(f"query --auto {n}", _cli(home, project, env, "query", "--auto", prompt))
        every = json.loads(
            _cli(home, project, env, "query", "--json", "--all", "-k", "50", "x y").stdout
        )
        assert len(every["results"]) == 13  # every indexed file is one document
        remembered = "the backup passphrase is 'copper lantern meadow tide'"
        planted.add("remember", "copper lantern meadow tide")
        calls = [
            ("recall", {"query": prompt, "project": str(project), "k": 50}) for prompt in prompts
        ]
        calls += [
            ("adr_find", {"words": "the", "dir": str(adrs)}),
            ("adr_find", {"words": "stripe", "dir": str(adrs)}),
            ("adr_status", {"id": "2", "dir": str(adrs)}),
            ("adr_chain", {"id": "1", "dir": str(adrs)}),
            ("remember", {"text": remembered, "project": str(project)}),
            ("recall", {"query": "backup passphrase", "project": str(project), "k": 50}),
        ]
        for n, text in enumerate(asyncio.run(_mcp_calls(env, project, calls))):
            outputs[f"mcp {calls[n][0]} {n}"] = text
        keep("why --json", _cli(home, project, env, "why", "--json", "-n", "50"))
        keep("why", _cli(home, project, env, "why", "-n", "50"))
        state = _state_bytes(home)  # the daemon removes its snapshot when it stops
    keep("status after", _cli(home, project, env, "status"))
    state.update(_state_bytes(home))
    assert any(name.endswith("snapshot.npz") for name in state), sorted(state)
    assert any("daemon.log" in name for name in state), sorted(state)
    # The search sees what is stored: every indexed canary is in the store's bytes...
    stored = b"".join(state.values())
    missing = [c for c in planted.indexed_canaries if c.encode() not in stored]
    assert not missing, missing
    # ...and the outputs did show the records that carried the secrets.
    shown = "\n".join(outputs.values())
    assert "Admin console access" in shown and "[MASKED:" in shown
    # Withheld files were never read.
    read = [c for c in planted.withheld_canaries if c.encode() in stored or c in shown]
    assert not read, read

    assert len(planted.secrets) >= 40
    found: list[tuple[str, str]] = []
    for value, where in planted.secrets.items():
        for name, data in state.items():
            if any(form in data for form in _forms(value)):
                found.append((where, name))
        for name, text in outputs.items():
            if value in text or json.dumps(value)[1:-1] in text:
                found.append((where, name))
    print(f"planted secrets: {len(planted.secrets)}; found in state files or outputs: {len(found)}")
    print(f"state files searched: {len(state)}; outputs searched: {len(outputs)}")
    assert found == [], found
