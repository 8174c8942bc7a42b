"""Build the ``decisions`` dev set: past chats that settled a rule, and symptom-only reports.

The set (``tests/fixtures/decisions/`` by default) is an eval set folder in the
documented format (docs/eval.md): ``conversations/*.jsonl`` (Claude Code 2.x
transcripts, all about one real codebase, urllib3), ``messages.jsonl`` (labelled
messages), ``SOURCE.md``, ``README.md`` and ``LICENSES/``.

Two kinds of chat:

* *deciding* chats, hand-written in ``research/data/decisions/tasks.json``: a rule
  for the codebase is settled in one exchange (grounded in a real decision of the
  project: its changelog, its code comments); some tasks have a later chat that
  amends the rule (``chats`` in date order; the last one is the live decision);
* *decoy* chats, made here from real material of the same codebase (module and
  function names, docstrings, comments, commit subjects, changelog lines), which
  ``research/data/decisions/material.json`` holds (``--extract`` writes it from a
  fetched urllib3 mirror). Some decoys are about the modules the deciding chats
  are about (hard negatives); none settles anything.

Standard library only. Everything is derived from ``--seed``: the same arguments
write the same bytes. A deciding chat's ids and times depend only on its task, and
decoy ``i`` only on ``i``, so ``--decoys 1000`` writes a superset of the default set.

    python research/precedents_research/decisions_set.py --out DIR [--decoys N] [--seed S]
    python research/precedents_research/decisions_set.py --extract GIT_DIR
"""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import random
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RESEARCH = Path(__file__).resolve().parents[1]
REPO = RESEARCH.parent
DATA = RESEARCH / "data" / "decisions"
# The committed set: the urllib3 modules its tasks name live there (and only there).
MODULES = RESEARCH.parent / "tests" / "fixtures" / "decisions"
DEFAULT_OUT = REPO / "tests" / "fixtures" / "decisions"
DEFAULT_DECOYS = 120
DEFAULT_SEED = 27
CWD = "/work/decisions-project"
MODEL = "claude-sonnet-4-5"
SOURCE_REPO = "urllib3/urllib3"
START = dt.datetime(2026, 1, 5, tzinfo=dt.UTC)
END = dt.datetime(2026, 7, 24, tzinfo=dt.UTC)
WORD = re.compile(r"[a-z0-9_']+")

# ---------------------------------------------------------------- extraction


def _git(git_dir: str, *args: str) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def _clean_doc(doc: str | None, limit: int = 900) -> str:
    """A docstring's first paragraphs, reST roles kept, whitespace tidied."""
    if not doc:
        return ""
    paragraphs = [" ".join(p.split()) for p in textwrap.dedent(doc).strip().split("\n\n")]
    kept: list[str] = []
    for p in paragraphs:
        if p.startswith((".. ", ":param", ":returns", ":raises", ">>>")) and kept:
            break
        if sum(map(len, kept)) + len(p) > limit and kept:
            break
        kept.append(p)
    return "\n\n".join(kept)[: limit + 200]


def _comments(source: str, spans: list[tuple[int, int, str]]) -> list[dict[str, Any]]:
    """Blocks of consecutive ``#`` comment lines (50+ characters), with the enclosing symbol."""
    blocks: list[dict[str, Any]] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate([*source.splitlines(), ""], 1):
        stripped = line.strip()
        if stripped.startswith("#") and not stripped.startswith(("#!", "#:")):
            if not current:
                start = number
            current.append(stripped.lstrip("#").strip())
            continue
        text = " ".join(t for t in current if t)
        current = []
        if len(text) < 50 or "type: ignore" in text or "noqa" in text or "pragma" in text:
            continue
        inside = [s for s in spans if s[0] <= start <= s[1]]
        owner = max(inside, key=lambda s: s[0])[2] if inside else ""
        blocks.append({"line": start, "text": text[:600], "owner": owner})
    return blocks


def _module(path: str, source: str) -> dict[str, Any]:
    tree = ast.parse(source)
    lines = source.splitlines()
    symbols: list[dict[str, Any]] = []
    spans: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                qual = f"{prefix}{child.name}"
                end = child.end_lineno or child.lineno
                spans.append((child.lineno, end, qual))
                entry: dict[str, Any] = {
                    "name": qual,
                    "kind": "class" if isinstance(child, ast.ClassDef) else "function",
                    "line": child.lineno,
                    "doc": _clean_doc(ast.get_docstring(child)),
                }
                if not isinstance(child, ast.ClassDef):
                    entry["args"] = [a.arg for a in child.args.args if a.arg not in {"self", "cls"}]
                    entry["args"] += [a.arg for a in child.args.kwonlyargs]
                    if 4 <= end - child.lineno <= 30:
                        first = child.decorator_list[0].lineno if child.decorator_list else 0
                        body = lines[(first or child.lineno) - 1 : end]
                        entry["source"] = textwrap.dedent("\n".join(body))
                symbols.append(entry)
                if isinstance(child, ast.ClassDef):
                    visit(child, f"{qual}.")

    visit(tree, "")
    keep = [s for s in symbols if s["doc"] or s.get("source")]
    return {
        "path": path,
        "doc": _clean_doc(ast.get_docstring(tree), 500),
        "symbols": keep,
        "comments": _comments(source, spans),
    }


