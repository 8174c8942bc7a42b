"""Secret rules that need no ``KEY=`` before the value (SPEC §2, Secrets).

Used by :mod:`precedents.secrets.mask`, next to kingfisher and its local rules:

* vendor token prefixes at any plausible length (``sk-ant-``, ``ghp_``,
  ``xoxb-``, ``glpat-``, ``AIza``, ``hf_``...), not only the official one;
* a bare high-entropy token, masked with no keyword before it (an assistant
  repeating a key on its own line);
* a keyword followed by a random-looking value with no ``=`` or ``:``
  (``and secret Zk9...``, ``the token is ab12...``);
* every further occurrence, in the same text, of a value found once.

Spans are ``(start, end, kind)`` tuples of str offsets. docs/secrets.md gives
each rule, its thresholds, what is left alone on purpose and the measured
false positives.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import math
import re
import string
from collections import Counter
from typing import Final

__all__ = [
    "aws_key_id_spans",
    "byte_to_char_offsets",
    "looks_random",
    "plausible_token",
    "repeat_spans",
    "repeatable",
    "shannon_entropy",
    "token_spans",
]

Span = tuple[int, int, str]

# -- randomness --------------------------------------------------------------------

_DIGIT_RE: Final = re.compile(r"[0-9]")
_SEPARATORS_RE: Final = re.compile(r"[/+_.=-]+")
# camelCase pieces: a word, an acronym, a number.
_PIECE_RE: Final = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_HEX_RE: Final = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_UUID_RE: Final = re.compile(r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}")
# Pieces per character, below which a token reads as words (a path, a slug, a
# camelCase name) rather than random characters: random base62/base64 tokens
# of 32+ characters score 0.31 or more in 999 cases of 1000, paths and slugs
# of the shared corpora 0.28 at most (docs/secrets.md).
_MIN_DENSITY: Final = 0.3
# Shannon entropy per character: random 32-character base62 tokens score 4.05
# bits or more in 999 cases of 1000 (longer ones score more). A weak filter
# (paths reach 4.8 too), it only drops repetitive strings such as ``Ab1Ab1...``.
_MIN_ENTROPY: Final = 4.0
_MIN_KEYWORD_VALUE_ENTROPY: Final = 3.0


def _piece_density(token: str) -> float:
    """camelCase pieces per character: ~0.5 for random text, ~0.2 for words.

    Segments between separators that are short (up to 5 characters), plain
    numbers or hex (a commit hash in a path) count as one piece each.
    """
    pieces = chars = 0
    for seg in _SEPARATORS_RE.split(token):
        if not seg:
            continue
        chars += len(seg)
        if len(seg) <= 5 or _HEX_RE.fullmatch(seg):
            pieces += 1
        else:
            pieces += len(_PIECE_RE.findall(seg))
    return pieces / chars if chars else 0.0


def shannon_entropy(token: str) -> float:
    """Shannon entropy of the characters of ``token``, in bits per character."""
    n = len(token)
    if not n:
        return 0.0
    return math.log2(n) - sum(c * math.log2(c) for c in Counter(token).values()) / n


_PRINTABLE: Final = bytes([9, 10, 13, *range(32, 127)])


def _encoded_text(token: str) -> bool:
    """True if ``token`` is base64 of readable text with spaces (a docs example)."""
    try:
        data = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_", validate=False)
    except (binascii.Error, ValueError):
        return False
    if len(data) < 8 or not (b" " in data or b"\n" in data):
        return False
    return not data.translate(None, _PRINTABLE)  # nothing left once text is removed


def _base64_shaped(token: str) -> bool:
    """Separators as in random base64 or base64url, not as in a path or a slug.

    ``/`` or ``+`` (base64) never mix with ``-`` or ``_`` (base64url) in one
    random token, and random text has a separator every 32 characters on
    average: more than 3 + len/16 of them (p < 0.002) means words.
    """
    std = token.count("/") + token.count("+")
    url = token.count("-") + token.count("_")
    if std and url:
        return False
    return std + url <= 3 + len(token) // 16


def looks_random(token: str) -> bool:
    """True for a token of random characters: upper, lower, digits, no words.

    The test behind the bare high-entropy rule; callers check length and
    context (URLs, data URIs...) themselves.
    """
    if token.islower() or token.isupper() or not _DIGIT_RE.search(token):
        return False  # hex digests, UUIDs, git hashes, lower-case slugs
    if token.startswith(_NOT_SECRET_PREFIXES) or not _base64_shaped(token):
        return False
    if _piece_density(token) < _MIN_DENSITY or shannon_entropy(token) < _MIN_ENTROPY:
        return False
    return not _encoded_text(token)


# -- vendor prefixes -------------------------------------------------------------

# (prefixes, kind, pattern with a ``body`` group). Tried at the start of each
# run of token characters (see token_spans), so adding a vendor costs no pass
# over the text. Minimum lengths sit well under the official ones: a key cut
# short, or a newer and longer format, still leaks.
_END: Final = r"(?![A-Za-z0-9_-])"
_VENDOR_RULES: Final[tuple[tuple[tuple[str, ...], str, re.Pattern[str]], ...]] = (
    (("sk-ant-",), "anthropic-api-key", re.compile(rf"sk-ant-(?P<body>[\w-]{{20,}}){_END}", re.A)),
    (
        ("sk-proj-", "sk-svcacct-", "sk-admin-", "sk-None-"),
        "openai-api-key",
        re.compile(rf"sk-(?:proj|svcacct|admin|None)-(?P<body>[\w-]{{20,}}){_END}", re.A),
    ),
    (("sk-",), "openai-api-key", re.compile(rf"sk-(?P<body>[A-Za-z0-9]{{32,}}){_END}")),
    (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
        "github-token",
        re.compile(rf"gh[pousr]_(?P<body>[A-Za-z0-9]{{20,}}){_END}"),
    ),
    (("github_pat_",), "github-token", re.compile(rf"github_pat_(?P<body>\w{{22,}}){_END}", re.A)),
    (
        tuple(f"xox{c}-" for c in "abeoprs"),
        "slack-token",
        re.compile(rf"xox[abeoprs]-(?P<body>[A-Za-z0-9-]{{10,}}){_END}"),
    ),
    (("xapp-",), "slack-token", re.compile(rf"xapp-(?P<body>\d-[A-Za-z0-9-]{{10,}}){_END}")),
    (
        tuple(f"gl{p}-" for p in ("pat", "dt", "rt", "ptt", "soat", "cbt", "ft", "imt", "agent")),
        "gitlab-token",
        re.compile(
            rf"gl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|agent)-(?P<body>[\w-]{{20,}}){_END}", re.A
        ),
    ),
    (("AIza",), "gcp-api-key", re.compile(rf"AIza(?P<body>[\w-]{{30,}}){_END}", re.A)),
    (("hf_",), "huggingface-token", re.compile(rf"hf_(?P<body>[A-Za-z0-9]{{30,}}){_END}")),
    (("npm_",), "npm-token", re.compile(rf"npm_(?P<body>[A-Za-z0-9]{{30,}}){_END}")),
    (("pypi-",), "pypi-token", re.compile(rf"pypi-(?P<body>[\w-]{{50,}}){_END}", re.A)),
    (
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_"),
        "stripe-key",
        re.compile(rf"[rs]k_(?:live|test)_(?P<body>[A-Za-z0-9]{{16,}}){_END}"),
    ),
)
_VENDOR_PREFIXES: Final = tuple(prefix for rule in _VENDOR_RULES for prefix in rule[0])
# AWS access key ids: the official 16 base32 characters after the prefix, or
# 16-20 upper-case letters and digits with at least one digit. A pass of its
# own (as before), since a key id may follow a ``/`` or ``_``.
_AWS_PREFIXES: Final = ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")
_AWS_KEY_ID_RE: Final = re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)([A-Z0-9]{16,20})\b")
_BASE32_RE: Final = re.compile(r"[A-Z2-7]{16}")
_SAME_CHAR_RUN_RE: Final = re.compile(r"(.)\1{5}")  # xxxxxx, 000000: a placeholder


def plausible_token(body: str) -> bool:
    """Random enough for a token: not ``your-token-here``, ``xxxxxx`` or ``000000``.

    A digit and a letter, or both cases and no words; never one character six
    times in a row.
    """
    if _SAME_CHAR_RUN_RE.search(body):
        return False
    has_digit = _DIGIT_RE.search(body) is not None
    has_upper = body.lower() != body
    has_lower = body.upper() != body
    if has_digit and (has_upper or has_lower):
        return True
    return has_upper and has_lower and _piece_density(body) >= _MIN_DENSITY


def _vendor_span(text: str, start: int, token: str) -> Span | None:
    """The vendor token at ``text[start:]``, which begins a run ``token``."""
    for prefixes, kind, pattern in _VENDOR_RULES:
        if token.startswith(prefixes):
            m = pattern.match(text, start)
            if m is not None and plausible_token(m.group("body")):
                return start, m.end(), kind
    return None


def aws_key_id_spans(text: str) -> list[Span]:
    """AWS access key ids (``AKIA...``, ``ASIA...``) of 16-20 characters after the prefix."""
    if not any(prefix in text for prefix in _AWS_PREFIXES):
        return []
    return [
        (m.start(), m.end(), "aws-access-key")
        for m in _AWS_KEY_ID_RE.finditer(text)
        if _BASE32_RE.fullmatch(m.group(1)) or _DIGIT_RE.search(m.group(1))
    ]


def byte_to_char_offsets(data: bytes, offsets: set[int]) -> dict[int, int]:
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


# -- bare tokens and keyword values ------------------------------------------------

# Token characters: base64 and base64url. The scan works on the UTF-8 bytes,
# translated (at C speed) to one class per byte: "1" for a digit, "a" for any
# other token character, " " for everything else (every byte of a non-ASCII
# character too). A run worth a look holds a digit, and bytes.find() jumps
# from digit to digit far faster than a regex walks a text: in prose, digits
# are rare. Random tokens of 20+ characters hold a digit 97% of the time, 36+
# 99.8%; the rest are left to kingfisher and the assignment rule.
_TOKEN_CHARSET: Final = frozenset(string.ascii_letters + string.digits + "+/_-")
_RUN_TABLE: Final = bytes(
    ord("1") if chr(b) in string.digits else ord("a") if chr(b) in _TOKEN_CHARSET else ord(" ")
    for b in range(256)
)
_MIN_RUN: Final = 16
_MIN_BARE_LEN: Final = 32
_MAX_TOKEN_LEN: Final = 1024  # longer: a blob (image, archive, certificate), not a key

# Random-looking but not secret: API object ids, integrity hashes, SSH public
# keys, and base64 file headers (PNG, JPEG, GIF, WebP, PDF, SVG, XML, gzip).
_NOT_SECRET_PREFIXES: Final = (
    *("toolu_", "srvtoolu_", "msg_", "msgbatch_", "req_", "file_", "call_", "chatcmpl-"),
    *("resp_", "run_", "thread_", "asst_", "batch_"),
    *("sha1-", "sha256-", "sha384-", "sha512-", "md5-"),
    *("AAAAB3NzaC1", "AAAAC3NzaC1", "AAAAE2VjZHNh"),
    *("iVBORw0KGgo", "/9j/", "R0lGOD", "UklGR", "JVBERi0", "PHN2Zy", "PD94bWw", "H4sI"),
)
# What comes before a token in the same word (back to a space, a quote or a
# bracket) that makes it no secret: a URL, a data URI, a go.sum hash.
_WORD_BEFORE_RE: Final = re.compile(r"[^\s\"'`<>()\[\]{}\\]*")
_CONTEXT_SKIP_RE: Final = re.compile(r"://|data:|base64,|(?:^|\W)(?:h1|sha\d+|md5):$")
_PUBLIC_PEM_RE: Final = re.compile(
    r"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*(?:CERTIFICATE|PUBLIC KEY(?: BLOCK)?|SIGNATURE)"
    r"(?: REQUEST)?)-----.{0,65536}?-----END (?P=label)-----",
    re.DOTALL,
)
# A keyword right before a value, with only spaces (and maybe ``is``) between:
# ``secret Zk9...``, ``the token is ab12...``, ``API key 'x81...'``. Values
# after ``=`` or ``:`` are the assignment rule's, which knows code from config.
_KEYWORD_BEFORE_RE: Final = re.compile(
    r"(?i)(?<![a-z])(?P<pre>(?:api|access|auth|secret|private)[ _-]?)?"
    r"(?P<kw>secret|token|password|passwd|passphrase|credentials?|key)s?"
    r"(?:[ \t]+(?:is|was)\b)?[ \t]+[\"'`]?\Z"
)
_KEYWORD_STEMS: Final = ("secret", "token", "pass", "key", "credential")
_JSON_ESCAPES: Final = frozenset("nrtbf")


def _word_before(text: str, start: int) -> str:
    rev = text[max(0, start - 512) : start][::-1]
    m = _WORD_BEFORE_RE.match(rev)
    return rev[: m.end()][::-1] if m else ""


def _keyword_kind(text: str, start: int, token: str) -> str | None:
    """The kind named by a keyword just before ``token``, if its value looks random."""
    if not (token[0].isalnum() and _DIGIT_RE.search(token) and not token.isdigit()):
        return None
    window = text[max(0, start - 40) : start]
    lowered = window.lower()
    if not any(stem in lowered for stem in _KEYWORD_STEMS):
        return None  # most runs (JSON ids, paths): no regex needed
    m = _KEYWORD_BEFORE_RE.search(window)
    if m is None:
        return None
    keyword = m.group("kw").lower()
    if keyword == "key" and (m.group("pre") or "").lower().startswith("api"):
        keyword = "api-key"
    if _HEX_RE.fullmatch(token):
        # A hex key id or fingerprint after ``key``; a hex secret otherwise.
        if keyword == "key":
            return None
    elif (
        token.startswith(_NOT_SECRET_PREFIXES)
        or _piece_density(token) < _MIN_DENSITY
        or shannon_entropy(token) < _MIN_KEYWORD_VALUE_ENTROPY
        or _encoded_text(token)
    ):
        return None
    if _UUID_RE.fullmatch(token):
        return None
    if keyword.startswith("pass"):
        return "password"
    return {"key": "secret-key", "credentials": "credential"}.get(keyword, keyword)


def token_spans(text: str, data: bytes | None = None) -> list[Span]:
    """Secrets found in runs of token characters, with no ``KEY=`` before them.

    Each run of 16+ base64/base64url characters holding a digit is a vendor
    token (by its prefix), a bare random token of 32+ characters, a random
    value right after a keyword, or nothing. ``data`` is ``text`` in UTF-8
    (``surrogatepass``), if the caller has it already.
    """
    if data is None:
        data = text.encode("utf-8", "surrogatepass")
    spans: list[Span] = []
    public_blocks: list[tuple[int, int]] | None = None
    for start, token in _runs(text, data):
        if start and text[start - 1] == "\\" and token[0] in _JSON_ESCAPES:
            start, token = start + 1, token[1:]  # ``\n`` in a JSON string
        if not _MIN_RUN <= len(token) <= _MAX_TOKEN_LEN:
            continue
        if token.startswith(_VENDOR_PREFIXES):
            vendor = _vendor_span(text, start, token)
            if vendor is not None:
                spans.append(vendor)
                continue
        kind: str | None = None
        bare = token.rstrip("=")  # padding counts for neither length nor randomness
        if len(bare) >= _MIN_BARE_LEN and looks_random(bare):
            if _CONTEXT_SKIP_RE.search(_word_before(text, start)):
                continue
            if public_blocks is None:  # once per text, and only if needed
                public_blocks = (
                    [b.span() for b in _PUBLIC_PEM_RE.finditer(text)]
                    if "-----BEGIN " in text
                    else []
                )
            i = bisect.bisect_right(public_blocks, (start, len(text))) - 1
            if i >= 0 and start < public_blocks[i][1]:
                continue  # a line of a certificate or public key
            kind = "high-entropy"
        elif start and (
            text[start - 1] in " \t"
            or (text[start - 1] in "\"'`" and text[start - 2 : start - 1] in " \t")
        ):
            kind = _keyword_kind(text, start, token)  # ``secret Zk9...``, ``token 'ab12...'``
        if kind is not None:
            spans.append((start, start + len(token), kind))
    return spans


def _runs(text: str, data: bytes) -> list[tuple[int, str]]:
    """``(str offset, token)`` for each maximal run of 16+ token characters
    holding a digit, with up to two ``=`` of base64 padding after it."""
    flat = data.translate(_RUN_TABLE)
    find, rfind = flat.find, flat.rfind  # the loop runs once per digit-holding run
    n = len(flat)
    found: list[tuple[int, int]] = []
    pos = find(b"1")
    while pos >= 0:
        start = rfind(b" ", 0, pos) + 1
        end = find(b" ", pos)
        if end < 0:
            end = n
        if end - start >= 16:  # _MIN_RUN
            pad = 0
            while pad < 2 and end + pad < n and data[end + pad] == 0x3D:  # "="
                pad += 1
            while pad and end + pad < n and flat[end + pad] != 0x20:
                pad -= 1  # "abc=def": an assignment, not padding
            found.append((start, end + pad))
        pos = find(b"1", end)
    if len(data) == len(text):  # ASCII: bytes are characters
        return [(start, text[start:end]) for start, end in found]
    chars = byte_to_char_offsets(data, {start for start, _ in found})
    return [(chars[start], data[start:end].decode("ascii")) for start, end in found]


# -- repeated values -----------------------------------------------------------------

_MIN_REPEAT_LEN: Final = 6
_FIND_LOOP_MAX_VALUES: Final = 32
# Runs of characters a secret value may contain, for the many-values path.
_VALUE_RUN_RE: Final = re.compile(r"[^\s\"'`<>()\[\]{},;:=&?@\\|]+")


_PLACEHOLDER_EDGES: Final = frozenset("[]{}<>()|*#$%")
_SPACE_RE: Final = re.compile(r"\s")
_LETTER_RE: Final = re.compile(r"[^\W\d_]")
# A code identifier: ``unk_token``, ``self.password``, ``cfg.api_key``.
_IDENTIFIER_RE: Final = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*", re.A)


def repeatable(value: str) -> bool:
    """A value distinctive enough to mask wherever it appears in the text.

    It needs a letter and a digit (or 16+ characters), and must be neither a
    plain word (``password: letmein``), nor a dotted or snake_case identifier
    (``token=unk_token`` in code), nor a placeholder (``[MASK]``, ``{token}``,
    ``<key>``, ``#d8dee9``, ``hf_***``): elsewhere in the text those are
    ordinary words and names, and masking them all would spread one false
    positive over a whole file.
    """
    if not _MIN_REPEAT_LEN <= len(value) <= _MAX_TOKEN_LEN or value.isalpha():
        return False
    if value[0] in _PLACEHOLDER_EDGES or value[-1] in _PLACEHOLDER_EDGES:
        return False
    if _SPACE_RE.search(value) or not _LETTER_RE.search(value):
        return False
    if len(value) < 16 and not _DIGIT_RE.search(value):
        return False
    return not (_IDENTIFIER_RE.fullmatch(value) and ("_" in value or "." in value))


def _bounded(text: str, start: int, end: int) -> bool:
    """The occurrence is a whole token: no letter or digit glued to either side."""
    return (start == 0 or not text[start - 1].isalnum()) and (
        end == len(text) or not text[end].isalnum()
    )


def repeat_spans(text: str, spans: list[Span]) -> list[Span]:
    """Every other whole-token occurrence of a value found in ``spans``
    (not those in ``spans`` themselves)."""
    values: dict[str, str] = {}
    known = {start for start, _, _ in spans}
    for start, end, kind in spans:
        value = text[start:end]
        if value not in values and repeatable(value):
            values[value] = kind
    if not values:
        return []
    found: list[Span] = []
    if len(values) <= _FIND_LOOP_MAX_VALUES:
        for value, kind in values.items():
            pos = text.find(value)
            while pos >= 0:
                end = pos + len(value)
                if pos not in known and _bounded(text, pos, end):
                    found.append((pos, end, kind))
                pos = text.find(value, end)
    else:  # many values (an env dump): one pass, whole runs only
        for m in _VALUE_RUN_RE.finditer(text):
            kind_or_none = values.get(m.group())
            if kind_or_none is not None and m.start() not in known:
                found.append((m.start(), m.end(), kind_or_none))
    return found
