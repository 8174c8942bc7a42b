"""Mask secrets in text before it is embedded or stored (SPEC §2, Secrets).

Detection has two layers:

* the native scanner of ``kingfisher-secret-scanner`` (MongoDB, offline, ~490
  rules including gitleaks'/betterleaks'), which knows provider token formats;
* local rules for what it misses or filters out on purpose: whole private
  key blocks (also truncated or JSON-escaped ones), ``user:PASSWORD@`` in
  URLs, ``KEY=value`` / ``key: value`` assignments whose key names a password,
  token or secret, ``Authorization:`` headers, and (in secrets_rules.py) vendor
  token prefixes at any plausible length, a lone AWS key id, bare high-entropy
  tokens and random values after a keyword (``and secret Zk9...``).

A value found once is then masked at every other whole-token occurrence in
the same text (an assistant repeating a pasted key), and a span that ends
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
import logging
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from precedents.secrets_rules import aws_key_id_spans, plausible_token, repeat_spans, token_spans
from precedents.secrets_rules import byte_to_char_offsets as _byte_to_char_offsets

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
    # A double-quoted value, maybe JSON-escaped: the loop is unrolled (runs of
    # plain characters between escapes), twice as fast on conversation logs.
    r"(?:\\?\"(?P<dq>(?=[^\"\s\\]|\\[^\"\s])[^\"\s\\]*(?:\\[^\"\s][^\"\s\\]*)*)\\?\""
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


# The last three letters of every key ending: a cheap first test of the key
# before a separator (most separators in a conversation log are JSON's).
_KEY_TAILS: Final = tuple(sorted({ending[-3:] for ending in _KEY_ENDINGS}))


def _assignment_spans(text: str) -> list[SecretSpan]:
    spans: list[SecretSpan] = []
    for m in _ASSIGNMENT_RE.finditer(text):
        sep = m.start()
        # The key's last characters sit before spaces, a quote and a backslash
        # (stripping any run of those can only keep more keys than the check
        # below, never fewer).
        k = sep
        while k > 0 and text[k - 1] in " \t\"'\\":
            k -= 1
        if not text[max(0, k - 6) : k].lower().endswith(_KEY_TAILS):
            continue
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
    spans += _assignment_spans(text)
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


def find_secrets(text: str) -> list[SecretSpan]:
    """Return the secrets in ``text`` as sorted, non-overlapping str-offset spans.

    Overlapping findings are merged into one span, named after the earliest
    (longest at a tie) of them. A value found once is reported at each of its
    whole-token occurrences in ``text``. Uses kingfisher plus the local rules; if
    kingfisher is unavailable or fails, the wider local rule set, with a
    warning on the ``precedents.secrets`` logger. May raise only on a bug in
    the local rules; :func:`mask_secrets` never raises.
    """
    if not text:
        return []
    spans: list[SecretSpan] = []
    hidden: list[SecretSpan] = []
    # Encoded once: kingfisher scans bytes, and so does the token-run scan.
    data = text.encode("utf-8", "surrogatepass")
    scanner = _get_scanner()
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


# Passes over a text that had findings: a mask can split a run of token
# characters, and what is left of the run may be a secret on its own.
_MAX_PASSES: Final = 3
_TOKEN_CHARS: Final = frozenset(_ASCII_ALNUM | set("+/_-"))
# Characters that end an unquoted assignment value (see _ASSIGNMENT_RE).
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


def mask_secrets(text: str) -> str:
    """Return ``text`` with each secret replaced by ``[MASKED:<kind>]``.

    Everything outside the secrets is unchanged; for a URL password or a
    ``KEY=value`` assignment only the password or value is replaced. Masking a
    masked text changes nothing: when a mask splits a run of token characters
    or an unquoted value, the result is scanned again (at most twice) until no
    new finding turns up. Never raises: if detection itself
    fails, the whole text is replaced by ``[MASKED:unscannable]``, since
    storing it unmasked could leak a secret.
    """
    try:
        if not isinstance(text, str):  # defensive: callers may pass bytes
            text = bytes(text).decode("utf-8", "replace") if text else ""
        for _ in range(_MAX_PASSES):
            spans = find_secrets(text)
            if not spans:
                break
            rescan = any(_needs_rescan(text, span) for span in spans)
            text = _replace(text, spans)
            if not rescan:
                break  # each mask stands alone: a new pass would find nothing
        return text
    except Exception as exc:
        _log.error("secret masking failed (%s); the whole text is masked", type(exc).__name__)
        return "[MASKED:unscannable]"