def _changelog(text: str) -> list[dict[str, str]]:
    """Every bullet of CHANGES.rst with its version, reST links reduced to their label."""
    entries: list[dict[str, str]] = []
    version = ""
    bullet: list[str] = []
    lines = text.splitlines()

    def flush() -> None:
        if bullet and version:
            joined = " ".join(" ".join(bullet).split())
            joined = re.sub(r"`([^`<]+?) <[^>]+>`__?", r"\1", joined)
            if len(joined) > 30:
                entries.append({"version": version, "text": joined[:700]})
        bullet.clear()

    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if re.match(r"^\d+\.\d+(\.\d+)? \(", line) and nxt.startswith("==="):
            flush()
            version = line.strip()
        elif line.startswith(("- ", "* ")):
            flush()
            bullet.append(line[2:])
        elif bullet and line.startswith("  ") and line.strip():
            bullet.append(line.strip())
        else:
            flush()
    flush()
    return entries


def extract(git_dir: str) -> dict[str, Any]:
    """Real material of urllib3 at the mirror's HEAD (``research/data/decisions/material.json``)."""
    head = _git(git_dir, "log", "-1", "--format=%H%x09%cI%x09%s").strip().split("\t")
    files = _git(git_dir, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    wanted = [f for f in files if f.startswith("src/urllib3/") and f.endswith(".py")]
    wanted.append("noxfile.py")
    modules = [_module(f, _git(git_dir, "show", f"HEAD:{f}")) for f in sorted(wanted)]
    log = _git(
        git_dir,
        "log",
        "--no-merges",
        "--format=%h%x09%ad%x09%s",
        "--date=short",
        "HEAD",
        "--",
        "src/",
        "noxfile.py",
        "test/",
    ).splitlines()
    commits = []
    for row in log:
        sha, date, subject = row.split("\t", 2)
        if re.match(r"(Bump|\[pre-commit|Release |Merge )", subject):
            continue
        commits.append({"sha": sha, "date": date, "subject": subject})
        if len(commits) >= 400:
            break
    return {
        "repository": SOURCE_REPO,
        "commit": head[0],
        "commit_date": head[1],
        "commit_subject": head[2],
        "license": _git(git_dir, "show", "HEAD:LICENSE.txt"),
        "tests": [f for f in files if re.match(r"test/(.*/)?test_[a-z0-9_]+\.py$", f)],
        "modules": modules,
        "commits": commits,
        "changelog": _changelog(_git(git_dir, "show", "HEAD:CHANGES.rst")),
    }


# ---------------------------------------------------------------- transcripts


@dataclass
class Chat:
    """One transcript: its exchanges (prompt, answer) and when it started."""

    session_id: str
    start: dt.datetime
    exchanges: list[tuple[str, str]]
    ai_title: str = ""
    rng: random.Random = field(default_factory=random.Random)  # writes its ids and times

    @property
    def file(self) -> str:
        return f"conversations/{self.session_id}.jsonl"


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) % 4]}{h[17:20]}-{h[20:]}"


def _msg_id(rng: random.Random) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "msg_01" + "".join(rng.choice(alphabet) for _ in range(22))


def _stamp(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def transcript(chat: Chat, rng: random.Random) -> str:
    """The chat as Claude Code 2.x CLI transcript lines (one JSON object per line)."""
    lines: list[dict[str, Any]] = []
    when = chat.start
    parent: str | None = None
    base = {"cwd": CWD, "sessionId": chat.session_id, "version": "2.0.14", "gitBranch": "main"}
    for prompt, answer in chat.exchanges:
        uid = _uuid(rng)
        user = {"parentUuid": parent, "isSidechain": False, "userType": "external", **base}
        user |= {"type": "user", "entrypoint": "cli", "origin": {"kind": "human"}}
        user |= {"message": {"role": "user", "content": prompt}, "uuid": uid}
        user["timestamp"] = _stamp(when)
        lines.append(user)
        when += dt.timedelta(seconds=rng.randint(8, 75), milliseconds=rng.randint(0, 999))
        aid = _uuid(rng)
        message = {"id": _msg_id(rng), "type": "message", "role": "assistant", "model": MODEL}
        message["content"] = [{"type": "text", "text": answer}]
        message["stop_reason"] = "end_turn"
        assistant = {"parentUuid": uid, "isSidechain": False, "userType": "external", **base}
        assistant |= {"type": "assistant", "entrypoint": "cli", "message": message, "uuid": aid}
        assistant["timestamp"] = _stamp(when)
        lines.append(assistant)
        parent = aid
        when += dt.timedelta(seconds=rng.randint(40, 600), milliseconds=rng.randint(0, 999))
    if chat.ai_title:
        lines.insert(
            2, {"type": "ai-title", "aiTitle": chat.ai_title, "sessionId": chat.session_id}
        )
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)


