"""Secrets in file and folder names (issue #20, item 2).

A note saved as ``memory/token-hf_….md`` carries its secret in its path, and
a path is stored (the ``path`` and ``name`` columns, the snapshot), logged
and shown (hook, MCP, ``query``, ``why``). Such a file is never indexed: the
file walk (:mod:`precedents.ingest.sources`), the indexer and the ADR graph skip it,
and ``status`` lists it, masked, from ``cache/withheld.json``.

Each folder or file name of a path is checked on its own with the local rules
of :mod:`precedents.secrets.mask` (vendor prefixes, AWS key ids, random tokens,
keyword and value, provider formats), never kingfisher: ``status`` and the
ADR graph must answer without building its 490 rules (0.25 s). A name is also
read from each word on, and with ``-``/``_``/``.`` as spaces, since names glue
words to a token (``token-hf_…``) where prose would put a space.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Final

from precedents.secrets.mask import find_secrets

__all__ = [
    "FOLDER_REASON",
    "NAME_REASON",
    "masked_path",
    "shown_path",
]

NAME_REASON: Final = "a secret in the file name: not indexed"
FOLDER_REASON: Final = "a secret in a folder name: not indexed"
# Where a new word may start inside a name.
_SEPARATORS: Final = frozenset("-_.+@=,;~ ")
_AS_SPACES: Final = str.maketrans("-_.", "   ")
_MAX_VIEWS: Final = 64
_MAX_NAME: Final = 1024


def _views(name: str) -> list[tuple[int, str]]:
    """``(offset in name, text)``: the name, the name from each word on, and the
    name with separators as spaces (one character for one, offsets kept)."""
    views = [(0, name), (0, name.translate(_AS_SPACES))]
    for i in range(1, len(name)):
        if name[i - 1] in _SEPARATORS and name[i] not in _SEPARATORS:
            views.append((i, name[i:]))
            if len(views) >= _MAX_VIEWS:
                break
    return views


@lru_cache(maxsize=65536)
def _masked_name(name: str) -> str | None:
    """``name`` with its secrets masked, or None when it has none."""
    if len(name) > _MAX_NAME:
        name = name[:_MAX_NAME]
    views = _views(name)
    joined = "\n".join(text for _, text in views)
    # Where each view starts in ``joined``, and where it starts in ``name``.
    starts: list[tuple[int, int, int]] = []
    base = 0
    for offset, text in views:
        starts.append((base, base + len(text), offset))
        base += len(text) + 1
    found: list[tuple[int, int, str]] = []
    for span in find_secrets(joined, native=False):
        for first, last, offset in starts:
            if first <= span.start < last:
                shift = offset - first
                found.append((span.start + shift, min(span.end, last) + shift, span.kind))
                break
    if not found:
        return None
    found.sort()
    parts: list[str] = []
    pos = 0
    for start, end, kind in found:
        if start >= pos:
            parts.append(name[pos:start])
            parts.append(f"[MASKED:{kind}]")
        elif end <= pos:
            continue  # inside a span already masked
        pos = max(pos, end)
    parts.append(name[pos:])
    return "".join(parts)


def masked_path(path: str | os.PathLike[str]) -> str | None:
    """``path`` with each secret in a folder or file name masked, or None when
    no name in it carries one."""
    text = os.fspath(path)
    names = text.split(os.sep)
    masked = [_masked_name(n) if n else None for n in names]
    if not any(m is not None for m in masked):
        return None
    return os.sep.join(m if m is not None else n for n, m in zip(names, masked, strict=True))


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as it may be logged or shown: masked if a name in it carries a secret."""
    masked = masked_path(path)
    return os.fspath(path) if masked is None else masked


def withheld_reason(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` must not be indexed (a secret in its file or a folder name), or None."""
    text = os.fspath(path)
    folder, _, name = text.rpartition(os.sep)
    if name and _masked_name(name) is not None:
        return NAME_REASON
    if masked_path(folder) is not None:
        return FOLDER_REASON
    return None
