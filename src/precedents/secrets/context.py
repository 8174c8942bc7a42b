"""Secrets found by their context, whatever they look like (issue #20, item 2).

Used by :mod:`precedents.secrets.mask`, next to kingfisher and the shape rules.
A password is often a passphrase (``Harbor-Lantern-7781``): no entropy test
catches it, but the words around it do:

* prose: ``the admin password is Maple-Orbit-5521-q``, ``use password X``,
  ``the passphrase is 'correct horse battery staple'``;
* command lines: ``mysql -pX``, ``--password X``, ``redis-cli -a X``,
  ``sshpass -p X``, ``curl -u user:X``;
* connection strings: ``Pwd=X;`` in ODBC/ADO strings (also with spaces or
  braces), ``jdbc:oracle:thin:user/X@host``.

``KEY=value`` and ``key: value`` assignments (:mod:`precedents.secrets.keys`)
and ``user:X@host`` URLs (:mod:`precedents.secrets.mask`) were masked already,
whatever the value; this module adds what they leave out.
Spans are ``(start, end, kind)`` tuples of str offsets. docs/secrets.md says
what is masked, what is left alone on purpose and the false positives measured.
"""

from __future__ import annotations

import re
import string
from typing import Final

__all__ = ["context_spans", "password_like"]

Span = tuple[int, int, str]

# -- what a value after a keyword must look like -------------------------------------

_DIGIT_RE: Final = re.compile(r"\d")
_LETTER_RE: Final = re.compile(r"[^\W\d_]")
# A symbol inside a value, not at its ends: ``P@ss!w0rd``, ``Tr0ub4dor&3``.
_INNER_SYMBOL_RE: Final = re.compile(r"\w[!@#$%^&*+=~?|]+\w")
# Words with a digit that prose puts after "the token is" / "the password is":
# algorithms, encodings, versions, durations and sizes, counts.
_TECH_WORD_RE: Final = re.compile(
    r"(?i)(?:(?:sha-?\d+|md[45]|base-?\d+|utf-?\d+|crc-?\d+)[a-z]*|"
    r"ucs-?\d|hs\d+|rs\d+|es\d+|ps\d+|ed\d+|"
    r"aes-?\d+(?:-\w+)?|rsa-?\d+|x\d+|p-?\d+|bcrypt\d*|argon2\w*|scrypt|pbkdf2\w*|"
    r"oauth-?\d(?:\.\d)?|http/?\d(?:\.\d)?|tls-?\d(?:\.\d)?|ipv[46]|2fa|mfa|e2e|i18n|l10n|"
    r"a11y|k8s|s3|ec2|gpt-?\d\w*|v?\d+(?:\.\d+)+\w*|v\d+\w*|\d+(?:st|nd|rd|th)|"
    r"\d+(?:[smhdwy]|ms|us|ns|sec|secs|mins?|hours?|hrs?|days?|weeks?|months?|years?|"
    r"chars?|characters?|bytes?|bits?|[kmgt]i?b|k|x|%|px|em|rem)|"
    r"\d+(?:-|\s)?(?:bit|byte|char|character|digit|day|hour|minute|second|letter)s?)"
    r"(?:-[a-z]+)*"
)
_PLACEHOLDER_RE: Final = re.compile(
    r"(?i)\$\{?\w+\}?|\$\(.*\)|<[^>]*>|\{\{.*\}\}|%\w+%|[*xX.#_?-]+|\[MASKED:[a-z0-9-]+\]"
    r"|\[?(?:redacted|hidden|removed|masked|omitted)\]?|\.\.\.|…"
    r"|(?:none|null|nil|true|false|undefined|empty|unset|required|optional)"
)
_SNAKE_NAME_RE: Final = re.compile(r"[A-Za-z]+(?:_[A-Za-z]+)+|[A-Za-z]+(?:\.[A-Za-z_]+)+")
# A call, a subscript, a block: code, not a value.
_CODE_RE: Final = re.compile(r"\w[(\[{]|[)\]}]$|^[(\[{]")
# What may end a bare value in prose without being part of it.
_TRAILING: Final = ".,;:!?)]}'\"`»”’"


