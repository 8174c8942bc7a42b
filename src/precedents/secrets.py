"""Mask secrets in text before it is embedded or stored (SPEC §2, Secrets).

Detection has two layers:

* the native scanner of ``kingfisher-secret-scanner`` (MongoDB, offline, ~490
  rules including gitleaks'/betterleaks'), which knows provider token formats;
* a few local rules for what it misses or filters out on purpose: whole
  private key blocks (also truncated or JSON-escaped ones), ``user:PASSWORD@``
  in URLs, ``KEY=value`` / ``key: value`` assignments whose key names a
  password, token or secret, ``Authorization:`` headers, and a lone AWS key id
  (kingfisher only reports one paired with its secret).

If the native scanner cannot be loaded or fails on a text, a wider local rule
set (provider token formats too) is used instead, and a warning is logged.

Only the secret is replaced, by ``[MASKED:<kind>]``; everything else is left
unchanged, character for character. Kingfisher never touches the network here:
only ``Scanner.scan`` is used, never its ``Validator`` or ``Revoker``.
"""

from __future__ import annotations

import bisect
import logging
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from kingfisher_sdk import Scanner

__all__ = ["SecretSpan", "find_secrets", "mask_secrets"]

_log = logging.getLogger("precedents.secrets")


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

_AWS_PREFIXES: Final = ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")
_AWS_KEY_ID_RE: Final = re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b")

_AUTH_HEADER_RE: Final = re.compile(
    r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|basic|token)\s+([A-Za-z0-9._~+/=-]{8,})"
)

# A key that names a secret: it must END with the keyword, so ``API_TOKEN``,
# ``DB_PASSWORD`` and ``PGPASSWORD`` count but ``TOKEN_LIMIT``, ``MAX_TOKENS``
# and ``GIT_ASKPASS`` do not. ``PWD`` is left out: it is the working directory.
_KEY_ENDINGS: Final = (
    *("password", "passwd", "passphrase", "secret", "token", "credential", "credentials"),
    *("_pass", ".pass", "-pass", "_pw", "-pw", "secret_key_base"),
    *(f"{word}{sep}key" for word in ("api", "access", "secret", "private") for sep in "_-"),
    *("apikey", "accesskey", "privatekey"),
)
# The separator and the value; the key before it is checked in code. Starting
# at the separator (a rare character) is much faster than trying a
# case-insensitive keyword at every position of the text.
_ASSIGNMENT_RE: Final = re.compile(
    r"(?:=>|:=|\?=|=|:)[ \t]*"
    r"(?:\\?\"(?P<dq>(?:[^\"\s\\]|\\[^\"\s])+)\\?\""
    r"|'(?P<sq>[^'\s]+)'"
    # An unquoted value must end cleanly, so calls and subscripts such as
    # ``get_password()`` or ``os.environ["TOKEN"]`` never match.
    r"|(?P<bare>[^\s'\"`;&,()\[\]{}<>\\]+)(?=[\s'\"`;&,)\]}\\]|$))"
)
# The key, read backwards from the separator: spaces, a closing quote (maybe
# JSON-escaped), then the identifier.
_KEY_BEFORE_RE: Final = re.compile(r"[ \t]*[\"']?\\?(?P<rkey>[\w.-]{1,100})")
_LINE_START_RE: Final = re.compile(r"[ \t]*(?:(?:export|set|setenv|declare -x|ENV)[ \t]+)?")
_PLACEHOLDER_RE: Final = re.compile(
    r"\$\{?\w+\}?|\$\(.*\)|<[^>]*>|\{\{.*\}\}|%\w+%|[*xX.#_-]+|\d{1,5}"
    r"|(?i:none|null|nil|true|false|undefined|required|optional|empty|redacted|secret|"
    r"password|token)"
    # Absolute or home-relative paths: ``SSH_PRIVATE_KEY=~/.ssh/id_ed25519``.
    r"|~?/[\w./~-]*"
)
# Letters, dots and brackets only: in ``password: str`` or ``token = self.token``
# the value is a type or a variable, not a secret.
_CODE_WORD_RE: Final = re.compile(r"[A-Za-z_.\[\]|]+")
# ...except a lower-case word alone after a YAML key (``password: hunter``),
# unless it is a type name (``password: str``).
_YAML_KEY_RE: Final = re.compile(r"[ \t]*(?:- )?[\"']?")
_YAML_REST_RE: Final = re.compile(r"[ \t]*(?:#.*)?$", re.MULTILINE)
_TYPE_NAMES: Final = frozenset({"str", "bytes", "int", "bool", "float", "dict", "list", "any"})

# Provider token formats, used only when the native scanner is unavailable.
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


def _assignment_kind(key: str) -> str:
    key = key.lower()
    if key.endswith(("token",)):
        return "token"
    if "key" in key[-12:]:
        return "api-key" if "api" in key else "secret-key"
    if key.endswith(("secret",)):
        return "secret"
    if key.endswith(("credential", "credentials")):
        return "credential"
    return "password"


