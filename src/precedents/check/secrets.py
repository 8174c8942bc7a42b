"""Secrets in the text and in the name of a file about to be committed.

The product's own detector decides (:func:`precedents.secrets.mask.find_secrets`:
kingfisher's provider rules, then the local ones for keys after keywords,
passwords in prose, URLs, connection strings and command lines), so what `check`
blocks is what the index would mask, less two things a commit must be able to
carry: a value that is plainly a placeholder (``PASSWORD``, ``X``, ``9f86d08...``,
AWS's documented ``AKIAIOSFODNN7EXAMPLE``, ``sk-ant-test-dummy``), and a line
marked ``precedents: allow-secret`` (a page that shows what the detector finds,
as docs/secrets.md does). A name is judged by
:func:`precedents.secrets.names.masked_path`, the rule that keeps such a file out
of the index. A secret is never printed: each finding shows the words before it,
with it (and any other secret on its line) replaced by ``[MASKED:<kind>]``.
"""

from __future__ import annotations

import re
from typing import Final

from precedents.check.model import ERROR, SECRET, Finding, line_at
from precedents.secrets.mask import SecretSpan, find_secrets
from precedents.secrets.names import masked_path

# How much of the line before a secret a finding shows: enough to find it, never what
# follows it (a value the detector cut short would go on there).
CONTEXT_CHARS: Final = 40
_KIND = re.compile(r"\[MASKED:([a-z0-9-]+)\]")
ALLOW: Final = "precedents: allow-secret"
_URL = re.compile(r"[A-Za-z][\w+.-]*://(?:([^/@\s]*)@)?[^/\s]*(.*)", re.DOTALL)
# Words no real credential carries; documentation and tests use them for fake ones.
_PLACEHOLDER_WORD = re.compile(
    r"(?i)example|dummy|placeholder|changeme|change_me|redacted|your[-_]"
)
# A name standing for the value: `PASSWORD`, `API_KEY`, `<TOKEN>` (the brackets are not
# part of a span); never a value with a digit, as AWS key ids and most tokens have.
_PLACEHOLDER_NAME = re.compile(
    r"(?:[A-Z]+_)*(?:PASSWORD|PASSWD|PASS|PWD|TOKEN|SECRET|KEY)(?:_[A-Z]+)*"
)


def name_findings(path: str) -> list[Finding]:
    """A secret in a folder or file name of ``path``: the name is committed too."""
    masked = masked_path(path)
    if masked is None:
        return []
    kinds = ", ".join(dict.fromkeys(_KIND.findall(masked))) or "secret"
    return [Finding(path, 1, ERROR, SECRET, f"secret ({kinds}) in the file name: {masked}")]


def text_findings(path: str, text: str) -> list[Finding]:
    """One error per secret in ``text``, at its line, the value masked."""
    try:
        spans = find_secrets(text)
    except Exception as exc:  # a bug in a local rule: the file must not pass unread
        why = f"could not be scanned for secrets ({type(exc).__name__})"
        return [Finding(path, 1, ERROR, SECRET, why)]
    return [
        Finding(
            path,
            line_at(text, span.start),
            ERROR,
            SECRET,
            f"secret ({span.kind}): {_shown(text, span, spans)}",
        )
        for span in spans
        if not placeholder(text, span) and not _allowed(text, span.start)
    ]


def placeholder(text: str, span: SecretSpan) -> bool:
    """Whether the value at ``span`` stands for a secret rather than being one."""
    value = text[span.start : span.end]
    if len(set(value)) <= 2:  # `X`, `xxxx`, `****`
        return True
    if text[span.end : span.end + 3] == "..." or text[span.end : span.end + 1] == "…":
        return True  # cut short on purpose: the rest is not there to leak
    part = _secret_part(value)
    return bool(_PLACEHOLDER_WORD.search(part) or _PLACEHOLDER_NAME.fullmatch(part))


def _secret_part(value: str) -> str:
    """A URL's user information and path, without its host: a connection string to
    ``cluster0.example.net`` is no example for that."""
    url = _URL.match(value)
    return (url.group(1) or "") + url.group(2) if url else value


def _allowed(text: str, offset: int) -> bool:
    """Whether the line holding ``offset`` is marked ``precedents: allow-secret``."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return ALLOW in text[start : end if end != -1 else len(text)]


def _shown(text: str, span: SecretSpan, spans: list[SecretSpan]) -> str:
    """The line up to the secret, each secret on it masked, as one printable line."""
    start = text.rfind("\n", 0, span.start) + 1
    parts: list[str] = []
    pos = start
    for other in spans:  # sorted and apart (find_secrets' contract)
        if other.end <= start or other.start > span.start:
            continue
        parts.append(text[pos : max(pos, other.start)])
        parts.append(f"[MASKED:{other.kind}]")
        pos = max(pos, other.end)
    before = "".join(parts)
    shown = "".join(c if c.isprintable() else " " for c in before).strip()
    if len(shown) > CONTEXT_CHARS + 20:
        shown = "…" + shown[-(CONTEXT_CHARS + 20) :]
    return shown
