"""Code names a record's text names, and the names a source file defines (issue #27).

A decision is often written about code, not about a path: "``Retry.parse_retry_after``
takes whatever the server sends", "``HTTPResponse.read`` must not decode twice". The
file hook gives a record that names the touched file (rules/scope.py mentions); with
this, also one that names a class or function the touched file defines — the chat
that settled how ``PoolManager.urlopen`` follows redirects reaches the agent when it
reads ``src/urllib3/poolmanager.py``.

What counts as a code name in prose is deliberately narrow, so that ordinary words
never match: a qualified name's owner (``Retry`` of ``Retry.new``), a name with an
underscore (``parse_retry_after``, ``DEFAULT_RETRY_AFTER_MAX``), a name in mixed case
(``HTTPHeaderDict``, ``getHeaders``), or a name called (``urlopen(``) — each at least
:data:`MIN_CHARS` long. A file's names are the ones it declares (``class``, ``def``,
``function``, ``func``, ``fn``, ``struct``… and UPPER_CASE constants), read from at
most :data:`MAX_READ` bytes of a regular file (never a FIFO or a device).

Standard library only: the daemon's file hook calls :func:`defined_symbols` per
touched file, cached by the file's size and modification time.
"""

from __future__ import annotations

import os
import re
import stat
from collections import OrderedDict
from threading import Lock

__all__ = ["MAX_READ", "MAX_SYMBOLS", "MIN_CHARS", "defined_symbols", "named_symbols"]

MIN_CHARS = 4
MAX_SYMBOLS = 32  # per record: a text that names more is a listing, not a decision
MAX_READ = 512 * 1024
_CACHE_FILES = 256

_QUALIFIED = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)\b(?!\.\w)")
_IDENTIFIER = re.compile(r"(?<![\w./-])([A-Za-z_][A-Za-z0-9_]*)(\()?")
_DECLARED = re.compile(
    r"^[ \t]*(?:(?:export|pub(?:\([\w ]+\))?|public|private|protected|static|async|"
    r"abstract|final|default|unsafe|inline|extern)\s+)*"
    r"(?:def|class|function|func|fn|interface|struct|enum|trait|type|module|object|record)"
    r"\s+(?:\([^)]*\)\s*)?([A-Za-z_][A-Za-z0-9_]*)"
    r"|^[ \t]*([A-Z][A-Z0-9_]{3,})[ \t]*(?::[^=\n]*)?=",
    re.MULTILINE,
)
# Names that look like code but are everywhere: matching them says nothing.
_COMMON = frozenset(
    {
        "__init__", "__main__", "__name__", "self", "this", "None", "True", "False",
        "TODO", "FIXME", "NOTE", "README", "JSON", "HTTP", "HTTPS", "HTML", "YAML",
        "main", "test", "tests", "setup", "print", "len", "str", "int", "list", "dict",
        "get", "set", "run", "init", "new", "open", "close", "read", "write",
    }
)  # fmt: skip


def _codelike(name: str, called: bool) -> bool:
    if len(name) < MIN_CHARS or name in _COMMON or name.strip("_").isdigit():
        return False
    inner = name.strip("_")
    return (
        called
        or "_" in inner
        or (any(c.islower() for c in inner) and any(c.isupper() for c in inner[1:]))
    )


def named_symbols(text: str) -> tuple[str, ...]:
    """The code names ``text`` names (module docstring), in order, at most MAX_SYMBOLS."""
    seen: dict[str, None] = {}
    for found in _QUALIFIED.finditer(text):
        owner, member = found.group(1), found.group(2)
        # `Retry.new`: the owner is a class (capitalized); `os.path`: a module, skipped.
        if owner[:1].isupper() and len(owner) >= MIN_CHARS and owner not in _COMMON:
            seen.setdefault(owner, None)
        if _codelike(member, False):
            seen.setdefault(member, None)
    for found in _IDENTIFIER.finditer(text):
        name, called = found.group(1), bool(found.group(2))
        if not called and "_" not in name and name[1:].islower():
            continue  # a word of prose (most of them): never code-like, decided cheaply
        if _codelike(name, called):
            seen.setdefault(name, None)
        if len(seen) >= MAX_SYMBOLS:
            break
    return tuple(seen)[:MAX_SYMBOLS]


_cache: OrderedDict[tuple[str, int, int], frozenset[str]] = OrderedDict()
_lock = Lock()


def defined_symbols(path: str) -> frozenset[str]:
    """The names the file at ``path`` declares (empty when it is missing, not a regular
    file, or unreadable). Reads at most MAX_READ bytes, without blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return frozenset()
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return frozenset()
        key = (path, st.st_size, st.st_mtime_ns)
        with _lock:
            cached = _cache.get(key)
            if cached is not None:
                _cache.move_to_end(key)
                return cached
        data = os.read(fd, MAX_READ)
    except OSError:
        return frozenset()
    finally:
        os.close(fd)
    text = data.decode("utf-8", errors="replace")
    names = frozenset(
        name
        for m in _DECLARED.finditer(text)
        for name in (m.group(1) or m.group(2),)
        if name and len(name) >= MIN_CHARS and name not in _COMMON
    )
    with _lock:
        _cache[key] = names
        while len(_cache) > _CACHE_FILES:
            _cache.popitem(last=False)
    return names
