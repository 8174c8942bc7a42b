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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, get_type_hints

from precedents.errors import ConfigError, InvalidSetting

# The model registry lives in precedents.profiles; its names are the settings' too.
from precedents.profiles.registry import DEFAULT_MODEL as DEFAULT_MODEL
from precedents.profiles.registry import MULTILINGUAL_MODEL as MULTILINGUAL_MODEL
from precedents.profiles.registry import PROFILES as PROFILES
from precedents.profiles.registry import RECOMMENDED_MODEL as RECOMMENDED_MODEL
from precedents.profiles.registry import RUNTIMES, device_problem, model_problem
from precedents.profiles.registry import Loader as Loader
from precedents.profiles.registry import ModelProfile as ModelProfile
from precedents.profiles.registry import Thresholds as Thresholds
from precedents.profiles.registry import model_profile as model_profile
from precedents.profiles.registry import parse_model_id as parse_model_id
from precedents.profiles.registry import seed_thresholds as seed_thresholds
from precedents.protocol import default_home

CONFIG_FILE = "config.toml"
DEFAULT_MAX_FILE_BYTES = 2_000_000
# Transcripts carry tool output (file dumps, logs) of which only the text of
# prompts and answers is kept, so a long real session is easily tens of MB.
DEFAULT_MAX_CONVERSATION_BYTES = 64_000_000
# Claude Code's http hook sends this variable's value (`install-hook --http`); the
# CLI only checks that the user's shell exports it (query_daemon/http.py names it too).
HTTP_TOKEN_ENV = "PRECEDENTS_HTTP_TOKEN"


def state_dir(create: bool = True) -> Path:
    """The one state directory: ``PRECEDENTS_HOME`` or the platform default, mode 0700.

    Computed by :func:`precedents.protocol.default_home`, which the hook (standard
    library only, it cannot import this module) uses too: one definition for both."""
    path = Path(default_home())
    if create:
        ensure_private_dir(path)
    return path


