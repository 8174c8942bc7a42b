"""The git CLI, read in bounded pieces: the low half of the commit source (commits.py).

Every call runs ``git`` with the user's configuration neutralised where it
would change the output (colours, pagers, path quoting, diff prefixes,
external diff drivers, signatures) and with optional locks off, so a reader
never takes the index lock from under the user's own git. Output is
streamed: no token is kept past ``cap`` bytes (a 10 MB commit message costs
its first ``cap`` bytes of memory), and a failing git leaves what it printed
before it failed.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, BinaryIO, Final

GIT_OPTIONS: Final = (
    "-c", "core.quotePath=off", "-c", "color.ui=never", "-c", "log.showSignature=false",
    "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false", "-c", "diff.relative=false",
    "-c", "log.mailmap=false", "-c", "core.pager=cat",
)  # fmt: skip
CHUNK: Final = 1 << 16
MAX_FILES: Final = 300  # files kept per commit (a sweeping commit lists the first ones)
MARK: Final = b"\x1e"  # starts a commit's header in every format below
STATUS_CHARS: Final = frozenset(b"ACDMRTUXB")


def git_env() -> dict[str, str]:
    """The environment git runs in: no prompts, no optional locks, no pager."""
    env = dict(os.environ)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat", LC_ALL="C")
    return env


def git(repo: Path, *args: str) -> list[str]:
    """The argv of one git command on ``repo``."""
    return ["git", "-C", str(repo), *GIT_OPTIONS, *args]


def run(repo: Path, *args: str, timeout: float = 20.0) -> tuple[int, str, str]:
    """A small git command: exit status, stdout and the first line of stderr.

    Never raises: git missing from PATH is status 127, a timeout 124.
    """
    try:
        done = subprocess.run(
            git(repo, *args), capture_output=True, env=git_env(), timeout=timeout, check=False
        )
    except FileNotFoundError:
        return 127, "", "git is not on PATH"
    except subprocess.TimeoutExpired:
        return 124, "", f"git {args[0]} took over {timeout:.0f}s"
    except OSError as exc:
        return 126, "", f"git could not run ({exc.strerror})"
    out = done.stdout.decode("utf-8", "replace").strip()
    return done.returncode, out, first_line(done.stderr)


class Stream:
    """A git command whose stdout is read as a stream; stderr goes to a temp file (a
    chatty git can never block on a full pipe). ``code`` and ``error`` are set on exit:
    127 when git is missing, 124 past ``timeout``. Never raises on git's failures."""

    def __init__(self, argv: list[str], *, timeout: float, stdin: IO[bytes] | None = None):
        self.argv, self.timeout, self.stdin = argv, timeout, stdin
        self.code, self.error = 0, ""
        self.stdout: BinaryIO = open(os.devnull, "rb")  # noqa: SIM115 (closed in __exit__)
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 (closed in __exit__)
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Stream:
        try:
            self._proc = subprocess.Popen(
                self.argv, stdin=self.stdin, stdout=subprocess.PIPE, stderr=self._err,
                env=git_env(),
            )  # fmt: skip
        except FileNotFoundError:
            self.code, self.error = 127, "git is not on PATH"
        except OSError as exc:
            self.code, self.error = 126, f"git could not run ({exc.strerror})"
        else:
            assert self._proc.stdout is not None
            self.stdout.close()
            self.stdout = self._proc.stdout  # type: ignore[assignment]
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stdout.close()
        if self._proc is not None:
            try:
                self.code = self._proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
                self.code, self.error = 124, f"git took over {self.timeout:.0f}s"
            if not self.error:
                self._err.seek(0)
                self.error = first_line(self._err.read(65_536))
        self._err.close()

    def failed(self, *, stopped_early: bool = False) -> bool:
        """Whether git failed (a broken pipe after the reader stopped early is no failure)."""
        return self.code != 0 and not (stopped_early and self.code in (-13, 141, 128))


def first_line(err: bytes) -> str:
    """The first meaningful line of git's stderr, cut to 200 characters."""
    for line in err.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line and not line.startswith("hint:"):
            return line[:200]
    return ""


def tokens(stream: IO[bytes], cap: int) -> Iterator[bytes]:
    """NUL-separated tokens of ``stream``, each cut to its first ``cap`` bytes."""
    part = bytearray()
    while chunk := stream.read(CHUNK):
        start = 0
        while (end := chunk.find(b"\0", start)) >= 0:
            if len(part) < cap:
                part += chunk[start : min(end, start + cap - len(part))]
            yield bytes(part)
            part.clear()
            start = end + 1
        if len(part) < cap:
            part += chunk[start : start + cap - len(part)]
    if part:
        yield bytes(part)


def lines(stream: IO[bytes], cap: int) -> Iterator[bytes]:
    """Lines of ``stream`` without their newline, each cut to ``cap`` bytes."""
    while line := stream.readline(cap):
        if not line.endswith(b"\n"):
            while (rest := stream.readline(cap)) and not rest.endswith(b"\n"):
                pass  # a longer line: the rest is dropped, not held
        yield line.rstrip(b"\n")