# ---------------------------------------------------------------- decoy material

SITUATIONS = [
    "the test suite runs under pytest-xdist",
    "we run behind the corporate proxy",
    "a request is made from a background thread",
    "the server closes the connection early",
    "running the integration tests on macOS",
    "the response is streamed with preload_content=False",
    "the pool is shared between two threads",
    "I run the dummyserver tests on Windows",
    "the process forks after the pool was created",
    "the host name has a trailing dot",
]
ERRORS = [
    "a TypeError",
    "an AttributeError",
    "an AssertionError in the tests",
    "a ResourceWarning about an unclosed socket",
    "a ValueError",
    "a mypy error",
    "a flaky failure",
]
REFACTOR = [
    "pull the validation at the top into a small private helper and keep the main path flat",
    "replace the nested conditionals with early returns, which reads better here",
    "split the parsing part from the part that mutates state, so each can be tested alone",
    "keep the body as it is but name the intermediate values; the logic is already simple",
    "move the type-specific branches into a dict of handlers, though that may be overkill",
]
PERF = [
    "It runs once per request, so it only matters if you make many small requests.",
    "It is called once per chunk read, so with a small amt it adds up.",
    "It runs once per connection, which should be negligible next to the TLS handshake.",
    "Most of the time is probably in the calls it makes, not in the function itself.",
]
CI_ERRORS = [
    "a timeout in one of the socket tests",
    "'coverage failed: total of 99.8 is less than fail-under=100'",
    "a mypy error in a file I didn't touch",
    "the job was cancelled after 60 minutes",
    "'ERROR: InvocationError for command pytest'",
    "a certificate verification error against the dummyserver",
]
OPENERS = ["", "", "", "Quick question: ", "Hey, ", "Another one: ", "ok, next thing. "]


def _first_sentence(text: str) -> str:
    found = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)
    return found[0] if found else text


def _snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower()).strip("_")


def _quote(text: str) -> str:
    return "\n".join("> " + line if line else ">" for line in text.splitlines())


@dataclass
class Material:
    """The extracted material, indexed for the decoy writers."""

    data: dict[str, Any]
    avoid: list[str]  # changelog lines and commit subjects holding these are never used
    commits: set[str] = field(default_factory=set)  # commits that made a task's decision

    def __post_init__(self) -> None:
        self.modules = [m for m in self.data["modules"] if m["symbols"]]
        for module in self.modules:
            module["comments"] = [c for c in module["comments"] if not self._avoided(c["text"])]
        self.by_path = {m["path"]: m for m in self.modules}
        # Only what predates the chats (2026-01 on): no chat quotes a change from its future.
        self.changelog = [
            c
            for c in self.data["changelog"]
            if not self._avoided(c["text"]) and re.sub(r"[^\d-]", "", c["version"])[-10:] < "2026"
        ]
        self.commits = [
            c
            for c in self.data["commits"]
            if c["sha"] not in self.commits
            and not self._avoided(c["subject"])
            and c["date"] < "2026"
        ]
        self.tests = self.data["tests"]

    def _avoided(self, text: str) -> bool:
        lowered = text.lower()
        return any(a.lower() in lowered for a in self.avoid)

    def symbol(self, rng: random.Random, path: str | None = None) -> tuple[str, dict[str, Any]]:
        module = self.by_path.get(path or "") or rng.choice(self.modules)
        return module["path"], rng.choice(module["symbols"])

    def test_file(self, path: str) -> str:
        stem = Path(path).stem.lstrip("_")
        named = [t for t in self.tests if Path(t).stem == f"test_{stem}"]
        return named[0] if named else "test/test_" + stem + ".py"

    def symbol_named(self, name: str) -> tuple[str, dict[str, Any]] | None:
        for module in self.modules:
            for symbol in module["symbols"]:
                if symbol["name"] == name or symbol["name"].endswith("." + name):
                    return module["path"], symbol
        return None


def _short(path: str) -> str:
    return path.removeprefix("src/urllib3/")