def password_like(value: str, *, digits: bool = False) -> bool:
    """A word that reads as a password rather than prose: letters and digits
    (``hunter2``, ``Maple-Orbit-5521-q``) or letters around a symbol
    (``P@ss!word``), and neither a placeholder, a technical word (``sha256``,
    ``24h``, ``v2.1``), code (``get(x1)``) nor a code name (``API_TOKEN``).
    With ``digits``, 6 digits or more also count (``the password is 20240611``)."""
    if len(value) < 5 or len(value) > 200 or _PLACEHOLDER_RE.fullmatch(value):
        return False
    if digits and value.isdigit():
        return len(value) >= 6
    if not _LETTER_RE.search(value) or _SNAKE_NAME_RE.fullmatch(value) or _CODE_RE.search(value):
        return False
    if _DIGIT_RE.search(value):
        return _TECH_WORD_RE.fullmatch(value) is None
    return _INNER_SYMBOL_RE.search(value) is not None


def _phrase_like(value: str) -> bool:
    """A quoted value after ``password is``: a password, or a passphrase of words."""
    if password_like(value, digits=True):
        return True
    words = value.split()
    return len(value) >= 8 and len(words) >= 2 and not _PLACEHOLDER_RE.fullmatch(value)


# -- prose ------------------------------------------------------------------------------

# A keyword naming a secret, matched where ``str.find`` found its stem (a regex
# tried at every character costs ten times more on conversation logs). It may
# end a name (``REDIS_PASSWORD``: the name is read backwards in code). ``key``
# alone is too common ("the key is to..."): it counts only after a word that
# makes it a credential. ``pw``/``pwd`` need ``is``: ``pwd`` is also a command.
_KEYWORD_AT: Final = (
    r"(?:(?P<pw>pass(?:word|wd|phrase|code)|pass\s+phrase)|(?P<pwd>pwd?)"
    r"|(?P<other>token|secret|key|credentials?))"
)
_KEY_QUALIFIER_RE: Final = re.compile(
    r"(?i)(?:api|access|secret|private|license|licence|encryption|signing|master|deploy)"
    r"[ \t_-]?\Z"
)
# ``<keyword> is|was|set to <value>``, or for passwords only ``<keyword> <value>``.
# (``=`` and ``:`` are the assignment rule's, in secrets_keys.py.)
_LINK: Final = (
    r"(?:\s+(?:is|was|are|were)(?:\s+now|\s+still|\s+set\s+to|\s+changed\s+to)?"
    r"|\s+(?:set|changed|reset|rotated)\s+to)"
)
_PROSE_RE: Final = re.compile(
    rf"(?i){_KEYWORD_AT}(?:\s+for\s+[\w.@-]+)?(?P<link>{_LINK})?[ \t]+"
    r"(?:[\"'`“‘](?P<quoted>[^\"'`\n“”‘’]{1,200})[\"'`”’]"
    r"|(?P<bare>[^\s\"'`]{1,200}))"
)
_PROSE_STEMS: Final = ("pass", "pw", "token", "secret", "key", "credential")
_NAME_CHARS: Final = frozenset(string.ascii_letters + string.digits + "_-")


def _positions(lowered: str, stems: tuple[str, ...]) -> list[int]:
    """Where each stem starts in ``lowered``, in order."""
    found: set[int] = set()
    for stem in stems:
        pos = lowered.find(stem)
        while pos >= 0:
            found.add(pos)
            pos = lowered.find(stem, pos + 1)
    return sorted(found)


def _keyword_starts(text: str, pos: int) -> bool:
    """A keyword may start at ``pos``: after a non-letter, or after ``_``/``-``
    in a name (``REDIS_PASSWORD``) that is not an attribute or a path
    (``self.password``, ``$password``, ``/password``)."""
    if pos == 0:
        return True
    before = text[pos - 1]
    if before.isalnum():
        return False
    if before not in "_-":
        return before not in "$.@/"
    start = pos - 1
    while start > 0 and text[start - 1] in _NAME_CHARS:
        start -= 1
    return start == 0 or text[start - 1] not in "$.@/-"


def _prose_spans(text: str, lowered: str, positions: list[int]) -> list[Span]:
    spans: list[Span] = []
    taken = -1
    for pos in positions:
        if pos < taken or not _keyword_starts(text, pos):
            continue
        m = _PROSE_RE.match(text, pos)
        if m is None:
            continue
        other = m.group("other")
        if (
            other
            and other.lower() == "key"
            and not _KEY_QUALIFIER_RE.search(text, max(0, pos - 16), pos)
        ):
            continue
        password = m.group("pw") is not None or m.group("pwd") is not None
        linked = m.group("link") is not None
        if not linked and m.group("pw") is None:
            continue  # "token usage", "secret sauce", "pwd /tmp": a noun, not a value
        kind = "password" if password else _kind(other, text[max(0, pos - 12) : pos])
        quoted = m.group("quoted")
        if quoted is not None:
            value, start = quoted.strip(), m.start("quoted") + (len(quoted) - len(quoted.lstrip()))
            ok = _phrase_like(value) if password else password_like(value)
        else:
            bare = m.group("bare").rstrip(_TRAILING)
            value, start = bare, m.start("bare")
            ok = password_like(value, digits=password and linked)
        if ok:
            spans.append((start, start + len(value), kind))
            taken = start + len(value)
    return spans