@dataclass
class RawCommit:
    """One commit as ``git log -z --name-status`` printed it (bytes, cut)."""

    sha: str
    short: str
    date: str
    author: bytes
    message: bytes
    files: list[tuple[str, str, str]] = field(default_factory=list)  # (status, old, new)
    more_files: int = 0  # files past the cap, not kept


LOG_FORMAT: Final = "--format=%x1e%H%x00%h%x00%cs%x00%an%x00%B"


def parse_log(stream: Iterable[bytes], max_files: int) -> Iterator[RawCommit]:
    """Commits from the tokens of ``git log -z --name-status LOG_FORMAT``.

    A header token starts with ``MARK``; after the message come status tokens
    (``M``, ``R100``...), each followed by one path, or two for a rename or
    copy. A path is read only where a path must stand, so a file named ``M``
    or ``R100`` cannot shift the parse.
    """
    it = iter(stream)
    current: RawCommit | None = None
    for token in it:
        token = token.lstrip(b"\n")
        if token.startswith(MARK):
            if current is not None:
                yield current
            head = [token[1:], next(it, b""), next(it, b""), next(it, b""), next(it, b"")]
            sha, short, date = (part.decode("ascii", "replace") for part in head[:3])
            current = RawCommit(sha, short, date, head[3], head[4])
        elif current is not None and token and token[0] in STATUS_CHARS:
            status = token[:1].decode()
            old = next(it, b"").decode("utf-8", "replace")
            new = next(it, b"").decode("utf-8", "replace") if status in "RC" else old
            if len(current.files) < max_files:
                current.files.append((status, old, new))
            else:
                current.more_files += 1
    if current is not None:
        yield current


@dataclass
class FilePatch:
    """What one commit did to one file's lines: hashes of non-trivial lines."""

    old: str
    new: str
    added: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)


def line_hash(line: bytes) -> int | None:
    """A 32-bit hash of a line's stripped text; None for a line too trivial to follow
    (``}``, ``else:``, ``return``: they stand in every file, and would match anything)."""
    text = line.strip()
    if len(text) < 10 or not any(65 <= c <= 90 or 97 <= c <= 122 for c in text):
        return None
    return zlib.crc32(text)


def unquote(path: bytes) -> str:
    """A path as git prints it in a patch header: C-quoted when it has odd bytes."""
    if not path.startswith(b'"'):
        return path.decode("utf-8", "replace")
    raw = path[1:-1]
    out = bytearray()
    i = 0
    escapes = {b"n": 10, b"t": 9, b'"': 34, b"\\": 92, b"a": 7, b"b": 8, b"f": 12, b"r": 13}
    while i < len(raw):
        c = raw[i : i + 1]
        if c == b"\\" and i + 1 < len(raw):
            nxt = raw[i + 1 : i + 2]
            if nxt.isdigit() and i + 3 < len(raw) + 1:
                out.append(int(raw[i + 1 : i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(escapes.get(nxt, nxt[0]))
            i += 2
            continue
        out += c
        i += 1
    return out.decode("utf-8", "replace")


def _side(header: bytes, prefix: bytes) -> str | None:
    name = header[4:]
    if name == b"/dev/null":
        return None
    path = unquote(name)
    return path[len(prefix) :] if path.startswith(prefix.decode()) else path


def parse_patches(
    stream: Iterable[bytes], max_lines: int
) -> Iterator[tuple[str, dict[str, FilePatch]]]:
    """(sha, {path: FilePatch}) from ``git log -p -U0 --format=%x1e%H``, in output order.

    A file is keyed by its new name (its old name when deleted). At most
    ``max_lines`` changed lines per file are hashed; the rest are skipped.
    """
    sha = ""
    files: dict[str, FilePatch] = {}
    patch: FilePatch | None = None
    header = False  # between `diff --git` and the first hunk
    seen = 0
    for line in stream:
        if line.startswith(MARK):
            if sha:
                yield sha, files
            sha, files, patch = line[1:].decode("ascii", "replace").strip(), {}, None
        elif line.startswith(b"diff --git "):
            patch, header, seen = FilePatch("", ""), True, 0
        elif patch is None:
            continue
        elif line.startswith(b"@@"):
            header = False
        elif header:
            if line.startswith(b"rename from "):
                patch.old = unquote(line[12:])
            elif line.startswith(b"rename to "):
                patch.new = unquote(line[10:])
                files[patch.new] = patch
            elif line.startswith(b"--- "):
                patch.old = _side(line, b"a/") or patch.old
            elif line.startswith(b"+++ "):
                patch.new = _side(line, b"b/") or patch.new
                files[patch.new or patch.old] = patch
        elif line[:1] in (b"+", b"-") and seen < max_lines:
            seen += 1
            if (h := line_hash(line[1:])) is not None and not line[1:].startswith(b"Subproject"):
                (patch.added if line[:1] == b"+" else patch.removed).append(h)
    if sha:
        yield sha, files