def _assignment_spans(text: str) -> list[SecretSpan]:
    spans: list[SecretSpan] = []
    for m in _ASSIGNMENT_RE.finditer(text):
        sep = m.start()
        before = _KEY_BEFORE_RE.match(text[max(0, sep - 110) : sep][::-1])
        if before is None:
            continue
        key = before.group("rkey")[::-1]
        if not key.lower().endswith(_KEY_ENDINGS):
            continue
        for group in ("dq", "sq", "bare"):
            value = m.group(group)
            if value is not None:
                break
        if value is None or len(value) < 3 or value.startswith("[MASKED:"):
            continue
        if _PLACEHOLDER_RE.fullmatch(value):
            continue
        if group == "bare":
            key_start = sep - before.end()
            line_start = text.rfind("\n", 0, key_start) + 1
            # ``KEY=value`` on its own line (shell, .env, ``env`` output) is
            # always a secret; elsewhere a bare word is more likely code.
            env_style = (
                before.end() == len(key)
                and m.start(group) == sep + 1
                and text[sep] == "="
                and _LINE_START_RE.fullmatch(text, line_start, key_start) is not None
            )
            yaml_word = (
                text[sep] == ":"
                and value[0].islower()
                and value.isalpha()
                and value not in _TYPE_NAMES
                and _YAML_KEY_RE.fullmatch(text, line_start, key_start) is not None
                and _YAML_REST_RE.match(text, m.end(group)) is not None
            )
            if not (env_style or yaml_word) and _CODE_WORD_RE.fullmatch(value):
                continue
        spans.append(SecretSpan(m.start(group), m.end(group), _assignment_kind(key)))
    return spans


def _local_spans(text: str, *, fallback: bool) -> list[SecretSpan]:
    spans = [SecretSpan(m.start(), m.end(), "private-key") for m in _PRIVATE_KEY_RE.finditer(text)]
    spans += [
        SecretSpan(*m.span(1), "url-password")
        for m in _URL_PASSWORD_RE.finditer(text)
        if m.start() > 0 and text[m.start() - 1].isalnum()  # a scheme, not prose
    ]
    # Substring checks (fast) spare most texts a regex pass (slow).
    if any(prefix in text for prefix in _AWS_PREFIXES):
        spans += [SecretSpan(*m.span(), "aws-access-key") for m in _AWS_KEY_ID_RE.finditer(text)]
    if "uthorization" in text or "UTHORIZATION" in text:
        spans += [SecretSpan(*m.span(1), "bearer-token") for m in _AUTH_HEADER_RE.finditer(text)]
    spans += _assignment_spans(text)
    if fallback:
        for kind, pattern in _FALLBACK_RULES:
            group = 1 if pattern.groups else 0
            spans += [SecretSpan(*m.span(group), kind) for m in pattern.finditer(text)]
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


def _byte_to_char_offsets(data: bytes, offsets: set[int]) -> dict[int, int]:
    """Map UTF-8 byte offsets of ``data`` to str offsets in one pass.

    An offset inside a multi-byte character maps to that character's start;
    callers widen ends themselves, so a span never shrinks.
    """
    result: dict[int, int] = {}
    prev_byte = prev_char = 0
    for off in sorted(offsets):
        off = min(max(off, 0), len(data))
        start = off
        while 0 < start < len(data) and (data[start] & 0xC0) == 0x80:
            start -= 1
        prev_char += len(data[prev_byte:start].decode("utf-8", "surrogatepass"))
        prev_byte = start
        result[off] = prev_char
    return result


def _native_spans(scanner: Scanner, text: str) -> tuple[list[SecretSpan], list[SecretSpan]]:
    """Kingfisher's findings as str spans: (reported findings, hidden components).

    Hidden findings are the parts of a multi-part credential (an AWS secret key
    without its key id); they are masked too, but named last when they overlap.
    """
    data = text.encode("utf-8", "surrogatepass")
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


def find_secrets(text: str) -> list[SecretSpan]:
    """Return the secrets in ``text`` as sorted, non-overlapping str-offset spans.

    Overlapping findings are merged into one span, named after the earliest
    (longest at a tie) of them. Uses kingfisher plus the local rules; if
    kingfisher is unavailable or fails, the wider local rule set, with a
    warning on the ``precedents.secrets`` logger. May raise only on a bug in
    the local rules; :func:`mask_secrets` never raises.
    """
    if not text:
        return []
    spans: list[SecretSpan] = []
    hidden: list[SecretSpan] = []
    scanner = _get_scanner()
    fallback = scanner is None
    if scanner is not None:
        try:
            spans, hidden = _native_spans(scanner, text)
        except Exception as exc:
            # The text is never logged: it may be full of secrets.
            _log.warning(
                "kingfisher scan failed (%s) on a %d-character text; using local rules",
                type(exc).__name__,
                len(text),
            )
            spans, hidden, fallback = [], [], True
    # Order matters at equal spans: the first listed names the kind.
    return _merge(spans + _local_spans(text, fallback=fallback) + hidden, text)


def mask_secrets(text: str) -> str:
    """Return ``text`` with each secret replaced by ``[MASKED:<kind>]``.

    Everything outside the secrets is unchanged; for a URL password or a
    ``KEY=value`` assignment only the password or value is replaced. Masking a
    masked text changes nothing. Never raises: if detection itself fails, the
    whole text is replaced by ``[MASKED:unscannable]``, since storing it
    unmasked could leak a secret.
    """
    try:
        if not isinstance(text, str):  # defensive: callers may pass bytes
            text = bytes(text).decode("utf-8", "replace") if text else ""
        spans = find_secrets(text)
        if not spans:
            return text
        parts: list[str] = []
        pos = 0
        for span in spans:
            parts.append(text[pos : span.start])
            parts.append(f"[MASKED:{span.kind}]")
            pos = span.end
        parts.append(text[pos:])
        return "".join(parts)
    except Exception as exc:
        _log.error("secret masking failed (%s); the whole text is masked", type(exc).__name__)
        return "[MASKED:unscannable]"