def _kind(keyword: str, before: str) -> str:
    keyword = keyword.lower()
    if keyword == "token":
        return "token"
    if keyword == "key":
        return "api-key" if before.lower().rstrip(" \t_-").endswith("api") else "secret-key"
    if keyword.startswith("credential"):
        return "credential"
    return "secret"


# -- command lines ----------------------------------------------------------------------

# A value given to a password option: anything up to a space (or quoted).
_OPT_VALUE: Final = r"(?:\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^\s\"'`|;&<>]+))"
# --password X, --passwd=X, -password X, keytool -storepass X: any tool. Matched
# at the option's name, found from its "pass"/"pw".
_OPTION_RE: Final = re.compile(
    r"(?:password|passwd|pass|pw|passphrase|storepass|keypass|srcstorepass|deststorepass)"
    rf"(?:[ \t]+|=){_OPT_VALUE}"
)
# Tools with a password option of their own, each tried only when its name is
# in the text.
_TOOL_RES: Final[tuple[tuple[tuple[str, ...], re.Pattern[str]], ...]] = (
    # mysql -pX (glued: a space would make it "prompt, and X is the database").
    (
        ("mysql", "mariadb"),
        re.compile(
            r"(?<![\w.-])(?:mysql|mysqldump|mysqladmin|mysqlsh|mariadb|mariadb-dump)"
            rf"[ \t][^\n|;&]*?(?<=\s)-p{_OPT_VALUE}"
        ),
    ),
    (("redis-cli",), re.compile(rf"\bredis-cli\b[^\n|;&]*?(?<=\s)-a[ \t]+{_OPT_VALUE}")),
    (("sshpass",), re.compile(rf"\bsshpass\b[^\n|;&]*?(?<=\s)-p[ \t]*{_OPT_VALUE}")),
    (
        ("htpasswd",),
        re.compile(rf"\bhtpasswd\b[^\n|;&]*?(?<=\s)-\w*b\w*[ \t]+\S+[ \t]+\S+[ \t]+{_OPT_VALUE}"),
    ),
    # curl -u user:X, --user user:X.
    (
        ("curl",),
        re.compile(
            r"\bcurl\b[^\n|;&]*?(?<=\s)(?:-u|--user)[ \t=]+[\"']?[^\s:\"']+:"
            r"(?P<bare>[^\s\"'`|;&<>]+)"
        ),
    ),
)
# The next option, a variable, a <placeholder>, a METAVAR.
_FLAG_VALUE_RE: Final = re.compile(r"-|\$|<|%|\{\{|[A-Z][A-Z_]*$")
# Prose about an option ("the --password option", "--password and --user").
_PROSE_WORDS: Final = frozenset(
    (
        *("option", "options", "flag", "flags", "argument", "arguments", "parameter"),
        *("parameters", "switch", "and", "or", "is", "are", "to", "for", "with", "the"),
        *("a", "an", "if", "when", "must", "should", "can", "will", "not", "in", "on", "of"),
        *("as", "from", "instead"),
    )
)


def _option_value(m: re.Match[str]) -> Span | None:
    groups = m.groupdict()
    group = next(g for g in ("dq", "sq", "bare") if groups.get(g) is not None)
    value = groups[group]
    if group == "bare":
        value = value.rstrip(".,)")
    if _FLAG_VALUE_RE.match(value) or _PLACEHOLDER_RE.fullmatch(value) or "[MASKED:" in value:
        return None
    if value.lower() in _PROSE_WORDS:
        return None
    start = m.start(group)
    return start, start + len(value), "password"