def _about(symbol: dict[str, Any]) -> str:
    doc = symbol["doc"]
    if doc:
        return doc
    return "It has no docstring; the body is short enough to read directly."


def _explain(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    path, s = m.symbol(rng, path)
    name = s["name"]
    prompt = rng.choice(
        [
            f"What does `{name}` in {_short(path)} do?",
            f"I'm new to this part of the code, can you walk me through {name} in {path}?",
            f"explain {_short(path)}:{s['line']} `{name}` to me",
            f"Why does {name} exist? I can't see who calls it.",
            f"what is {name} ({_short(path)}) responsible for, in two sentences?",
        ]
    )
    kind = "class" if s["kind"] == "class" else "function"
    head = f"`{name}` is a {kind} in `{path}` (line {s['line']})"
    if s.get("args"):
        head += ", taking " + ", ".join(f"`{a}`" for a in s["args"][:6])
    parts = [head + ". From its docstring:", _quote(_about(s))]
    module = m.by_path[path]
    comments = [c for c in module["comments"] if c["owner"] == name]
    if comments:
        parts.append(f"The code also carries this comment (line {comments[0]['line']}):")
        parts.append(_quote(comments[0]["text"]))
    if s.get("source") and rng.random() < 0.5:
        parts.append("The body, for reference:\n```python\n" + s["source"] + "\n```")
    if module["doc"] and rng.random() < 0.4:
        parts.append(f"For context, the module itself is described as: “{module['doc']}”")
    parts.append(
        rng.choice(
            [
                "So in practice you only touch it when you change how that part behaves.",
                "Callers rarely use it directly; it's mostly internal plumbing.",
                "If you want, I can grep for its call sites next.",
                "That's all there is to it.",
            ]
        )
    )
    return rng.choice(OPENERS) + prompt, "\n\n".join(parts), f"Explain {name}"


def _bug(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    path, s = m.symbol(rng, path)
    name = s["name"]
    prompt = (
        f"I get {rng.choice(ERRORS)} somewhere around `{name}` ({_short(path)}) when "
        f"{rng.choice(SITUATIONS)}. Any idea where to look?"
    )
    lines = [
        f"Let's narrow it down. `{name}` is documented as: “{_first_sentence(_about(s))}”",
        rng.choice(
            [
                "The frame in the traceback is usually the caller, not this function: "
                "check what it was handed.",
                "My first guess is state left over from an earlier request on the same "
                "connection, rather than a bug in this function.",
                "This looks environment-specific; I'd reproduce it with the smallest "
                "script first before changing code.",
            ]
        ),
        f"I'd start by running `pytest {m.test_file(path)} -k {_snake(name.split('.')[-1])} -x "
        "-p no:randomly` and adding a log line at the top of the function.",
    ]
    if s.get("source") and rng.random() < 0.6:
        lines.append("Here's the body so we're looking at the same thing:")
        lines.append("```python\n" + s["source"] + "\n```")
    return prompt, "\n\n".join(lines), f"Debug error near {name}"


def _refactor(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    path, s = m.symbol(rng, path)
    for _ in range(6):
        if s.get("source"):
            break
        path, s = m.symbol(rng, None if rng.random() < 0.5 else path)
    name = s["name"]
    prompt = rng.choice(
        [
            f"Can you suggest how to restructure `{name}` in {_short(path)} without changing "
            "behaviour?",
            f"{name} is hard to read. Any cleanup you'd do?",
            f"small refactor: make {name} ({path}) easier to follow",
        ]
    )
    parts = []
    if s.get("source"):
        parts.append("Current body:\n```python\n" + s["source"] + "\n```")
    parts.append(f"I'd {rng.choice(REFACTOR)}.")
    args = ", ".join(s.get("args", [])[:6])
    parts.append(
        f"The signature `{name.split('.')[-1]}({args})` stays as it is, so callers are "
        f"unaffected, and `{m.test_file(path)}` should pass without changes. "
        "Want me to make the edit?"
    )
    return prompt, "\n\n".join(parts), f"Refactor {name}"


def _tests(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    path, s = m.symbol(rng, path)
    name = s["name"]
    short = name.split(".")[-1]
    prompt = rng.choice(
        [
            f"Add unit tests for {name} in {_short(path)}.",
            f"coverage says {name} has untested branches, can you write tests?",
            f"write a pytest for `{name}`",
        ]
    )
    test_name = _snake(short)
    params = s.get("args", [])[:3]
    call = f"{short}({', '.join(f'{p}=...' for p in params)})"
    body = (
        "```python\n"
        f"# {m.test_file(path)}\n"
        f"class Test{''.join(w.title() for w in test_name.split('_'))}:\n"
        f"    def test_{test_name}_default(self) -> None:\n"
        f"        result = {call}\n"
        "        assert result is not None\n\n"
        f"    def test_{test_name}_edge_case(self) -> None:\n"
        "        ...\n"
        "```"
    )
    parts = [
        f"Going by the docstring (“{_first_sentence(_about(s))}”), I'd cover the default path, "
        "one edge case per argument and the error path.",
        body,
        "I'll fill in the expected values after checking the existing fixtures in "
        "`test/conftest.py`.",
    ]
    return prompt, "\n\n".join(parts), f"Unit tests for {name}"


def _docs(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    path, s = m.symbol(rng, path)
    for _ in range(6):
        if s["doc"]:
            break
        path, s = m.symbol(rng)
    name = s["name"]
    prompt = rng.choice(
        [
            f"The docstring of {name} reads badly in the rendered API docs. Can you tidy it?",
            f"does the docstring of `{name}` still match what the code does?",
            f"docs: improve the wording of {name}'s docstring ({_short(path)})",
        ]
    )
    parts = [
        "Current text:",
        _quote(s["doc"] or "(none)"),
        rng.choice(
            [
                "It matches the code. I'd only make the first line a one-sentence summary "
                "and move details into the paragraphs below it.",
                "The content is right; the rendered page suffers from the long first "
                "paragraph. I'd split it and use `:param:` fields for the arguments.",
                "It's accurate. I'd add a short example, since the docs page for this "
                "module has none.",
            ]
        ),
    ]
    return prompt, "\n\n".join(parts), f"Docstring of {name}"


def _perf(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    path, s = m.symbol(rng, path)
    name = s["name"]
    prompt = (
        f"py-spy shows a lot of samples in {name} ({_short(path)}) during our load test. "
        "Is that expected?"
    )
    parts = [
        f"`{name}`: “{_first_sentence(_about(s))}” {rng.choice(PERF)}",
        "Before changing anything I'd compare against a run with a bigger pool and "
        "check whether the samples are in the function or in socket I/O below it "
        "(py-spy's `--native` helps).",
    ]
    return prompt, "\n\n".join(parts), f"Profile {name} under load"


def _comment(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    module = m.by_path.get(path or "") or rng.choice(m.modules)
    if not module["comments"]:
        module = rng.choice([x for x in m.modules if x["comments"]])
    c = rng.choice(module["comments"])
    prompt = f"What does this comment in {_short(module['path'])} mean? “{c['text']}”"
    owner = c["owner"]
    found = m.symbol_named(owner) if owner else None
    if found and found[1]["doc"]:
        answer = (
            f"It sits inside `{owner}` (line {c['line']}), which is documented as "
            f"“{_first_sentence(found[1]['doc'])}” The comment explains why the code right "
            "below it is written that way, so that nobody 'simplifies' it later."
        )
    elif found:
        answer = (
            f"It sits inside `{owner}` (line {c['line']}), which has no docstring. The "
            "comment is the only record of why the next lines look the way they do; "
            "keep it if you touch that code."
        )
    else:
        answer = (
            f"It's at module level (line {c['line']}) and explains the constant or import "
            "right below it. Nothing else depends on the wording."
        )
    return prompt, answer, f"Comment in {_short(module['path'])}"


def _commit(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    c = rng.choice(m.commits)
    prompt = rng.choice(
        [
            f"What was the point of the commit '{c['subject']}' ({c['sha']})?",
            f"git blame points to {c['sha']} '{c['subject']}'. Context?",
        ]
    )
    number = re.search(r"#(\d+)", c["subject"])
    entry = None
    if number:
        entry = next((e for e in m.changelog if f"#{number.group(1)}" in e["text"]), None)
    answer = f"That commit is from {c['date']}."
    if entry:
        answer += f" It's listed in the changelog for {entry['version']}:\n\n" + _quote(
            entry["text"]
        )
    else:
        answer += (
            " I can't find it in CHANGES.rst, so it was most likely internal (tests, typing "
            "or tooling) rather than a behaviour change. The subject says it all: "
            + c["subject"]
            + "."
        )
    return prompt, answer, f"Commit {c['sha']}"


def _changelog_line(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    e = rng.choice(m.changelog)
    prompt = f"Can you explain this line from the {e['version']} changelog? “{e['text']}”"
    names = re.findall(r"``([A-Za-z_][\w.]*)(?:\(\))?``", e["text"])
    parts = []
    for name in names:
        found = m.symbol_named(name)
        if found:
            parts.append(
                f"The code it refers to is `{found[1]['name']}` in `{found[0]}`:\n\n"
                + _quote(_about(found[1]))
            )
            break
    if not parts:
        parts.append(
            "It describes a change in behaviour or packaging; no single function carries it."
        )
    parts.append(
        rng.choice(
            [
                "It doesn't affect our code paths as far as I can see.",
                "Worth knowing when reading old bug reports, since they predate it.",
                "If you want, I can find the PR and the tests that came with it.",
            ]
        )
    )
    return prompt, "\n\n".join(parts), f"Changelog entry from {e['version'].split()[0]}"


def _ci(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    nox = m.data["modules"][[x["path"] for x in m.data["modules"]].index("noxfile.py")]
    sessions = [s for s in nox["symbols"] if s["kind"] == "function" and s["name"] != "tests_impl"]
    s = rng.choice(sessions)
    prompt = (
        f"CI failed on the `{s['name']}` nox session for my PR with {rng.choice(CI_ERRORS)}. "
        "Is it my change?"
    )
    parts = []
    if s.get("source"):
        parts.append("The session is defined as:\n```python\n" + s["source"] + "\n```")
    parts.append(
        rng.choice(
            [
                "It runs on every push, so a failure that also shows on main is not yours. "
                "Re-run the job once before digging in.",
                "Run it locally with `nox -s " + s["name"] + "` to see whether it reproduces.",
                "The main branch had the same failure yesterday; it's an upstream release "
                "that broke, not your diff.",
            ]
        )
    )
    return prompt, "\n\n".join(parts), f"CI failure in nox {s['name']}"


WRITERS = [
    (_explain, 5),
    (_bug, 3),
    (_refactor, 2),
    (_tests, 3),
    (_docs, 2),
    (_perf, 2),
    (_comment, 2),
    (_commit, 2),
    (_changelog_line, 2),
    (_ci, 1),
]


def _exchange(m: Material, rng: random.Random, path: str | None) -> tuple[str, str, str]:
    writers = [w for w, _ in WRITERS]
    weights = [n for _, n in WRITERS]
    return rng.choices(writers, weights)[0](m, rng, path)


def _when(rng: random.Random) -> dt.datetime:
    day = START + dt.timedelta(days=rng.randint(0, (END - START).days))
    while day.weekday() >= 5 and rng.random() < 0.85:
        day += dt.timedelta(days=1)
    return day.replace(
        hour=rng.randint(8, 18), minute=rng.randint(0, 59), second=rng.randint(0, 59)
    )


def decoy(m: Material, seed: int, i: int, hot: list[str]) -> Chat:
    """Decoy ``i``: 1-4 exchanges about the codebase; about a hot module 35% of the time."""
    rng = random.Random(f"{seed}-decoy-{i}")
    session = _uuid(rng)
    start = _when(rng)
    path = rng.choice(hot) if rng.random() < 0.35 else rng.choice(m.modules)["path"]
    count = rng.choices([1, 2, 3, 4], [3, 3, 2, 2])[0]
    first = _exchange(m, rng, path)
    exchanges = [first[:2]]
    for _ in range(count - 1):
        same = rng.random() < 0.6
        exchanges.append(_exchange(m, rng, path if same else None)[:2])
    title = first[2] if rng.random() < 0.25 else ""
    return Chat(session, start, exchanges, title, rng)


# ---------------------------------------------------------------- the set


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def shared_run(a: str, b: str, n: int) -> str | None:
    """The first run of ``n`` consecutive words of ``a`` that also occurs in ``b``."""
    wa, wb = words(a), words(b)
    grams = {tuple(wb[i : i + n]) for i in range(len(wb) - n + 1)}
    for i in range(len(wa) - n + 1):
        if tuple(wa[i : i + n]) in grams:
            return " ".join(wa[i : i + n])
    return None


def _parse_date(text: str) -> dt.datetime:
    return dt.datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=dt.UTC)


def deciding(m: Material, seed: int, task: dict[str, Any]) -> list[Chat]:
    """The task's chats in date order, unrelated follow-ups after the hand-written turns."""
    rng = random.Random(f"{seed}-task-{task['id']}")
    chats = []
    for spec in task["chats"]:
        session = _uuid(rng)
        start = _parse_date(spec["date"]) + dt.timedelta(seconds=rng.randint(0, 59))
        exchanges = [(u, a) for u, a in spec["turns"]]
        others = [p["path"] for p in m.modules if p["path"] != task["module"]]
        for _ in range(spec.get("lead", 0)):
            writer = rng.choice([_explain, _docs, _commit, _ci])
            exchanges.insert(0, writer(m, rng, rng.choice(others))[:2])
        for _ in range(spec.get("follow", 0)):
            writer = rng.choice([_explain, _tests, _docs, _comment, _bug])
            exchanges.append(writer(m, rng, rng.choice(others))[:2])
        chats.append(Chat(session, start, exchanges, spec.get("ai_title", ""), rng))
    return chats


def build(out: Path, decoys: int = DEFAULT_DECOYS, seed: int = DEFAULT_SEED) -> dict[str, int]:
    """Write the set into ``out`` (replacing what a previous run wrote there)."""
    material = json.loads((DATA / "material.json").read_text(encoding="utf-8"))
    tasks = json.loads((DATA / "tasks.json").read_text(encoding="utf-8"))
    unrelated = json.loads((DATA / "unrelated.json").read_text(encoding="utf-8"))
    avoid = [a for t in tasks for a in t["avoid"]]
    m = Material(material, avoid, {c for t in tasks for c in t.get("commits", [])})
    hot = sorted({t["module"] for t in tasks if t["module"] in m.by_path})

    all_chats: list[Chat] = []
    messages: list[dict[str, Any]] = []
    for task in tasks:
        chats = deciding(m, seed, task)
        for chat in chats:
            run = shared_run(task["report"], _chat_text(chat), 5)
            if run:
                raise SystemExit(f"{task['id']}: the report shares '{run}' with its chat")
        all_chats += chats
        message = {"id": task["id"], "kind": "situational", "group": "decisions"}
        message |= {"text": task["report"], "expected": [chats[-1].file]}
        # The module the agent reads next, in the real repository's layout.
        message["file"] = task["module"]
        if len(chats) > 1:
            message["stale"] = [c.file for c in chats[:-1]]
        messages.append(message)
    for i, text in enumerate(unrelated, 1):
        messages.append(
            {"id": f"u{i:02d}", "kind": "unrelated", "group": "decisions", "text": text}
        )
    for i in range(decoys):
        all_chats.append(decoy(m, seed, i, hot))

    if out.exists():
        for old in ("conversations", "LICENSES"):
            shutil.rmtree(out / old, ignore_errors=True)
    # The tasks' modules as the real repository has them at the pinned commit (the
    # file hook reads what a file declares, and the messages' `file` names them). They
    # are kept once, in the committed set, and copied from there into any other.
    committed = out.resolve() == MODULES.resolve()
    for module in sorted({t["module"] for t in tasks}):
        target = out / module
        if committed:
            if not target.is_file():
                raise SystemExit(f"{target}: missing from the committed set (git restore it)")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((MODULES / module).read_bytes())
    (out / "conversations").mkdir(parents=True, exist_ok=True)
    for chat in all_chats:
        (out / chat.file).write_text(transcript(chat, chat.rng), encoding="utf-8")
    text = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in messages)
    (out / "messages.jsonl").write_text(text, encoding="utf-8")
    (out / "LICENSES").mkdir(exist_ok=True)
    (out / "LICENSES" / "urllib3-MIT.txt").write_text(material["license"], encoding="utf-8")
    counts = {
        "tasks": len(tasks),
        "amended": sum(len(t["chats"]) > 1 for t in tasks),
        "deciding_chats": sum(len(t["chats"]) for t in tasks),
        "decoys": decoys,
        "unrelated": len(unrelated),
        "chats": len(all_chats),
    }
    (out / "SOURCE.md").write_text(_source_md(material, tasks, decoys, seed), encoding="utf-8")
    (out / "README.md").write_text(_readme(counts, tasks, decoys, seed), encoding="utf-8")
    return counts


def _chat_text(chat: Chat) -> str:
    return "\n".join(f"{u}\n{a}" for u, a in chat.exchanges) + "\n" + chat.ai_title


def _args(decoys: int, seed: int) -> str:
    extra = ""
    if decoys != DEFAULT_DECOYS:
        extra += f" --decoys {decoys}"
    if seed != DEFAULT_SEED:
        extra += f" --seed {seed}"
    return extra


def _source_md(
    material: dict[str, Any], tasks: list[dict[str, Any]], decoys: int, seed: int
) -> str:
    rows = "\n".join(
        f"| {t['id']} | {len(t['chats'])} | `{t['module']}` | {t['grounding']}"
        + "".join(f"; commit `{c}`" for c in t.get("commits", []))
        + " |"
        for t in tasks
    )
    return f"""# Source of the `decisions` set

## Codebase

| | |
|---|---|
| Repository | https://github.com/{material["repository"]} |
| Commit | `{material["commit"]}` ({material["commit_date"]}, "{material["commit_subject"]}") |
| Licence | MIT, Copyright (c) 2008-2020 Andrey Petrov and contributors \
(`LICENSES/urllib3-MIT.txt`) |
| Files read | `src/urllib3/**/*.py` (names, signatures, docstrings, comments, short \
function bodies), `noxfile.py`, `CHANGES.rst` (bullets), the names of `test/**/test_*.py`, \
`git log` subjects touching `src/`, `test/`, `noxfile.py` (the 400 newest, bots left out) |

The material was read from a snapshot of the repository (a bare git mirror) with
`git show HEAD:<path>` by `research/precedents_research/decisions_set.py --extract
GIT_DIR`, which writes `research/data/decisions/material.json`. Nothing was taken
from `shared/eval`, `shared/adr-corpora` or the other research sets, and urllib3 is
used by none of them.

## How the set was made

`python research/precedents_research/decisions_set.py --out DIR{_args(decoys, seed)}`
writes this folder from `research/data/decisions/` (standard library only; the
same arguments write the same bytes).

- **Deciding chats** ({sum(len(t["chats"]) for t in tasks)}) were written by hand
  (`tasks.json`) as chats of a team maintaining the urllib3 code base
  (`cwd` `{CWD}`). Each settles one rule; every rule is grounded in a real
  decision of the urllib3 project, listed below (changelog entries, code comments,
  constants). Dates, team discussion and wording are invented; where a later chat
  amends a rule, it mirrors a real change of that decision in urllib3's history
  (the dates are compressed into 2026). Some chats open with an unrelated
  exchange, and many have 1-2 unrelated follow-ups after the hand-written turns,
  made like the decoys.
- **Decoy chats** ({decoys}) are made by the script from the material: a user asks
  to explain, test, refactor, document, profile or debug a real function, asks
  about a comment, a commit or a changelog line, or about a CI session; the
  assistant answers quoting the real docstring, comment, body or changelog text.
  35% are about a module a deciding chat is about. Changelog lines and commits
  that state or made a rule of a task (`avoid`, `commits` in `tasks.json`) are
  never used.
- **Messages**: one symptom-only report per task and the unrelated messages, all
  written by hand.

| task | chats | module | grounded in |
|---|---|---|---|
{rows}
"""


def _readme(counts: dict[str, int], tasks: list[dict[str, Any]], decoys: int, seed: int) -> str:
    return f"""# `decisions`: recall the past chat that settled a rule, from a symptom

A dev set for conversation recall. {counts["chats"]} Claude Code transcripts
(`conversations/*.jsonl`, one chat each, all in one project, `cwd`
`{CWD}`, dated 2026-01 to 2026-07) of a team working on one real codebase,
urllib3 (see `SOURCE.md`), and `messages.jsonl`.

| | count |
|---|---|
| tasks (`situational` messages), each with its deciding chat | {counts["tasks"]} |
| of which amended (`stale` lists the earlier chats; one chain of three) | {counts["amended"]} |
| deciding chats (expected or stale) | {counts["deciding_chats"]} |
| decoy chats (no message expects them) | {counts["decoys"]} |
| `unrelated` messages | {counts["unrelated"]} |

## Labels

- `situational`: a report as the user would type it a week or more after the
  chat: the symptom, sometimes the module, never the rule or the words of the
  chat that settled it (no 5-word run in common, checked by
  `tests/test_decisions_set.py`). `expected` is the chat that settled the rule
  that applies; for an amended rule it is the latest (amending) chat, and `stale`
  lists the earlier chats of the chain, oldest first: each states a rule that
  no longer holds, so an answer that shows a stale chat without the expected
  one hands the agent an outdated rule.
- `file` (on `situational` messages): the module of the real repository the
  agent reads next for that report, the task's module (the set holds those
  modules as the repository has them at the pinned commit, `src/` and
  `pyproject.toml`); `precedents eval` scores the file hook's answer for it beside
  the prompt hook's.
- `unrelated`: about the same codebase (tasks nothing was settled about) or
  general chatter; no chat applies.
- Decoys talk about the same modules and functions, quote the real docstrings
  and sometimes the same code, but settle nothing. A decoy that explains, say,
  `Retry.parse_retry_after` is not an answer to a report about a long sleep: the
  chat where the team decided the bound is.

File names are the session ids (random, seeded) and carry no label. Regenerate
with `python research/precedents_research/decisions_set.py --out DIR{_args(decoys, seed)}`;
`--decoys N` writes a bigger variant (a superset: decoy `i` depends only on `i`).
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help=f"the set folder (default {DEFAULT_OUT})")
    parser.add_argument("--decoys", type=int, default=DEFAULT_DECOYS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--extract", metavar="GIT_DIR", help="write material.json from a mirror")
    args = parser.parse_args(argv)
    if args.extract:
        data = extract(args.extract)
        text = json.dumps(data, ensure_ascii=False, indent=0, sort_keys=True) + "\n"
        (DATA / "material.json").write_text(text, encoding="utf-8")
        print(f"material.json: {len(data['modules'])} modules, {len(data['commits'])} commits")
        return 0
    counts = build(args.out or DEFAULT_OUT, args.decoys, args.seed)
    print(json.dumps(counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
