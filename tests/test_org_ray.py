"""`org build --ray`: the org index built on a real local Ray cluster through lance-ray
(issue #30 item 1, docs/org.md, "Scale"), into a real S3-compatible server (moto's).

The same repositories built by one local process and by the cluster give the same rows;
the cluster's build adds one commit; an incremental build on the cluster embeds only
what changed; an address nobody answers at, or a missing extra, is one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bench.org_corpus import change_one, make_repo

from tests import conftest_org
from tests.conftest_org import free_port

# The real services' fixtures (tests/conftest_org.py), used by name below.
s3_server = conftest_org.s3_server
s3_env = conftest_org.s3_env
bucket = conftest_org.bucket
ray_cluster = conftest_org.ray_cluster

pytestmark = pytest.mark.slow
RECORDS = 9  # a repository's documents: enough for ADR marks and rules, quick to embed
COMPARED = ("project", "path", "chunk_index", "source_hash", "mark", "successors", "text", "kind")


def _repos(root: Path, indices: tuple[int, ...]) -> Path:
    """Repositories from the real ADR and rule fixtures, and the repos file naming them."""
    lines = []
    for i in indices:
        repo = root / f"svc-{i:04d}"
        make_repo(repo, i, RECORDS)
        lines.append(f"{repo} name={repo.name}")
    listing = root / "repos.txt"
    listing.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return listing


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "RAY_AUTH_MODE": "disabled"},
    )


def _rows(uri: str) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The served version's rows by (repository, path, chunk)."""
    import lance

    from precedents.org.location import OrgLocation
    from precedents.org.table import SERVED, Served

    location = OrgLocation.parse(uri)
    import obstore

    served = Served.from_json(obstore.get(location.store(), SERVED).bytes().to_bytes())
    table = lance.dataset(location.table_uri, version=served.version).to_table()
    out = {}
    for row in table.to_pylist():
        key = (row["project"], row["path"], row["chunk_index"])
        assert key not in out, f"two rows for {key}"
        out[key] = row
    return out


def _same(a: dict[tuple[str, str, int], dict[str, Any]], b: dict[Any, dict[str, Any]]) -> None:
    assert a.keys() == b.keys()
    for key, row in a.items():
        other = b[key]
        assert {c: row[c] for c in COMPARED} == {c: other[c] for c in COMPARED}, key
        np.testing.assert_allclose(row["vector"], other["vector"], atol=1e-4)


def _lines(stdout: str) -> list[str]:
    """Every stdout line is ours: a repository's, a refusal, the summary (no Ray chatter)."""
    lines = stdout.splitlines()
    for line in lines:
        assert line.startswith(("svc-", "  refused: ", "served version ")), line
    return lines


def test_ray_build_same_rows_as_one_process_then_incremental(
    tmp_path: Path, home: Path, bucket: str, ray_cluster: str
) -> None:
    listing = _repos(tmp_path / "repos", (2, 3, 4))
    on_ray, local = f"{bucket}/ray", f"{bucket}/local"

    done = _cli("org", "build", "--repos-from", str(listing), "--to", on_ray, "--ray", ray_cluster)
    assert done.returncode == 0, done.stderr
    lines = _lines(done.stdout)
    assert sum(line.startswith("svc-") for line in lines) == 3
    single = _cli("org", "build", "--repos-from", str(listing), "--to", local, "--workers", "1")
    assert single.returncode == 0, single.stderr

    ray_rows, local_rows = _rows(on_ray), _rows(local)
    _same(ray_rows, local_rows)
    assert {k[0] for k in ray_rows} == {"svc-0002", "svc-0003", "svc-0004"}
    assert any(r["mark"] for r in ray_rows.values()), "no ADR of the fixtures carries a mark"

    import lance

    from precedents.org.location import OrgLocation

    versions = lance.dataset(OrgLocation.parse(on_ray).table_uri).versions()
    # The empty table, then ONE commit of every repository's fragments (not one per repository).
    assert len(versions) == 2, versions

    # One ADR changed, one repository no longer listed: only that ADR is embedded again.
    changed = change_one(tmp_path / "repos", 3)
    listing.write_text(
        "".join(line + "\n" for line in listing.read_text().splitlines() if "svc-0004" not in line)
    )
    again = _cli(
        "org", "build", "--repos-from", str(listing), "--to", on_ray, "--ray", ray_cluster, "--json"
    )
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    by_name = {r["name"]: r for r in report["repos"]}
    assert by_name["svc-0002"]["changed"] is False and by_name["svc-0002"]["new"] == 0
    assert by_name["svc-0003"]["new"] == 1 and by_name["svc-0003"]["removed"] == 1
    assert report["gone"] == ["svc-0004"]
    after = _rows(on_ray)
    assert {k[0] for k in after} == {"svc-0002", "svc-0003"}
    rel = changed.relative_to(tmp_path / "repos" / "svc-0003").as_posix()
    mine = [r for k, r in after.items() if k[:2] == ("svc-0003", rel)]
    new_hash = hashlib.sha256(changed.read_bytes()).hexdigest()
    assert mine and {r["source_hash"] for r in mine} == {new_hash}
    unchanged = {k: r for k, r in after.items() if k[0] == "svc-0002"}
    _same(unchanged, {k: r for k, r in ray_rows.items() if k[0] == "svc-0002"})


