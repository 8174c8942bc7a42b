"""Code names in records' text and in the touched file (rules/symbols.py): the file hook
gives a record that names code the file declares (issue #27)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from precedents.recall.files import FileScopes
from precedents.rules.scope import Scope, named_scope
from precedents.rules.symbols import MAX_READ, MAX_SYMBOLS, defined_symbols, named_symbols


def test_only_code_shaped_names_count() -> None:
    text = (
        "Settled: Retry.parse_retry_after clamps to DEFAULT_RETRY_AFTER_MAX; the "
        "HTTPHeaderDict keeps order, call urlopen() once, and os.path.join is fine. "
        "Always keep the Retry object; never read the README or run main."
    )
    found = named_symbols(text)
    assert {"Retry", "parse_retry_after", "DEFAULT_RETRY_AFTER_MAX", "HTTPHeaderDict"} <= set(found)
    assert "urlopen" in found  # a name called
    # Plain words, a module's functions, and names too common to mean anything: never.
    assert not {"Settled", "Always", "keep", "object", "README", "main", "os", "path"} & set(found)
    assert len(named_symbols(" ".join(f"name_{i}" for i in range(200)))) == MAX_SYMBOLS


def test_a_file_declares_its_classes_functions_and_constants(tmp_path: Path) -> None:
    source = tmp_path / "retry.py"
    source.write_text(
        "DEFAULT_RETRY_AFTER_MAX = 21600\n\nclass Retry:\n    def parse_retry_after(self, v):\n"
        "        return v\n\nasync def sleep_for_retry():\n    pass\n",
        encoding="utf-8",
    )
    go = tmp_path / "pool.go"
    go.write_text("package x\n\nfunc (p *Pool) Acquire() {}\ntype PoolConfig struct{}\n")
    ts = tmp_path / "api.ts"
    ts.write_text("export async function fetchUsers() {}\nexport interface UserRow {}\n")
    assert defined_symbols(str(source)) >= {
        "DEFAULT_RETRY_AFTER_MAX",
        "Retry",
        "parse_retry_after",
        "sleep_for_retry",
    }
    assert defined_symbols(str(go)) >= {"Acquire", "PoolConfig"}
    assert defined_symbols(str(ts)) >= {"fetchUsers", "UserRow"}
    assert defined_symbols(str(tmp_path / "missing.py")) == frozenset()


def test_hostile_files_cost_nothing(tmp_path: Path) -> None:
    """A FIFO, a device, a directory, a huge file: read without blocking, bounded."""
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.py"
    huge.write_bytes(b"x" * (MAX_READ * 4) + b"\nclass Late:\n    pass\n")
    started = time.perf_counter()
    assert defined_symbols(str(fifo)) == frozenset()
    assert defined_symbols("/dev/zero") == frozenset()
    assert defined_symbols(str(tmp_path)) == frozenset()
    assert "Late" not in defined_symbols(str(huge))  # past the bytes read
    assert time.perf_counter() - started < 5  # generous: a busy CPU, not a blocked read


@pytest.mark.parametrize("kind", ["note", "adr", "conversation"])
def test_the_file_hook_finds_a_record_by_the_code_it_names(kind: str, tmp_path: Path) -> None:
    scope = named_scope("We cap Retry.parse_retry_after at six hours.")
    assert "Retry" in scope.symbols and Scope.from_json(scope.to_json()) == scope
    row = {
        "kind": kind,
        "project": "/p",
        "path": f"/p/records/{kind}.md",
        "name": "cap",
        "description": "",
        "date": "",
        "adr_id": "",
        "scope": scope.to_json(),
        "source_hash": "h",
        "decided": "2026-01-01#1" if kind == "conversation" else "",
    }
    scopes = FileScopes([row])
    assert scopes.names_symbols(["/p"])
    found = scopes.naming(["/p"], "src/util/retry.py", frozenset({"Retry", "Other"}))
    assert [s.record.path for s in found] == [row["path"]]
    assert scopes.naming(["/p"], "src/util/retry.py", frozenset({"Other"})) == []