def default_cache_dir() -> Path:
    """The platform's cache folder for precedents (derived files any state folder can share)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "precedents"
    if os.name == "nt":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "precedents" / "cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "precedents"


def model_cache_dir(path: Path | None = None) -> Path:
    """Where built and assembled models live, once per machine (issue #21): ``path``,
    else ``PRECEDENTS_MODEL_CACHE``, else ``<platform cache>/models``. Not under the
    state folder: the files derive from public weights only, and every state folder
    (each test's, each ``PRECEDENTS_HOME``) would otherwise build its own 69 MB copy."""
    if path is not None:
        return path
    env = os.environ.get("PRECEDENTS_MODEL_CACHE")
    return Path(env).expanduser() if env else default_cache_dir() / "models"


def torch_threads() -> int:
    """Torch's threads for the daemon's CPU queries: ``PRECEDENTS_TORCH_THREADS``, else one
    (measured in docs/daemon.md). A knob for measuring, not a config.toml key; a value
    that is not a whole number is ignored, as it always was."""
    try:
        return max(int(os.environ.get("PRECEDENTS_TORCH_THREADS", 1)), 1)
    except ValueError:
        return 1


def xdg_config_home() -> Path:
    """The user's configuration folder (``XDG_CONFIG_HOME``, else ~/.config), where
    systemd looks for user units."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")


def exported_http_token() -> str | None:
    """The http hook's token as this shell exports it (:data:`HTTP_TOKEN_ENV`), if it does."""
    return os.environ.get(HTTP_TOKEN_ENV)


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
class ModelSpec:
    """What the model layer is told about the model to load; it reads no setting itself.

    Built from the settings by :meth:`Settings.model_spec`; ``ModelSpec(model)`` is
    that model with the defaults (not the settings': a script or a test)."""

    model: str = DEFAULT_MODEL
    device: str = "auto"
    # How the bundled MiniLM runs (auto, onnx, torch); other models ignore it.
    runtime: str = "auto"
    # Built and assembled model files, once per machine (:func:`model_cache_dir`).
    cache_dir: Path = field(default_factory=model_cache_dir)
    # The state folder: the ONNX file is built under it when cache_dir is read-only.
    home: Path = field(default_factory=lambda: state_dir(create=False))
    torch_threads: int = field(default_factory=torch_threads)

    def with_model(self, model: str) -> ModelSpec:
        """The same spec for another model (the multilingual one, next to the default)."""
        return replace(self, model=model)


@dataclass(frozen=True)
class Settings:
    """Every setting precedents reads; build it with :func:`load_settings`."""

    home: Path
    model: str = DEFAULT_MODEL
    device: str = "auto"
    # How the bundled MiniLM runs: auto (int8 on ONNX Runtime when installed),
    # onnx, or torch (sentence-transformers, fp32). Other models ignore it.
    runtime: str = "auto"
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
    # How long a hook waits for a daemon that is starting (the first prompt of a
    # session): measured in docs/daemon.md; `install-hook` writes it into the hook's
    # arguments and sets Claude Code's timeout above it.
    first_prompt_budget_ms: float = 8000.0
    # The daemon's HTTP listener for Claude Code's `type: "http"` hook, on
    # 127.0.0.1 only; 0 = off (`install-hook --http` records one).
    http_port: int = 0
    # The organisation's index (docs/org.md): its URI ("" = none), pulled by the
    # daemon in the background every org_pull_s seconds (and at a session start
    # when the last pull is older than that).
    org_uri: str = ""
    org_pull_s: float = 900.0
    # The watcher's indexing child (watcher/child.py) ends after this long without a
    # job: the watcher then rests at ~80 MiB, and the next save waits ~2.5 s for a
    # fresh child (the model and LanceDB), not ~0.4 s.
    watch_idle_s: float = 900.0
    thresholds: Mapping[str, Thresholds] = field(default_factory=seed_thresholds)

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

    @property
    def org_dir(self) -> Path:
        """The organisation's index pulled from ``org_uri`` (docs/org.md): the mirrored
        table, its snapshot file (:data:`precedents.org.snapshot.ORG_SNAPSHOT`), status."""
        return self.home / "org"

    def thresholds_for(self, model: str | None = None) -> Thresholds:
        """Selection thresholds for ``model`` (default: the configured one).

        A runtime variant (``X#onnx-int8``) has its own entry only if the config
        gives it one; otherwise it gets its base model's (:func:`parse_model_id`).
        """
        name = model or self.model
        base = parse_model_id(name)[0].model_id
        found = self.thresholds.get(name) or self.thresholds.get(base)
        return found or Thresholds()

    def model_spec(self) -> ModelSpec:
        """What the model layer needs of these settings (model, device, runtime, caches)."""
        return ModelSpec(self.model, self.device, self.runtime, home=self.home)

    def with_overrides(self, **changes: Any) -> Settings:
        """A copy with the given fields replaced (None values are ignored)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


# Settings fields that are not config.toml keys. `home` is the folder the
# file itself lives in (PRECEDENTS_HOME moves everything), so the file cannot move it.
NOT_FILE_KEYS = frozenset({"home"})

# Environment variables, by setting; the first one set wins.
ENV_VARS: dict[str, tuple[str, ...]] = {
    "model": ("PRECEDENTS_MODEL",),
    "device": ("PRECEDENTS_DEVICE",),
    "runtime": ("PRECEDENTS_RUNTIME",),
    "max_file_bytes": ("PRECEDENTS_MAX_FILE_BYTES",),
    "idle_timeout_s": ("PRECEDENTS_IDLE_TIMEOUT_S",),
    "hook_budget_ms": ("PRECEDENTS_HOOK_BUDGET_MS",),
    "first_prompt_budget_ms": ("PRECEDENTS_FIRST_PROMPT_BUDGET_MS",),
    "http_port": ("PRECEDENTS_HTTP_PORT",),
    "org_uri": ("PRECEDENTS_ORG_URI",),
    "org_pull_s": ("PRECEDENTS_ORG_PULL_S",),
    "watch_idle_s": ("PRECEDENTS_WATCH_IDLE_S",),
    "claude_dir": ("PRECEDENTS_CLAUDE_DIR", "CLAUDE_CONFIG_DIR"),
}


def _string(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"config: `{key}` must be a non-empty string")
    return value


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"config: `{key}` must be a number")
    return float(value)


def _whole(value: Any, key: str) -> int:
    return int(_number(value, key))


def _flag(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"config: `{key}` must be true or false")
    return value


def _paths(value: Any, key: str) -> tuple[Path, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"config: `{key}` must be a list of folder paths")
    return tuple(Path(v).expanduser() for v in value)


def _path(value: Any, key: str) -> Path:
    if not isinstance(value, str) or not value:
        raise ConfigError(f"config: `{key}` must be a folder path")
    return Path(value).expanduser()


def _thresholds(value: Any, key: str) -> dict[str, Thresholds]:
    """``[thresholds."MODEL"]`` tables, each merged over that model's seed values."""
    if not isinstance(value, dict):
        raise ConfigError(f"config: `{key}` must be a table of model -> values")
    merged = seed_thresholds()
    for model, vals in value.items():
        if not isinstance(vals, dict):
            raise ConfigError(f'config: `{key}."{model}"` must be a table')
        current = merged.get(model, Thresholds())
        try:
            merged[model] = replace(current, **{k: _number(v, k) for k, v in vals.items()})
        except TypeError:
            raise ConfigError(f"config: unknown threshold in `{model}`") from None
    return merged


# How a config.toml value becomes a field's value, by the field's declared type.
_READERS: dict[object, Callable[[Any, str], Any]] = {
    str: _string,
    int: _whole,
    float: _number,
    bool: _flag,
    Path: _path,
    tuple[Path, ...]: _paths,
    Mapping[str, Thresholds]: _thresholds,
}


def _file_readers() -> dict[str, Callable[[Any, str], Any]]:
    """Every config.toml key with its reader: each Settings field but :data:`NOT_FILE_KEYS`.

    A field of a type with no reader fails here, at import, so adding a field
    either makes it a key or says what is missing.
    """
    readers: dict[str, Callable[[Any, str], Any]] = {}
    for f in fields(Settings):
        if f.name in NOT_FILE_KEYS:
            continue
        if _TYPES[f.name] not in _READERS:
            raise TypeError(f"Settings.{f.name}: no config.toml reader for {_TYPES[f.name]}")
        readers[f.name] = _READERS[_TYPES[f.name]]
    return readers


_TYPES = get_type_hints(Settings)  # field name -> its declared type
FILE_KEYS = _file_readers()


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


def _from_file(data: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a config.toml sets, read and checked."""
    unknown = sorted(set(data) - set(FILE_KEYS))
    if unknown:
        raise ConfigError(f"config: unknown setting(s): {', '.join(unknown)}")
    return {key: FILE_KEYS[key](value, key) for key, value in data.items()}


def _from_env(environ: Mapping[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings the environment sets, converted to their fields' types, and the
    variable each came from."""
    out: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for key, names in ENV_VARS.items():
        var = next((n for n in names if environ.get(n)), None)
        if var is None:
            continue
        raw, kind = environ[var], _TYPES[key]
        try:
            out[key] = Path(raw).expanduser() if kind is Path else kind(raw)
        except ValueError:
            what = "a whole number" if kind is int else "a number"
            raise ConfigError(f"{var} must be {what}") from None
        origin[key] = var
    return out, origin


# Settings that must be above zero: a size, a budget or a timeout of 0 or less
# would silently index nothing, answer nothing or exit at once.
_POSITIVE = (
    "max_file_bytes",
    "max_conversation_bytes",
    "idle_timeout_s",
    "hook_budget_ms",
    "first_prompt_budget_ms",
    "org_pull_s",
    "watch_idle_s",
)


def _check(settings: Settings, origin: Mapping[str, str], fetching: bool) -> None:
    """Raise :class:`InvalidSetting` for the first value that names nothing usable,
    naming where it came from. ``fetching``: the model may be one `setup` is to
    download, so its name is not looked for on this machine."""

    def where(key: str) -> str:
        return origin.get(key, key)

    problems = [
        ("model", None if fetching else model_problem(settings.model)),
        ("device", device_problem(settings.device)),
        (
            "runtime",
            None
            if settings.runtime in RUNTIMES
            else f"runtime {settings.runtime!r} is not one of {', '.join(RUNTIMES)}",
        ),
        *(
            (key, f"{key} must be above 0, not {getattr(settings, key)}")
            for key in _POSITIVE
            if getattr(settings, key) <= 0
        ),
        (
            "http_port",
            None
            if 0 <= settings.http_port <= 65535
            else f"http_port must be 0 (off) or a port, 1-65535, not {settings.http_port}",
        ),
    ]
    for key, problem in problems:
        if problem is not None:
            raise InvalidSetting(f"{where(key)}: {problem}")


def load_settings(
    config_file: Path | None = None,
    *,
    create_home: bool = True,
    fetching: bool = False,
    **overrides: Any,
) -> Settings:
    """Resolve settings: explicit ``overrides`` beat env vars, which beat the TOML file,
    which beats the defaults; then check them.

    ``config_file`` defaults to ``<state dir>/config.toml``; a missing file is fine,
    a malformed one raises :class:`ConfigError`. ``create_home=False`` leaves a
    missing state folder uncreated (for commands that must write nothing). A value
    that names nothing usable (an unknown model, device or runtime, a size or budget
    of 0) raises :class:`InvalidSetting` naming its source, in every process that
    reads the settings: the CLI, the daemon, the watcher, the MCP server.
    ``fetching``: the model is one `setup` may download (not looked for here).
    """
    home = state_dir(create=create_home)
    path = config_file or home / CONFIG_FILE
    changes = _from_file(_read_toml(path))
    origin = {key: f"{path} `{key}`" for key in changes}
    env, env_origin = _from_env(os.environ)
    changes |= env
    origin |= env_origin
    given = {k: v for k, v in overrides.items() if v is not None}
    origin |= {key: f"--{key.replace('_', '-')}" for key in given}
    settings = replace(Settings(home=home), **changes).with_overrides(**given)
    _check(settings, origin, fetching)
    return settings


def record_http_port(config: Path, port: int) -> None:
    """Add ``http_port = N`` to config.toml, above its first table, leaving the rest as it is."""
    try:
        lines = config.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        lines = []
    at = next((i for i, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines))
    if at and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    lines.insert(at, f"http_port = {port}\n")
    config.parent.mkdir(parents=True, exist_ok=True)
    tmp = config.with_name(config.name + ".precedents-tmp")
    tmp.write_text("".join(lines), encoding="utf-8")
    os.replace(tmp, config)
