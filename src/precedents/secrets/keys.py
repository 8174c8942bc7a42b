"""``KEY=value`` and ``key: value`` assignments whose key names a secret.

Used by :mod:`precedents.secrets.mask`. The key must *end* with password, token,
secret, api_key... (``DB_PASSWORD``, ``PGPASSWORD``, ``"token":``); the value
is masked unless it reads as code (``get_password()``, ``self.token``), a
type (``password: str``) or a placeholder (``${DB_PASSWORD}``). Spans are
``(start, end, kind)`` tuples of str offsets; docs/secrets.md has the details.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["assignment_spans"]

Span = tuple[int, int, str]

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


def assignment_spans(text: str) -> list[Span]:
    spans: list[Span] = []
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
        spans.append((m.start(group), m.end(group), _assignment_kind(key)))
    return spans
