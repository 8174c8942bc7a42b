"""Mask secrets in text before it is embedded or stored (SPEC §2, Secrets).

Detection has two layers:

* the native scanner of ``kingfisher-secret-scanner`` (MongoDB, offline, ~490
  rules including gitleaks'/betterleaks'), which knows provider token formats;
* local rules for what it misses or filters out on purpose: whole private
  key blocks (also truncated or JSON-escaped ones), ``user:PASSWORD@`` in
  URLs, ``Authorization:`` headers, ``KEY=value`` / ``key: value``
  assignments whose key names a password, token or secret (secrets_keys.py),
  vendor token prefixes at any plausible length, a lone AWS key id, bare
  high-entropy tokens and random values after a keyword (``and secret
  Zk9...``, secrets_rules.py), and values found by their context whatever
  they look like (``the admin password is Maple-Orbit-5521-q``, ``mysql -pX``,
  ``Pwd=X;``: secrets_context.py).

A value found once is then masked at every other whole-token occurrence in
the same text (an assistant repeating a pasted key); :func:`mask_together`
does the same across the texts of one conversation (secrets_echo.py). A span that ends
inside a run of letters and digits is widened to the whole run. If the native
scanner cannot be loaded or fails on a text, local regexes for the main
provider formats, JWTs and AWS secret keys are used instead, and a warning is
logged. docs/secrets.md lists the rules, what is left alone on purpose, and
the measured false positives.

Only the secret is replaced, by ``[MASKED:<kind>]``; everything else is left
unchanged, character for character. Kingfisher never touches the network here:
only ``Scanner.scan`` is used, never its ``Validator`` or ``Revoker``.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from precedents.secrets.context import context_spans
from precedents.secrets.echo import echo_spans, echo_values
from precedents.secrets.keys import assignment_spans
from precedents.secrets.rules import aws_key_id_spans, plausible_token, repeat_spans, token_spans
from precedents.secrets.rules import byte_to_char_offsets as _byte_to_char_offsets

if TYPE_CHECKING:
    from kingfisher_sdk import Scanner

__all__ = ["SecretSpan", "find_secrets", "mask_secrets", "mask_spans", "mask_together"]

_log = logging.getLogger("precedents.secrets.mask")


@dataclass(frozen=True)
class SecretSpan:
    """A secret at ``text[start:end]`` (str offsets), of rule kind ``kind``."""

    start: int
    end: int
    kind: str


# A mask already in the text: findings inside one are ignored, so that masking
# a masked text changes nothing.
_MASK_RE: Final = re.compile(r"\[MASKED:[a-z0-9-]+\]")

# -- local rules ---------------------------------------------------------------

# Whole PEM/OpenSSH private key blocks. The second branch takes a block whose
# END line is missing (a paste cut short) up to the last base64 line; line
# breaks may be real or JSON-escaped (``\n``), as in conversation logs.
_NL = r"(?:\r?\n|\\r\\n|\\n)"
_PRIVATE_KEY_RE: Final = re.compile(
    r"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:.{0,16384}?-----END (?P=label)-----"
    rf"|(?:{_NL}[A-Za-z-]+:[^\n\\]*)*(?:{_NL}[A-Za-z0-9+/=]{{16,}})*)",
    re.DOTALL,
)

# ``scheme://user:PASSWORD@host``: group 1 is the password only. The pattern
# starts at the literal ``://`` because re then skips ahead with a fast
# substring search; the scheme before it is checked in code.
_URL_PASSWORD_RE: Final = re.compile(r"://[^\s:/@'\"`<>]*:([^\s/@'\"`<>]+)@[\w\[]")

_AUTH_HEADER_RE: Final = re.compile(
    r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+([A-Za-z0-9._~+/=-]{8,})"
)


# Provider token formats, used only when the native scanner is unavailable
# (secrets_rules' vendor prefixes, always on, need a digit in the token).
_FALLBACK_RULES: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("github-token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_\w{60,255})")),
    ("slack-token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,250}")),
    ("anthropic-api-key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai-api-key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}T3BlbkFJ\S*")),
    ("openai-api-key", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}")),
    ("stripe-key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("gcp-api-key", re.compile(r"\bAIza[A-Za-z0-9_-]{35}\b")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    (
        "aws-secret-key",
        re.compile(r"(?i)aws.{0,20}?secret.{0,20}?[=:][ \t\"']*([A-Za-z0-9/+=]{40})\b"),
    ),
)

_RULE_PREFIX_RE: Final = re.compile(r"^(?:betterleaks|kingfisher|custom|veles\.secrets)[./]|\.\d+$")
_NON_KIND_RE: Final = re.compile(r"[^a-z0-9]+")
# Kingfisher rule ids that get a shorter or house name.
_KIND_ALIASES: Final = {
    "aws-access-token": "aws-access-key",
    "aws-secret-access-key": "aws-secret-key",
    "generic-credential-uri": "url-password",
}


def _local_spans(text: str, data: bytes, *, fallback: bool) -> list[SecretSpan]:
    spans = [SecretSpan(m.start(), m.end(), "private-key") for m in _PRIVATE_KEY_RE.finditer(text)]
    spans += [
        SecretSpan(*m.span(1), "url-password")
        for m in _URL_PASSWORD_RE.finditer(text)
        if m.start() > 0 and text[m.start() - 1].isalnum()  # a scheme, not prose
    ]
    # Substring checks (fast) spare most texts a regex pass (slow).
    if "uthorization" in text or "UTHORIZATION" in text:
        spans += [SecretSpan(*m.span(1), "bearer-token") for m in _AUTH_HEADER_RE.finditer(text)]
    # Order matters at equal spans: a keyword's kind beats the others.
    spans += [SecretSpan(*span) for span in assignment_spans(text)]
    spans += [SecretSpan(*span) for span in context_spans(text)]
    spans += [SecretSpan(*span) for span in aws_key_id_spans(text)]
    spans += [SecretSpan(*span) for span in token_spans(text, data)]
    if fallback:
        for kind, pattern in _FALLBACK_RULES:
            group = 1 if pattern.groups else 0
            spans += [
                SecretSpan(*m.span(group), kind)
                for m in pattern.finditer(text)
                if plausible_token(m.group(group))  # not ghp_xxxx..., xoxb-your-token
            ]
    return spans


# -- native scanner --------------------------------------------------------------

_scanner_lock = threading.Lock()
_scanner: Scanner | None = None
_scanner_failed = False


def _get_scanner() -> Scanner | None:
    """The shared kingfisher scanner, built on first use; None if it cannot be.

    Building it compiles ~490 rules (about 0.4 s from kingfisher's on-disk rule
    cache, several seconds without), so it is done once per process. The lock
    keeps concurrent first calls from compiling twice.
    """
    global _scanner, _scanner_failed
    if _scanner is not None or _scanner_failed:
        return _scanner
    with _scanner_lock:
        if _scanner is None and not _scanner_failed:
            try:
                from kingfisher_sdk import Rules
                from kingfisher_sdk import Scanner as _Scanner

                # dedup=False: a scanner that remembers findings across calls
                # would stop reporting a secret the second time it is seen.
                # redact=True: we need offsets only, never the secret values.
                _scanner = _Scanner(Rules(), base64=True, dedup=False, redact=True)
            except Exception as exc:
                _scanner_failed = True
                _log.warning(
                    "kingfisher scanner unavailable (%s); masking secrets with local rules only",
                    type(exc).__name__,
                )
    return _scanner


def _native_spans(
    scanner: Scanner, text: str, data: bytes
) -> tuple[list[SecretSpan], list[SecretSpan]]:
    """Kingfisher's findings as str spans: (reported findings, hidden components).

    Hidden findings are the parts of a multi-part credential (an AWS secret key
    without its key id); they are masked too, but named last when they overlap.
    """
    raw: list[tuple[int, int, str, bool]] = []
    for f in scanner.scan(data):
        loc = f.location
        start, end = loc["start_offset"], loc["end_offset"]
        # Widen an end that falls inside a multi-byte character to its end.
        while end < len(data) and (data[end] & 0xC0) == 0x80:
            end += 1
        if end > start:
            raw.append((start, end, _kind(f.rule_id), f.visible))
    if raw and len(data) != len(text):  # not ASCII: bytes and characters differ
        chars = _byte_to_char_offsets(data, {o for s, e, _, _ in raw for o in (s, e)})
        raw = [(chars[s], chars[e], k, v) for s, e, k, v in raw]
    visible = [SecretSpan(s, e, k) for s, e, k, v in raw if v]
    hidden = [SecretSpan(s, e, k) for s, e, k, v in raw if not v]
    return visible, hidden


def _kind(rule_id: str) -> str:
    """``betterleaks.auth0-client-secret.1`` -> ``auth0-client-secret``."""
    name = _RULE_PREFIX_RE.sub("", rule_id.lower())
    name = _NON_KIND_RE.sub("-", name).strip("-") or "secret"
    return _KIND_ALIASES.get(name, name)


# -- public API --------------------------------------------------------------------


def _merge(spans: list[SecretSpan], text: str) -> list[SecretSpan]:
    masks = [m.span() for m in _MASK_RE.finditer(text)] if "[MASKED:" in text else []
    mask_starts = [start for start, _ in masks]
    # At equal starts the longer span wins; at equal spans the first listed
    # names the kind (sorted() is stable).
    ordered = sorted(spans, key=lambda s: (s.start, -s.end))
    merged: list[SecretSpan] = []
    for span in ordered:
        if span.end <= span.start:
            continue
        # Inside an existing mask (``user:[MASKED:url-password]@``): already done.
        i = bisect.bisect_right(mask_starts, span.start) - 1
        if i >= 0 and span.end <= masks[i][1]:
            continue
        if merged and span.start < merged[-1].end:
            last = merged[-1]
            if span.end > last.end:
                merged[-1] = SecretSpan(last.start, span.end, last.kind)
            continue
        merged.append(span)
    return merged


_ASCII_ALNUM: Final = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_ALNUM_RUN_RE: Final = re.compile(r"[A-Za-z0-9]*")


def _widen(spans: list[SecretSpan], text: str) -> list[SecretSpan]:
    """Widen a span that starts or ends inside a run of ASCII letters and digits
    to the whole run: a rule that matched only the official length of a longer
    token (``ghp_`` + 36 of 40 characters) must not leave its tail in clear."""
    widened: list[SecretSpan] | None = None
    for i, span in enumerate(spans):
        start, end = span.start, span.end
        if end < len(text) and text[end] in _ASCII_ALNUM and text[end - 1] in _ASCII_ALNUM:
            run = _ALNUM_RUN_RE.match(text, end)  # always matches: the pattern may be empty
            end = run.end() if run else end
        while start > 0 and text[start - 1] in _ASCII_ALNUM and text[start] in _ASCII_ALNUM:
            start -= 1
        if (start, end) != (span.start, span.end):
            if widened is None:
                widened = list(spans)
            widened[i] = SecretSpan(start, end, span.kind)
    return spans if widened is None else _merge(widened, text)


def find_secrets(text: str, *, native: bool = True) -> list[SecretSpan]:
    """Return the secrets in ``text`` as sorted, non-overlapping str-offset spans.

    Overlapping findings are merged into one span, named after the earliest
    (longest at a tie) of them. A value found once is reported at each of its
    whole-token occurrences in ``text``. Uses kingfisher plus the local rules; if
    kingfisher is unavailable or fails, the wider local rule set, with a
    warning on the ``precedents.secrets.mask`` logger. ``native=False`` uses the
    wider local rule set without loading kingfisher (0.25 s to build), for
    callers that must answer at once (file names in ``status``). May raise
    only on a bug in the local rules; :func:`mask_secrets` never raises.
    """
    if not text:
        return []
    spans: list[SecretSpan] = []
    hidden: list[SecretSpan] = []
    # Encoded once: kingfisher scans bytes, and so does the token-run scan.
    data = text.encode("utf-8", "surrogatepass")
    scanner = _get_scanner() if native else None
    fallback = scanner is None
    if scanner is not None:
        try:
            spans, hidden = _native_spans(scanner, text, data)
        except Exception as exc:
            # The text is never logged: it may be full of secrets.
            _log.warning(
                "kingfisher scan failed (%s) on a %d-character text; using local rules",
                type(exc).__name__,
                len(text),
            )
            spans, hidden, fallback = [], [], True
    # Order matters at equal spans: the first listed names the kind.
    merged = _merge(spans + _local_spans(text, data, fallback=fallback) + hidden, text)
    if not merged:
        return merged
    merged = _widen(merged, text)
    # A value found once is masked wherever else it stands as a whole token.
    repeats = repeat_spans(text, [(s.start, s.end, s.kind) for s in merged])
    if repeats:
        merged = _widen(_merge(merged + [SecretSpan(*span) for span in repeats], text), text)
    return merged


def _replace(text: str, spans: list[SecretSpan]) -> str:
    parts: list[str] = []
    pos = 0
    for span in spans:
        parts.append(text[pos : span.start])
        parts.append(f"[MASKED:{span.kind}]")
        pos = span.end
    parts.append(text[pos:])
    return "".join(parts)


def mask_spans(text: str, spans: list[SecretSpan]) -> str:
    """``text`` with each of ``spans`` (from :func:`find_secrets`) replaced by
    ``[MASKED:<kind>]`` (one pass: :func:`mask_secrets` is the full masking)."""
    return _replace(text, spans)


# Passes over a text that had findings: a mask can split a run of token
# characters, and what is left of the run may be a secret on its own.
_MAX_PASSES: Final = 3
_TOKEN_CHARS: Final = frozenset(_ASCII_ALNUM | set("+/_-"))
# Characters that end an unquoted assignment value (see secrets_keys._ASSIGNMENT_RE).
_VALUE_ENDS: Final = frozenset(" \t\r\n\f\v'\"`;&,()[]{}<>\\")


def _needs_rescan(text: str, span: SecretSpan) -> bool:
    """True if masking ``span`` may let a new pass find more.

    A mask glued to a token character splits a run (``+ghp_...``), and the
    rest of the run may be a secret on its own; a mask followed by anything
    an unquoted value runs through cuts a long ``a=b...c=d`` value, after
    which the ``c=d`` assignment is read on its own.
    """
    before = text[span.start - 1] if span.start else " "
    after = text[span.end] if span.end < len(text) else " "
    return before in _TOKEN_CHARS or after in _TOKEN_CHARS or after not in _VALUE_ENDS


def _with_echoes(text: str, spans: list[SecretSpan], echoes: Mapping[str, str]) -> list[SecretSpan]:
    extra = echo_spans(text, echoes)
    if not extra:
        return spans
    return _widen(_merge(spans + [SecretSpan(*span) for span in extra], text), text)


def _mask(
    text: str, echoes: Mapping[str, str] | None, first: list[SecretSpan] | None = None
) -> str:
    for n in range(_MAX_PASSES):
        spans = first if n == 0 and first is not None else find_secrets(text)
        if echoes:
            spans = _with_echoes(text, spans, echoes)
        if not spans:
            break
        rescan = any(_needs_rescan(text, span) for span in spans)
        text = _replace(text, spans)
        if not rescan:
            break  # each mask stands alone: a new pass would find nothing
    return text


def mask_secrets(text: str, echoes: Mapping[str, str] | None = None) -> str:
    """Return ``text`` with each secret replaced by ``[MASKED:<kind>]``.

    Everything outside the secrets is unchanged; for a URL password or a
    ``KEY=value`` assignment only the password or value is replaced. Masking a
    masked text changes nothing: when a mask splits a run of token characters
    or an unquoted value, the result is scanned again (at most twice) until no
    new finding turns up. ``echoes`` (value -> kind) are values found
    elsewhere (another text of the same conversation), masked wherever they
    stand as a whole token here. Never raises: if detection itself
    fails, the whole text is replaced by ``[MASKED:unscannable]``, since
    storing it unmasked could leak a secret.
    """
    try:
        if not isinstance(text, str):  # defensive: callers may pass bytes
            text = bytes(text).decode("utf-8", "replace") if text else ""
        return _mask(text, echoes)
    except Exception as exc:
        _log.error("secret masking failed (%s); the whole text is masked", type(exc).__name__)
        return "[MASKED:unscannable]"


# Values found in tool input and output, by a digest of the text: the watcher
# parses a growing transcript again at each append, and its tool output (most
# of the file) has not changed. Memory only, never written anywhere.
_CONTEXT_CACHE_SIZE: Final = 20_000
_context_cache: OrderedDict[bytes, dict[str, str]] = OrderedDict()
_context_lock = threading.Lock()


def _echo_candidates(text: str, spans: list[SecretSpan]) -> list[tuple[int, int, str]]:
    """The values to look for elsewhere: each finding, and each context finding as
    found (widening may have glued ``-pSECRET``'s ``p`` to a mysql password)."""
    return [(s.start, s.end, s.kind) for s in spans] + (context_spans(text) if spans else [])


def _context_values(text: str) -> dict[str, str]:
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    with _context_lock:
        cached = _context_cache.get(key)
        if cached is not None:
            _context_cache.move_to_end(key)
            return cached
    values: dict[str, str] = {}
    echo_values(text, _echo_candidates(text, find_secrets(text)), values)
    with _context_lock:
        _context_cache[key] = values
        while len(_context_cache) > _CONTEXT_CACHE_SIZE:
            _context_cache.popitem(last=False)
    return values


def mask_together(texts: Sequence[str], context: Iterable[str] = ()) -> list[str]:
    """Mask ``texts`` (one conversation's prompts, answers and title) as one.

    A value found in any of them, or in ``context`` (its tool input and
    output: scanned for values, never returned), is masked wherever it
    recurs as a whole token in any text, before its first masked occurrence
    too: the assistant repeating a pasted password, a key read by a tool and
    quoted in the answer. Never raises: if detection fails, every text is
    replaced by ``[MASKED:unscannable]``.
    """
    try:
        found = [find_secrets(text) for text in texts]
        values: dict[str, str] = {}
        for text, spans in zip(texts, found, strict=True):
            echo_values(text, _echo_candidates(text, spans), values)
        for extra in context:
            for value, kind in _context_values(extra).items():
                values.setdefault(value, kind)
        return [_mask(text, values, spans) for text, spans in zip(texts, found, strict=True)]
    except Exception as exc:
        _log.error("secret masking failed (%s); the whole text is masked", type(exc).__name__)
        return ["[MASKED:unscannable]" for _ in texts]
