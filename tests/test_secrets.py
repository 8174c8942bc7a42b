"""Tests of precedents.secrets.mask: planted secrets are masked, look-alikes are not.

Fake tokens are built at run time from a seeded random generator, so that no
real-looking credential sits in the source (push protection would flag it).
AWS's documented example key pair is the exception: it is public and inert.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import logging
import random
import re
import string
import subprocess
import sys
import threading
import uuid
from typing import Any

import pytest

from precedents.secrets import mask as secrets
from precedents.secrets.mask import SecretSpan, find_secrets, mask_secrets

_RNG = random.Random(20240611)
_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"


def _rand(n: int, alphabet: str = _ALNUM) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def _hex(n: int) -> str:
    return _rand(n, "0123456789abcdef")


AWS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB_PAT = "ghp_" + _rand(36)
GITHUB_FINE = "github_pat_" + _rand(22) + "_" + _rand(59)
SLACK_BOT = "xoxb-" + _rand(12, string.digits) + "-" + _rand(13, string.digits) + "-" + _rand(24)
ANTHROPIC = "sk-ant-api03-" + _rand(93, _URLSAFE) + "AA"
OPENAI = "sk-proj-" + _rand(74, _URLSAFE) + "T3BlbkFJ" + _rand(74, _URLSAFE)
GOOGLE = "AIza" + _rand(35, _URLSAFE)
STRIPE = "sk_" + "live_" + _rand(24)
URL_PASSWORD = _rand(16)
API_TOKEN = _rand(32)
DB_PASSWORD = _rand(14)
YAML_PASSWORD = _rand(14)
JSON_TOKEN = _rand(40)
PEM_BLOCK = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    + "\n".join(_rand(64, _ALNUM + "+/") for _ in range(6))
    + "\n"
    + _rand(20, _ALNUM + "+/")
    + "==\n-----END RSA PRIVATE KEY-----"
)
# The jwt.io sample token: public, and a JWT is only a format here.
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9."
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)

# (name, text, the secret(s) that must vanish, the exact expected output or None)
PLANTED: list[tuple[str, str, tuple[str, ...], str | None]] = [
    (
        "aws-key-id",
        f"the key {AWS_KEY_ID} leaked",
        (AWS_KEY_ID,),
        "the key [MASKED:aws-access-key] leaked",
    ),
    (
        "aws-pair",
        f"aws_access_key_id = {AWS_KEY_ID}\naws_secret_access_key = {AWS_SECRET}\n",
        (AWS_KEY_ID, AWS_SECRET),
        None,
    ),
    ("github-pat", f"use {GITHUB_PAT} for the API", (GITHUB_PAT,), None),
    ("github-fine-grained", f"token={GITHUB_FINE}", (GITHUB_FINE,), None),
    ("slack", f"SLACK_BOT={SLACK_BOT}", (SLACK_BOT,), None),
    ("anthropic", f"my key is {ANTHROPIC} ok", (ANTHROPIC,), None),
    ("openai", f"client = OpenAI(api_key='{OPENAI}')", (OPENAI,), None),
    (
        "pem",
        f"key:\n{PEM_BLOCK}\nend of note",
        (PEM_BLOCK[40:80], PEM_BLOCK),
        "key:\n[MASKED:private-key]\nend of note",
    ),
    ("jwt", f"Authorization: Bearer {JWT}", (JWT,), None),
    (
        "url-password",
        f"DATABASE_URL=postgres://admin:{URL_PASSWORD}@db.example.com:5432/app",
        (URL_PASSWORD,),
        "DATABASE_URL=postgres://admin:[MASKED:url-password]@db.example.com:5432/app",
    ),
    (
        "export-token",
        f"export API_TOKEN={API_TOKEN}",
        (API_TOKEN,),
        "export API_TOKEN=[MASKED:token]",
    ),
    ("db-password", f"DB_PASSWORD={DB_PASSWORD}", (DB_PASSWORD,), "DB_PASSWORD=[MASKED:password]"),
    (
        "yaml-password",
        f"database:\n  user: app\n  password: {YAML_PASSWORD}\n  port: 5432\n",
        (YAML_PASSWORD,),
        "database:\n  user: app\n  password: [MASKED:password]\n  port: 5432\n",
    ),
    (
        "json-token",
        f'{{"token": "{JSON_TOKEN}", "user": "bob"}}',
        (JSON_TOKEN,),
        '{"token": "[MASKED:token]", "user": "bob"}',
    ),
    ("google", f"maps key {GOOGLE} in config", (GOOGLE,), None),
    ("stripe", f"charge with {STRIPE}", (STRIPE,), None),
    (
        "url-password-short",
        "psql postgres://app:hunter2pass@localhost/app",
        ("hunter2pass",),
        "psql postgres://app:[MASKED:url-password]@localhost/app",
    ),
    (
        "pgpassword",
        f"PGPASSWORD='{DB_PASSWORD}' psql -h db",
        (DB_PASSWORD,),
        "PGPASSWORD='[MASKED:password]' psql -h db",
    ),
    (
        "escaped-json-pem",
        '{"text": "' + PEM_BLOCK.replace("\n", "\\n") + '"}',
        (PEM_BLOCK.splitlines()[1],),
        None,
    ),
]

LOOKALIKES: list[str] = [
    f"commit {_hex(40)} fixed the bug",
    f"see abc1234 and {_hex(7)} for context",
    f"merge {_hex(40).upper()} into main",
    f"row id {uuid.UUID(int=_RNG.getrandbits(128))} in table",
    f"sha256: {hashlib.sha256(b'x').hexdigest()}",
    f"pulled image sha256:{hashlib.sha256(b'y').hexdigest()} today",
    "The password policy requires twelve characters; token rotation happens weekly.",
    "Set the secret in the vault, never put the token in code.",
    "path /Users/alice/projects/precedents/src/precedents/secrets/mask.py:42",
    "/home/bob/.config/claude/settings.json and C:\\Users\\bob\\AppData\\Local",
    "SGVsbG8gd29ybGQsIHRoaXMgaXMgYmFzZTY0 is how base64 looks in the docs",
    "ThisIsAVeryLongCamelCaseIdentifierNameThatLooksRandomish",
    "TOKEN_LIMIT=4096 and MAX_TOKENS=1024 and TOKENIZERS_PARALLELISM=false",
    "password: ${DB_PASSWORD}",
    "api_key = os.environ['API_KEY']",
    "token = get_token()\npassword = self.password",
    "    password: str\n    token: Optional[str] = None",
    "export PATH=/usr/local/bin:$PATH",
    "https://github.com/mongodb/kingfisher/blob/main/docs/PYPI.md#usage",
    "git@github.com:owner/repo.git and https://user@example.com/path",
    "version 1.5.0-rc1+build.20240101",
    "sk-learn is a nickname for scikit-learn",
    "The AKIA prefix marks AWS access key ids.",
    "npm i @anthropic-ai/claude-code@1.0.3",
    '{"input_tokens": 1234, "output_tokens": 56}',
    "SSH_PRIVATE_KEY=~/.ssh/id_ed25519",
    f"ハッシュ {_hex(40)} を確認しました 🎉",
    "http://localhost:8080/api?q=password+reset",
    "the secret is out: we ship on Friday",
    "[MASKED:token] was already masked",
]


@pytest.mark.parametrize(
    ("name", "text", "secrets_", "expected"), PLANTED, ids=[p[0] for p in PLANTED]
)
def test_planted_secret_is_masked(
    name: str, text: str, secrets_: tuple[str, ...], expected: str | None
) -> None:
    masked = mask_secrets(text)
    for secret in secrets_:
        assert secret not in masked, name
    assert "[MASKED:" in masked
    if expected is not None:
        assert masked == expected


def test_counts_meet_the_brief() -> None:
    assert len(PLANTED) >= 14
    assert len(LOOKALIKES) >= 18


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalike_is_untouched(text: str) -> None:
    assert find_secrets(text) == []
    assert mask_secrets(text) == text


@pytest.mark.parametrize("text", [p[1] for p in PLANTED], ids=[p[0] for p in PLANTED])
def test_masking_is_idempotent(text: str) -> None:
    once = mask_secrets(text)
    assert mask_secrets(once) == once


def test_env_dump_masks_only_secret_values() -> None:
    plain = {
        "HOME": "/Users/alice",
        "PATH": "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin",
        "SHELL": "/bin/zsh",
        "LANG": "ja_JP.UTF-8",
        "PWD": "/Users/alice/projects/precedents",
        "OLDPWD": "/Users/alice",
        "TERM_SESSION_ID": str(uuid.UUID(int=_RNG.getrandbits(128))),
        "GIT_ASKPASS": "/usr/local/bin/askpass",
        "TOKENIZERS_PARALLELISM": "false",
        "AWS_PROFILE": "default",
        "GIT_COMMIT": _hex(40),
        "COLORTERM": "truecolor",
    }
    secret = {
        "GITHUB_TOKEN": GITHUB_PAT,
        "ANTHROPIC_API_KEY": ANTHROPIC,
        "AWS_ACCESS_KEY_ID": AWS_KEY_ID,
        "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
        "DB_PASSWORD": DB_PASSWORD,
        "SESSION_SECRET": _rand(24),
        "VAULT_TOKEN": "hvs." + _rand(24),
    }
    lines = [f"{k}={v}" for k, v in {**plain, **secret}.items()]
    _RNG.shuffle(lines)
    masked = mask_secrets("\n".join(lines) + "\n")
    out = dict(line.split("=", 1) for line in masked.splitlines())
    assert set(out) == set(plain) | set(secret)  # every key kept, in place
    for key, value in plain.items():
        assert out[key] == value, key
    for key, value in secret.items():
        assert out[key].startswith("[MASKED:") and out[key].endswith("]"), key
        assert value not in masked


ASSIGNMENTS: list[tuple[str, str]] = [
    ("[db]\npassword = hunter2x\nuser = app", "[db]\npassword = [MASKED:password]\nuser = app"),
    ("mysql --password=S3cr3t! -u root", "mysql --password=[MASKED:password] -u root"),
    ("GET /api?token=abc123XYZ&page=2", "GET /api?token=[MASKED:token]&page=2"),
    ("'password' => 'pa55word',", "'password' => '[MASKED:password]',"),
    ("client_secret: Zk9x-81aa", "client_secret: [MASKED:secret]"),
    ('self.token = "abc.def-123"', 'self.token = "[MASKED:token]"'),
    ('cfg = {\\"api_key\\": \\"Zx81kQ92\\"}', 'cfg = {\\"api_key\\": \\"[MASKED:api-key]\\"}'),
    ("db:\n  password: letmein  # prod\n", "db:\n  password: [MASKED:password]  # prod\n"),
    ("- token: abcdefgh", "- token: [MASKED:token]"),
    ("SECRET_KEY_BASE=abcdef123456", "SECRET_KEY_BASE=[MASKED:secret-key]"),
    ("db_pass=letmein1", "db_pass=[MASKED:password]"),
    # Left alone: comparisons, empty values, types, prose after a colon.
    ("if token == 'abc':", "if token == 'abc':"),
    ("PASSWORD=", "PASSWORD="),
    ("    password: str", "    password: str"),
    ("token: Optional", "token: Optional"),
    ("Token: the thing we discussed", "Token: the thing we discussed"),
    ("time 12:30:45 token:count", "time 12:30:45 token:count"),
    ("f(password=password, token=None)", "f(password=password, token=None)"),
]


@pytest.mark.parametrize(("text", "expected"), ASSIGNMENTS)
def test_assignments_mask_only_the_value(text: str, expected: str) -> None:
    assert mask_secrets(text) == expected


def test_non_ascii_around_secrets_is_preserved() -> None:
    text = (
        f"日本語のメモ 🎉🎉 トークン {GITHUB_PAT} です。\n"
        f"接続: postgres://ユーザー:{URL_PASSWORD}@db.例え.jp/app ✅\n"
        f"émoji 👩‍👩‍👧 then {ANTHROPIC}\n"
        f"last {JWT} 終わり"
    )
    masked = mask_secrets(text)
    assert masked == (
        "日本語のメモ 🎉🎉 トークン [MASKED:github-pat] です。\n"
        "接続: postgres://ユーザー:[MASKED:url-password]@db.例え.jp/app ✅\n"
        "émoji 👩‍👩‍👧 then [MASKED:anthropic-api-key]\n"
        "last [MASKED:jwt] 終わり"
    )
    # Character offsets, not byte offsets.
    for span in find_secrets(text):
        assert text[span.start : span.end] in {GITHUB_PAT, URL_PASSWORD, ANTHROPIC, JWT}


def test_find_secrets_spans_are_str_offsets_sorted_and_disjoint() -> None:
    text = f"é {AWS_KEY_ID} ü\naws_secret_access_key = {AWS_SECRET}\n🎉 {STRIPE}"
    spans = find_secrets(text)
    assert [text[s.start : s.end] for s in spans] == [AWS_KEY_ID, AWS_SECRET, STRIPE]
    assert all(isinstance(s, SecretSpan) for s in spans)
    assert all(a.end <= b.start for a, b in itertools.pairwise(spans))
    with pytest.raises(AttributeError):
        spans[0].start = 0  # type: ignore[misc]


def test_overlapping_findings_are_merged() -> None:
    # The JWT is found by kingfisher and by the local Authorization-header rule.
    text = f"Authorization: Bearer {JWT}"
    spans = find_secrets(text)
    assert len(spans) == 1
    assert text[spans[0].start : spans[0].end] == JWT


@pytest.mark.parametrize(
    ("rule_id", "kind"),
    [
        ("betterleaks.github-pat", "github-pat"),
        ("betterleaks.auth0-client-secret.1", "auth0-client-secret"),
        ("veles.secrets/npmjsaccesstoken", "npmjsaccesstoken"),
        ("betterleaks.aws-access-token", "aws-access-key"),
        ("kingfisher.Some Rule_2", "some-rule-2"),
    ],
)
def test_rule_ids_become_kinds(rule_id: str, kind: str) -> None:
    assert secrets._kind(rule_id) == kind


def test_byte_to_char_offsets_inside_multibyte_characters() -> None:
    data = "aé🎉b".encode()  # a=0, é=1..2, 🎉=3..6, b=7
    mapping = secrets._byte_to_char_offsets(data, {0, 1, 2, 3, 5, 7, 8})
    assert mapping == {0: 0, 1: 1, 2: 1, 3: 2, 5: 2, 7: 3, 8: 4}


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "\x00\x01\x02binary\xff\ufffd",
        "\ud800 lone surrogate " + GITHUB_PAT,
        "-----BEGIN PRIVATE KEY-----",
        "\n" * 1000,
        "=" * 5000,
        "a:b@" * 2000,
    ],
)
def test_odd_inputs_never_raise(text: str) -> None:
    masked = mask_secrets(text)
    assert isinstance(masked, str)
    assert GITHUB_PAT not in masked


def test_remasking_a_heavily_masked_text_is_fast_and_stable() -> None:
    text = "".join(f"K{i}_TOKEN={_rand(20)}\n" for i in range(20_000))
    once = mask_secrets(text)
    assert once.count("[MASKED:token]") == 20_000
    assert mask_secrets(once) == once


def test_large_text_keeps_everything_else() -> None:
    filler = "Ordinary prose about indexing notes and git commits. " * 40_000  # ~2 MB
    text = filler + f"export API_TOKEN={API_TOKEN}\n" + filler
    masked = mask_secrets(text)
    assert masked == filler + "export API_TOKEN=[MASKED:token]\n" + filler


class _BrokenScanner:
    def scan(self, data: bytes) -> list[Any]:
        raise RuntimeError("native failure")


@pytest.mark.parametrize("scanner", [None, _BrokenScanner()], ids=["unavailable", "failing"])
def test_fallback_to_local_rules(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, scanner: object
) -> None:
    monkeypatch.setattr(secrets, "_get_scanner", lambda: scanner)
    caplog.set_level(logging.WARNING, logger="precedents.secrets.mask")
    for name, text, secrets_, expected in PLANTED:
        masked = mask_secrets(text)
        for secret in secrets_:
            assert secret not in masked, name
        if expected is not None:
            assert masked == expected, name
    for text in LOOKALIKES:
        assert mask_secrets(text) == text
    if scanner is not None:
        assert caplog.records, "a failing scan must be logged"
    for record in caplog.records:  # never the text, never a secret
        message = record.getMessage()
        assert "ghp_" not in message and GITHUB_PAT not in message and "Bearer" not in message


def test_unavailable_scanner_logs_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import kingfisher_sdk

    def broken_rules(*args: object, **kwargs: object) -> None:
        raise OSError("no rules")

    monkeypatch.setattr(secrets, "_scanner", None)
    monkeypatch.setattr(secrets, "_scanner_failed", False)
    monkeypatch.setattr(kingfisher_sdk, "Rules", broken_rules)
    caplog.set_level(logging.WARNING, logger="precedents.secrets.mask")
    assert mask_secrets(f"x {GITHUB_PAT}") == "x [MASKED:github-token]"
    assert mask_secrets(f"y {GITHUB_PAT}") == "y [MASKED:github-token]"
    assert len(caplog.records) == 1
    assert "OSError" in caplog.records[0].getMessage()


def test_detection_bug_masks_whole_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(text: str) -> list[SecretSpan]:
        raise ValueError("bug")

    monkeypatch.setattr(secrets, "find_secrets", boom)
    assert mask_secrets("anything") == "[MASKED:unscannable]"


def test_scanner_is_a_shared_singleton_and_thread_safe() -> None:
    assert secrets._get_scanner() is secrets._get_scanner()
    text = f"export API_TOKEN={API_TOKEN} and {GITHUB_PAT}"
    expected = mask_secrets(text)
    results: list[str] = []

    def work() -> None:
        results.extend(mask_secrets(text) for _ in range(50))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [expected] * 400


def test_native_scanner_is_used() -> None:
    # Guards against silently running on the fallback rules only.
    assert secrets._get_scanner() is not None
    assert mask_secrets(f"x {SLACK_BOT}") == "x [MASKED:slack-bot-token]"


def test_import_is_light() -> None:
    code = (
        "import sys, precedents.secrets.mask\n"
        "heavy = {'torch', 'lancedb', 'pyarrow', 'kingfisher_sdk'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- secrets without a keyword (issue #8, item 7) -------------------------------------

_B64 = _ALNUM + "+/"


def _random_token(n: int, alphabet: str = _ALNUM) -> str:
    """A random token that surely has upper, lower and digits (as real keys do)."""
    while True:
        token = _rand(n, alphabet)
        classes = (str.isupper, str.islower, str.isdigit)
        if all(any(is_class(c) for c in token) for is_class in classes):
            return token


BARE_KEY = _random_token(40)
BARE_B64_SECRET = _random_token(44, _B64)

# Vendor tokens at lengths other than the official one: kingfisher's exact-length
# rules miss them, or mask only their first characters and leak the rest.
OFF_LENGTH_VENDOR_TOKENS: list[tuple[str, str]] = [
    ("github-pat-short", "ghp_" + _random_token(30)),
    ("github-pat-long", "ghp_" + _random_token(40)),
    ("github-fine-grained-short", "github_pat_" + _random_token(22) + "_" + _random_token(30)),
    ("anthropic-api03-short", "sk-ant-api03-" + _random_token(40, _URLSAFE)),
    ("anthropic-admin", "sk-ant-admin01-" + _random_token(60, _URLSAFE)),
    ("openai-project", "sk-proj-" + _random_token(60, _URLSAFE)),
    ("openai-service-account", "sk-svcacct-" + _random_token(50, _URLSAFE)),
    ("openai-legacy-short", "sk-" + _random_token(40)),
    ("slack-short", "xoxb-" + _rand(10, string.digits) + "-" + _random_token(16)),
    ("aws-key-id-long", "AKIA" + _rand(17, string.ascii_uppercase) + "7"),
    ("gitlab-long", "glpat-" + _random_token(30)),
    ("google-short", "AIza" + _random_token(32)),
    ("huggingface-short", "hf_" + _random_token(30)),
    ("huggingface-long", "hf_" + _random_token(40)),
    ("npm-short", "npm_" + _random_token(32)),
]


@pytest.mark.parametrize(
    "token", [t for _, t in OFF_LENGTH_VENDOR_TOKENS], ids=[n for n, _ in OFF_LENGTH_VENDOR_TOKENS]
)
def test_vendor_prefix_at_any_plausible_length(token: str) -> None:
    masked = mask_secrets(f"the key {token} leaked")
    # The whole token goes: no tail of it may survive a shorter match.
    assert re.fullmatch(r"the key \[MASKED:[a-z0-9-]+\] leaked", masked), masked


def test_assistant_repeating_a_key_alone_on_a_line() -> None:
    text = f"Sure, here is the key you pasted earlier:\n\n{BARE_KEY}\n\nKeep it safe."
    assert mask_secrets(text) == (
        "Sure, here is the key you pasted earlier:\n\n[MASKED:high-entropy]\n\nKeep it safe."
    )


@pytest.mark.parametrize(
    "text",
    [
        f"{BARE_KEY}",
        f"use {BARE_KEY} for the webhook",
        f"signing value: `{BARE_B64_SECRET}`",
        f'{{"role": "assistant", "text": "the value is {BARE_B64_SECRET}"}}',
        f"日本語のメモ 🎉 {BARE_KEY} です",
    ],
    ids=["alone", "in-prose", "backticks", "json", "japanese"],
)
def test_bare_high_entropy_token_is_masked(text: str) -> None:
    masked = mask_secrets(text)
    assert BARE_KEY not in masked and BARE_B64_SECRET not in masked
    assert "[MASKED:" in masked
    assert mask_secrets(masked) == masked


def test_bare_token_spans_are_str_offsets_after_non_ascii() -> None:
    text = f"é🎉 {BARE_KEY} ü"
    spans = find_secrets(text)
    assert [text[s.start : s.end] for s in spans] == [BARE_KEY]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("and secret {}", _rand(24, string.ascii_lowercase + string.digits) + "7"),
        ("the token is {}", _random_token(20)),
        ("my API key '{}' expired", _random_token(24)),
        ("password {} then enter", "x" + _rand(15, string.ascii_lowercase + string.digits) + "2"),
        ("the secret is {}", hashlib.sha256(b"secret").hexdigest()),
    ],
    ids=["and-secret", "token-is", "api-key-quoted", "password", "hex-secret"],
)
def test_keyword_then_value_without_separator(text: str, secret: str) -> None:
    masked = mask_secrets(text.format(secret))
    assert secret not in masked
    assert "[MASKED:" in masked


def test_a_value_found_once_is_masked_at_every_occurrence() -> None:
    password = "pw" + _rand(10, string.ascii_lowercase) + "42"
    text = (
        f"DB_PASSWORD={password}\n"
        f"user: then psql failed with {password}, so I retried.\n"
        f'assistant: "{password}" is rejected; try resetting {password}.\n'
        f"but not {password}x nor x{password}\n"
    )
    masked = mask_secrets(text)
    assert masked == (
        "DB_PASSWORD=[MASKED:password]\n"
        "user: then psql failed with [MASKED:password], so I retried.\n"
        'assistant: "[MASKED:password]" is rejected; try resetting [MASKED:password].\n'
        f"but not {password}x nor x{password}\n"
    )
    assert mask_secrets(masked) == masked


def test_a_url_password_is_masked_again_when_repeated() -> None:
    text = f"postgres://app:{URL_PASSWORD}@db/app\nthen I typed {URL_PASSWORD} again\n"
    masked = mask_secrets(text)
    assert URL_PASSWORD not in masked
    assert masked.count("[MASKED:url-password]") == 2


def test_many_distinct_values_are_each_masked_again() -> None:
    values = [f"v{i}" + _rand(12) + "9" for i in range(50)]
    text = "".join(f"K{i}_TOKEN={v}\n" for i, v in enumerate(values))
    text += "repeated: " + " ".join(values) + "\n"
    masked = mask_secrets(text)
    assert not any(v in masked for v in values)
    assert masked.count("[MASKED:token]") == 100


@pytest.mark.parametrize(
    "text",
    [
        # Words, names and placeholders found once are not spread over the text.
        "password: letmein\nletmein is also what the banner says",
        'mask_token="[MASK]"\nthe [MASK] token is predicted',
        "    token=unk_token,\nreturn unk_token",
        "color:\n  token: '#d8dee9'\nborder: '#d8dee9'",
    ],
)
def test_words_and_placeholders_are_not_spread(text: str) -> None:
    masked = mask_secrets(text)
    assert masked.count("[MASKED:") <= 1


_PNG_B64 = base64.b64encode(
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(_RNG.getrandbits(8) for _ in range(600))
).decode()
_JPEG_B64 = base64.b64encode(
    b"\xff\xd8\xff\xe0" + bytes(_RNG.getrandbits(8) for _ in range(90))
).decode()
_CERT = (
    "-----BEGIN CERTIFICATE-----\n"
    + "\n".join(_random_token(64, _B64) for _ in range(4))
    + "\n-----END CERTIFICATE-----"
)
_SSH_PUBLIC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + _random_token(43, _B64) + " alice@laptop"

# Random-looking text that is no secret: each must come back unchanged.
NO_KEYWORD_LOOKALIKES: list[str] = [
    f"commit {_hex(40)} and {_hex(12)} and {_hex(7)}",
    f"sha256 {hashlib.sha256(b'z').hexdigest()} sha512 {hashlib.sha512(b'z').hexdigest()}",
    f"row {uuid.UUID(int=_RNG.getrandbits(128))} in table",
    f"REQUEST ID {uuid.UUID(int=_RNG.getrandbits(128))}".upper(),
    f'<img src="data:image/png;base64,{_PNG_B64}">',
    f"![plot](data:image/jpeg;base64,{_JPEG_B64})",
    '{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "'
    + _PNG_B64
    + '"}}',
    f'{{"type": "image", "data": "{_JPEG_B64}"}}',
    '"integrity": "sha512-' + base64.b64encode(hashlib.sha512(b"pkg").digest()).decode() + '"',
    "golang.org/x/net v0.23.0 h1:" + base64.b64encode(hashlib.sha256(b"go").digest()).decode(),
    _SSH_PUBLIC,
    f"server cert:\n{_CERT}\n",
    _CERT.replace("CERTIFICATE", "PGP SIGNATURE").replace("-----\n", "-----\n\n", 1),
    '{"type":"tool_use","id":"toolu_01' + _random_token(34) + '","name":"Bash"}',
    '{"id":"msg_01' + _random_token(34) + '","requestId":"req_011' + _random_token(34) + '"}',
    "model = AutoModel.from_pretrained('HuggingFaceM4/Idefics3-8B-Llama3')",
    "load cross-encoder/mmarco-mMiniLMv2-L12-H384-v1 and meta-llama/Llama-3.2-11B-Vision",
    "open test-8000Hz-le-3ch-5S-24bit-rf64.wav and runs/May04_22-14-54_s-MacBook-Pro",
    f"https://github.com/JabRef/jabref/blob/{_hex(40)}/src/main/java/org/jabref/Foo.java",
    "https://app.diagrams.net/#G1w8dZs5vZOoy0dvCnRr5P6GHc3VQRdwLq and https://example.com/a?q=1",
    "/Users/alice/Library/Application Support/precedents/lancedb/chunks.lance/data/0a1b2c.lance",
    "C--home-AppData-Local-Temp-claude-C--Projetos-rainforest-mind-722539d9-b368-4e3f",
    "adrs/JabRef__jabref/0059-use-cuid2-for-ai-library-id.md",
    "class Qwen4ExpTextRMSNorm2ForConditionalGenerationWithPast(PreTrainedModel):",
    "def test_mask_secrets_keeps_utf8_offsets_for_2_byte_and_4_byte_characters():",
    "VGhlIHF1aWNrIGJyb3duIGZveCBqdW1wcyBvdmVyIDEzIGxhenkgZG9ncw== decodes to a sentence",
    "+-------+------------+--------------+--------------+-------------+",
    "the token count is 123456789012345678 and the key idea is simple",
    f"GPG key {_hex(16).upper()} and the public key fingerprint {_hex(40)}",
    "sk-ant-api03-... and ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx are placeholders",
    "xoxb-your-slack-bot-token-goes-here and hf_YOUR_TOKEN_HERE",
]


@pytest.mark.parametrize("text", NO_KEYWORD_LOOKALIKES)
def test_random_looking_text_that_is_no_secret_is_untouched(text: str) -> None:
    assert find_secrets(text) == []
    assert mask_secrets(text) == text


def test_a_long_blob_is_not_a_token() -> None:
    blob = _random_token(2000, _B64)
    assert mask_secrets(f"archive {blob} end") == f"archive {blob} end"


@pytest.mark.parametrize("scanner", [None, _BrokenScanner()], ids=["unavailable", "failing"])
def test_keyword_free_rules_work_without_kingfisher(
    monkeypatch: pytest.MonkeyPatch, scanner: object
) -> None:
    monkeypatch.setattr(secrets, "_get_scanner", lambda: scanner)
    for _, token in OFF_LENGTH_VENDOR_TOKENS:
        masked = mask_secrets(f"the key {token} leaked")
        assert re.fullmatch(r"the key \[MASKED:[a-z0-9-]+\] leaked", masked), masked
    assert mask_secrets(BARE_KEY) == "[MASKED:high-entropy]"
    for text in NO_KEYWORD_LOOKALIKES:
        assert mask_secrets(text) == text


def test_entropy_and_randomness_helpers() -> None:
    from precedents.secrets.rules import looks_random, shannon_entropy

    assert shannon_entropy("") == 0.0
    assert shannon_entropy("aaaa") == 0.0
    assert shannon_entropy("abcd") == pytest.approx(2.0)
    assert looks_random(BARE_KEY)
    assert not looks_random("Ab1" * 12)  # repetitive: low entropy
    assert not looks_random("ThisIsAVeryLongCamelCaseIdentifierName2024")
    assert not looks_random(_hex(40))


@pytest.mark.parametrize(
    "text",
    [
        # A vendor token inside a longer run: kingfisher masks its official
        # length, the rest of the run must not surface as a new secret later.
        f"x +ghp_{_random_token(60)}xoxb-1234-{_random_token(40)} y",
        # A mask inside a long ``a=b...c=d`` value: ``c=d`` is read afterwards.
        f' "={_random_token(60)}日本{_random_token(16)}password=sk-ant-api03-AKIA',
        # A 31-character run and base64 padding: its length must not change.
        f"{_random_token(31)}={_random_token(32)}日本{_random_token(31)}",
        f"{BARE_KEY}-{BARE_KEY}/{GITHUB_PAT}",
    ],
    ids=["vendor-inside-run", "assignment-after-mask", "padding", "glued"],
)
def test_masking_a_masked_text_changes_nothing(text: str) -> None:
    once = mask_secrets(text)
    assert mask_secrets(once) == once


def test_a_partly_matched_token_is_masked_whole() -> None:
    # kingfisher's rule takes ghp_ + 36 characters; the 4 after them go too.
    token = "ghp_" + _random_token(40)
    assert re.fullmatch(r"token \[MASKED:github-[a-z]+\]\.", mask_secrets(f"token {token}."))
