"""Tests of precedents.secrets: planted secrets are masked, look-alikes are not.

Fake tokens are built at run time from a seeded random generator, so that no
real-looking credential sits in the source (push protection would flag it).
AWS's documented example key pair is the exception: it is public and inert.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import random
import string
import subprocess
import sys
import threading
import uuid
from typing import Any

import pytest

from precedents import secrets
from precedents.secrets import SecretSpan, find_secrets, mask_secrets

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
    "path /Users/alice/projects/precedents/src/precedents/secrets.py:42",
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
    caplog.set_level(logging.WARNING, logger="precedents.secrets")
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
    caplog.set_level(logging.WARNING, logger="precedents.secrets")
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
        "import sys, precedents.secrets\n"
        "heavy = {'torch', 'lancedb', 'pyarrow', 'kingfisher_sdk'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