def _option_start(text: str, pos: int) -> int | None:
    """Where the option whose name holds ``pos`` starts, if it is one (``-x``, ``--x``)."""
    start = pos
    while start > 0 and text[start - 1].isascii() and text[start - 1].isalpha():
        start -= 1
    if start == 0 or text[start - 1] != "-":
        return None
    dashes = start - 2 if start >= 2 and text[start - 2] == "-" else start - 1
    if dashes > 0 and (text[dashes - 1].isalnum() or text[dashes - 1] in "_-"):
        return None  # inside a word or a name: ``my-password x``
    return start


def _cli_spans(text: str, lowered: str, positions: list[int]) -> list[Span]:
    spans: list[Span] = []
    starts = {
        _option_start(text, pos) for pos in positions if lowered.startswith(("pass", "pw"), pos)
    }
    for start in sorted(p for p in starts if p is not None):
        m = _OPTION_RE.match(text, start)
        span = _option_value(m) if m is not None else None
        if span is not None:
            spans.append(span)
    for names, pattern in _TOOL_RES:
        # Tried at each mention of the tool, not with finditer: a match must not
        # hide the next one (``curl -u a:x; curl -u b:y``), or masking the first
        # would let a second pass find more, and masking twice would change things.
        for pos in _positions(lowered, names):
            m = pattern.match(text, pos)
            span = _option_value(m) if m is not None else None
            if span is not None:
                spans.append(span)
    return spans


# -- connection strings -----------------------------------------------------------------

# ``Pwd=X;`` / ``Password = {X y};``: the value runs to the next ``;`` (it may
# hold spaces), in a string of ``;``-separated settings. Matched where the
# key's stem was found.
_CONN_RE: Final = re.compile(
    r"(?i)(?:pwd|password|account ?key|shared ?access ?key)\s*=\s*"
    r"(?:\{(?P<brace>[^}\n]+)\}|\"(?P<dq>[^\"\n]+)\"|'(?P<sq>[^'\n]+)'|(?P<bare>[^;\"'\r\n]+))"
)
# Another setting after the value: ``;Database=x``.
_NEXT_SETTING_RE: Final = re.compile(r";[ \t]*[A-Za-z][\w ]{0,30}=")
_ORACLE_RE: Final = re.compile(r"(?i)jdbc:oracle:\w+:@?[^/\s@:]+/(?P<bare>[^\s@/]+)@")


def _conn_starts(lowered: str, positions: list[int]) -> list[int]:
    """Where a connection-string key may start, from the keyword stems found."""
    starts = []
    for pos in positions:
        if lowered.startswith(("pwd", "password"), pos):
            starts.append(pos)
        elif lowered.startswith("key", pos):
            for name in ("account", "account ", "sharedaccess", "shared access "):
                if lowered.startswith(name, pos - len(name)):
                    starts.append(pos - len(name))
    return starts


def _connection_spans(text: str, lowered: str, positions: list[int]) -> list[Span]:
    spans: list[Span] = []
    if ";" in text:
        for pos in _conn_starts(lowered, positions):
            if pos and text[pos - 1] not in ";\"'{( \t\n":
                continue
            m = _CONN_RE.match(text, pos)
            if m is None:
                continue
            group = next(g for g in ("brace", "dq", "sq", "bare") if m.group(g) is not None)
            value = m.group(group)
            # Only in a ``;``-separated list of settings: after a ``;`` or
            # before one that starts another setting. ``password = f(x);`` in
            # code is the assignment rule's, which knows code from configuration.
            after_semicolon = text[max(0, pos - 16) : pos].rstrip(" \t\"'{(").endswith(";")
            if not after_semicolon and not _NEXT_SETTING_RE.match(text, m.end()):
                continue
            if group == "bare":
                value = value.rstrip()
            if not value.strip() or _PLACEHOLDER_RE.fullmatch(value.strip()):
                continue
            start = m.start(group)
            kind = "secret-key" if lowered.startswith(("acc", "sha"), pos) else "password"
            spans.append((start, start + len(value), kind))
    if "jdbc:" in lowered:
        spans += [(*m.span("bare"), "password") for m in _ORACLE_RE.finditer(text)]
    return spans


def context_spans(text: str) -> list[Span]:
    """Secrets found by the words around them (see the module docstring)."""
    lowered = text.lower()
    if len(lowered) != len(text):
        lowered = "".join(c.lower() if len(c.lower()) == 1 else c for c in text)  # same offsets
    positions = _positions(lowered, _PROSE_STEMS)
    spans = _prose_spans(text, lowered, positions) if positions else []
    spans += _cli_spans(text, lowered, positions)
    return spans + _connection_spans(text, lowered, positions)
