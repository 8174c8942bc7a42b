"""The package as a user installs it: a regular (non-editable) install, run outside the repo.

Everything the installed package needs must ship inside it (SPEC §1): the
service unit templates, and nothing read from the checkout. The install goes
into a fresh venv that sees this venv's third-party packages (torch, the
bundled model...) through a plain path entry, so nothing is downloaded; the
`precedents` it runs is the copy installed there, which the test checks.
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.name != "posix", reason="venv layout and service units are POSIX"),
]


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float) -> str:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, f"{cmd}: exit {out.returncode}\n{out.stdout}\n{out.stderr}"
    assert "Traceback" not in out.stderr
    return out.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with precedents installed from a copy of the sources (no build files left here)."""
    root = tmp_path_factory.mktemp("install")
    source = root / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    shutil.copytree(
        REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    venv = root / "venv"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1"}
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=root, env=env, timeout=120)
    python = venv / "bin" / "python"
    purelib = run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        cwd=root,
        env=env,
        timeout=60,
    ).strip()
    # A plain path line, not a site dir: this venv's .pth files (the editable
    # install's among them) are not processed there, so `precedents` can only
    # come from the copy installed below, which comes first on sys.path.
    outer = "\n".join(site.getsitepackages())
    (Path(purelib) / "outer-venv.pth").write_text(outer + "\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    run(
        [*pip, "--no-index", "--ignore-installed", str(source)],
        cwd=root,
        env=env,
        timeout=600,
    )
    return venv


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A working folder outside the repository."""
    assert not tmp_path.is_relative_to(REPO)
    return tmp_path


def user_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRECEDENTS_", "XDG_"))}
    return {**env, "HF_HUB_OFFLINE": "1", "PYTHONNOUSERSITE": "1", **extra}


def test_installed_copy_is_the_one_that_runs(installed: Path, outside: Path) -> None:
    code = (
        "import json, precedents, precedents.cli;"
        "from importlib import resources;"
        "t = resources.files('precedents.service') / 'templates';"
        "print(json.dumps([precedents.__file__, sorted(p.name for p in t.iterdir())]))"
    )
    where, templates = json.loads(
        run(
            [str(installed / "bin" / "python"), "-c", code],
            cwd=outside,
            env=user_env(outside),
            timeout=120,
        )
    )
    assert Path(where).is_relative_to(installed), where
    assert templates == ["launchd", "systemd"]
    first = (installed / "bin" / "precedents").read_text().splitlines()[0]
    assert first == f"#!{installed / 'bin' / 'python'}"


def test_service_install_dry_run_writes_nothing(installed: Path, outside: Path) -> None:
    home = outside / "home"
    home.mkdir()
    out = run(
        [str(installed / "bin" / "precedents"), "service", "install", "--dry-run"],
        cwd=outside,
        env=user_env(outside, HOME=str(home)),
        timeout=120,
    )
    python = installed / "bin" / "python"
    if sys.platform == "darwin":
        assert f"<string>{python}</string><string>-m</string><string>precedents.cli</string>" in out
    else:
        assert f"== would write {home}/.config/systemd/user/precedents-watch.service" in out
        assert f"ExecStart={python} -m precedents.cli watch" in out
        assert f"ExecStart={python} -m precedents.cli serve" in out
    assert "@PYTHON@" not in out and "@HOME_DIR@" not in out
    assert list(home.rglob("*")) == []  # not a unit, not even the state folder


def test_eval_on_a_small_set(installed: Path, outside: Path) -> None:
    eval_set = outside / "tiny"
    (eval_set / "notes").mkdir(parents=True)
    (eval_set / "notes" / "money.md").write_text(
        "---\nname: Money is integer cents\n"
        "description: store prices as integer cents, never floats\n---\n"
        "Floating point cannot represent 0.10 exactly; keep prices and totals in cents.\n"
    )
    messages = [
        {
            "id": "a",
            "text": "can I keep prices as floats?",
            "kind": "paraphrase",
            "expected": ["notes/money.md"],
        },
        {"id": "b", "text": "what is a good name for a cat?", "kind": "unrelated"},
    ]
    (eval_set / "messages.jsonl").write_text("".join(json.dumps(m) + "\n" for m in messages))
    (outside / "claude").mkdir()
    env = user_env(
        outside,
        PRECEDENTS_HOME=str(outside / "state"),
        PRECEDENTS_CLAUDE_DIR=str(outside / "claude"),
    )
    out = run(
        [str(installed / "bin" / "precedents"), "eval", "--set", str(eval_set)],
        cwd=outside,
        env=env,
        timeout=600,
    )
    assert out.startswith("model sentence-transformers/all-MiniLM-L6-v2, thresholds")
    assert "%" in out and "/1" in out  # figures: ok/n and a rate per line
