"""`precedents adr ...` through typer's CliRunner on a small temporary folder."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from precedents.cli.adr import adr_app

app = typer.Typer()
app.add_typer(adr_app, name="adr")
runner = CliRunner()


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECEDENTS_HOME", str(tmp_path / "home"))


@pytest.fixture
def adr_dir(tmp_path: Path) -> Path:
    root = tmp_path / "repo" / "docs" / "adr"
    root.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    files = {
        "0001-use-postgres.md": "# 1. Use Postgres\n\nDate: 2024-01-01\n\n## Status\n\n"
        "Superseded by [2. Use Aurora](0002-use-aurora.md)\n\n## Context\n\nPostgres on VMs.\n",
        "0002-use-aurora.md": "# 2. Use Aurora\n\nDate: 2024-06-01\n\n## Status\n\nAccepted\n\n"
        "## Context\n\nManaged Aurora Postgres.\n",
        "0003-queue.md": "# 3. Use a queue\n\n## Status\n\nProposed\n\n## Context\n\nQueue.\n",
        "0004-ext.md": "# 4. Old CI\n\n## Status\n\nSuperseded by [platform](https://x.org/adr/9)\n",
        "README.md": "# Decisions\n\n* [1](0001-use-postgres.md)\n",
    }
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_list_json(adr_dir: Path) -> None:
    result = runner.invoke(app, ["adr", "list", "--dir", str(adr_dir), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    recs = {r["id"]: r for r in data["records"]}
    assert set(recs) == {"0001", "0002", "0003", "0004"}
    one = recs["0001"]
    assert one["path"] == "0001-use-postgres.md"
    assert one["status"] == "superseded"
    assert one["successors"] == ["0002-use-aurora.md"]
    assert one["current"] == "0002"
    assert one["mark"] == "⚠️superseded → ADR-0002"
    assert one["date"] == "2024-01-01"
    assert recs["0004"]["successors"] == ["https://x.org/adr/9"]
    assert recs["0003"]["mark"] == "△proposed (not approved)"
    assert [n["path"] for n in data["not_adrs"]] == ["README.md"]
    assert "⚠️" in result.stdout  # ensure_ascii=False


def test_list_text_and_default_dir(adr_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(adr_dir.parents[1])  # the repository root: docs/adr is found
    result = runner.invoke(app, ["adr", "list"])
    assert result.exit_code == 0, result.output
    assert "ADR-0001" in result.stdout and "⚠️superseded → ADR-0002" in result.stdout
    assert "not ADRs:" in result.stdout


def test_find(adr_dir: Path) -> None:
    result = runner.invoke(app, ["adr", "find", "aurora", "--dir", str(adr_dir), "--json"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert {h["id"] for h in hits} == {"0001", "0002"}
    assert all({"status", "date", "mark"} <= set(h) for h in hits)


def test_show_puts_the_mark_first(adr_dir: Path) -> None:
    result = runner.invoke(app, ["adr", "show", "1", "--dir", str(adr_dir)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "⚠️superseded → ADR-0002"
    assert "Postgres on VMs." in result.stdout
    ext = runner.invoke(app, ["adr", "show", "ADR-0004", "--dir", str(adr_dir)])
    assert ext.stdout.splitlines()[0] == "⚠️superseded → external (external: https://x.org/adr/9)"


def test_chain(adr_dir: Path) -> None:
    result = runner.invoke(app, ["adr", "chain", "1", "--dir", str(adr_dir), "--json"])
    assert result.exit_code == 0, result.output
    packet = json.loads(result.stdout)
    assert packet["current"] == "0002" and packet["history"] == ["0001"]
    text = runner.invoke(app, ["adr", "chain", "1", "--dir", str(adr_dir)]).stdout
    assert text.index("CURRENT POLICY") < text.index("Managed Aurora") < text.index("HISTORY")
    bad = runner.invoke(app, ["adr", "chain", "3", "--dir", str(adr_dir)])
    assert bad.exit_code == 1
    assert "no accepted record" in bad.stderr and "Traceback" not in bad.output


def test_check_exit_codes(adr_dir: Path, tmp_path: Path) -> None:
    ok = runner.invoke(app, ["adr", "check", "--dir", str(adr_dir), "--json"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["errors"] == 0
    (adr_dir / "0005-bad.md").write_text("# 5. Bad\n\n## Status\n\nSuperseded by [9](0009-x.md)\n")
    bad = runner.invoke(app, ["adr", "check", "--dir", str(adr_dir)])
    assert bad.exit_code == 1
    assert "dangling_link" in bad.stdout


def test_user_mistakes_exit_2_with_one_line(adr_dir: Path, tmp_path: Path) -> None:
    missing = runner.invoke(app, ["adr", "show", "99", "--dir", str(adr_dir)])
    assert missing.exit_code == 2
    assert missing.stderr.strip().count("\n") == 0 and "no ADR '99'" in missing.stderr
    nodir = runner.invoke(app, ["adr", "list", "--dir", str(tmp_path / "nowhere")])
    assert nodir.exit_code == 2 and "Traceback" not in nodir.output


def test_no_adr_folder_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-repo"
    (empty / ".git").mkdir(parents=True)
    monkeypatch.chdir(empty)
    result = runner.invoke(app, ["adr", "check"])
    assert result.exit_code == 2
    assert "no ADR folder" in result.stderr


def test_adr_graph_imports_nothing_heavy() -> None:
    code = (
        "import sys, precedents.adr_graph, precedents.adr_graph.graph; "
        "heavy = [m for m in ('torch', 'lancedb', 'numpy', 'pydantic', 'pyarrow', "
        "'sentence_transformers', 'typer') if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_session_list_footer_names_a_command_that_lists_every_live_adr(
    adr_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SessionStart list's last line ("… and N more live ADRs: `precedents adr
    list`") names a real command, run from the repository as the hook's session is,
    and that command shows the live records the list left out."""
    import re

    from precedents.recall.format import LineParts
    from precedents.recall.start import SESSION_MAX_ADRS
    from precedents.recall.start import fit_session as _fit_session

    parts = [LineParts(f"{i:04d}", " ", f"Decision {i}", "") for i in range(SESSION_MAX_ADRS + 5)]
    text = _fit_session(parts)
    assert text is not None
    footer = text.splitlines()[-1]
    m = re.fullmatch(r"… and (\d+) more live ADRs: `precedents (adr [a-z]+(?: [-\w ]+)?)`", footer)
    assert m, footer
    assert int(m.group(1)) >= 5
    monkeypatch.chdir(adr_dir.parents[1])  # the repository root, as in a session
    result = runner.invoke(app, m.group(2).split())
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [ln.split()[0] for ln in lines if " live " in ln] == ["ADR-0002"]
    # Only the live ones: the list's footer points at exactly what it left out.
    assert all(" live " in ln for ln in lines if ln.startswith("ADR-"))
    bad = runner.invoke(app, ["adr", "list", "--status", "alive"])
    assert bad.exit_code == 2 and "--status must be one of" in bad.output