def test_unreachable_cluster_is_one_line(tmp_path: Path, home: Path, bucket: str) -> None:
    listing = _repos(tmp_path / "repos", (2,))
    address = f"127.0.0.1:{free_port()}"
    started = time.monotonic()
    done = _cli("org", "build", "--repos-from", str(listing), "--to", bucket, "--ray", address)
    assert time.monotonic() - started < 30
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert f"Ray cluster at {address} does not answer" in done.stderr
    assert "Traceback" not in done.stderr


def test_missing_extra_is_one_line(tmp_path: Path, home: Path) -> None:
    listing = _repos(tmp_path / "repos", (2,))
    # A Python where Ray cannot be imported (None in sys.modules makes `import ray` fail).
    code = (
        "import sys; sys.modules['ray'] = None; sys.modules['lance_ray'] = None\n"
        "from precedents.cli.entry import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "org",
            "build",
            "--repos-from",
            str(listing),
            "--to",
            str(tmp_path / "index"),
            "--ray",
            "auto",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (
        "precedents: org build --ray needs precedents[org-ray] (Ray and lance-ray)"
    )
    assert not (tmp_path / "index" / "chunks.lance").exists()


def test_address_forms() -> None:
    from precedents.errors import OrgError, OrgUnreachable
    from precedents.org.ray_build import check_answers, forwarded_env

    with pytest.raises(OrgError, match="not HOST:PORT"):
        check_answers("somewhere")
    with pytest.raises(OrgUnreachable):
        check_answers(f"127.0.0.1:{free_port()}", timeout=2)
    check_answers("auto")  # Ray's own lookup, checked by ray.init
    env = {"AWS_ENDPOINT_URL": "x", "GOOGLE_APPLICATION_CREDENTIALS": "y", "HOME": "/root"}
    assert forwarded_env(env) == {"AWS_ENDPOINT_URL": "x", "GOOGLE_APPLICATION_CREDENTIALS": "y"}


def test_build_rows_on_ray_one_commit_and_progress(
    tmp_path: Path, home: Path, ray_cluster: str
) -> None:
    """The function itself: each repository reported as it finishes, its rows written by
    the worker (``written``, no rows sent back), one commit creating the table."""
    import lance

    from precedents.config import load_settings
    from precedents.org.ray_build import build_rows_on_ray
    from precedents.org.work import RepoTask

    settings = load_settings()
    repos = tmp_path / "repos"
    tasks = []
    for i in (5, 6):
        make_repo(repos / f"svc-{i:04d}", i, 4)
        path = str(repos / f"svc-{i:04d}")
        tasks.append(RepoTask(f"svc-{i:04d}", path, path, settings=settings))
    table = str(tmp_path / "index" / "chunks.lance")
    seen: list[str] = []
    done = build_rows_on_ray(
        tasks, ray_cluster, table, dimension=384, workers=2, progress=lambda r: seen.append(r.name)
    )
    assert sorted(seen) == ["svc-0005", "svc-0006"]
    assert [r.name for r in done.repos] == ["svc-0005", "svc-0006"]
    assert all(r.rows is None and r.written == r.chunks > 0 for r in done.repos)
    ds = lance.dataset(table)
    assert done.version == ds.version == 1  # one commit made the table
    assert ds.count_rows() == sum(r.written for r in done.repos)
    assert done.workers == 2 and len(done.worker_rss) == 2 and min(done.worker_rss) > 0
