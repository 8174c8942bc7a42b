"""Every daemon pulls the org index locally (issue #30, item 2), against a real S3 server.

The table is written into a bucket of moto's standalone server (a real HTTP S3
endpoint in its own process, tests/conftest_org.py) with Lance and the table
contract (tests/org_tables.py), with real embeddings of the bundled model; the
pull, the CLI and the daemon then read it over HTTP through the standard AWS
chain the fixtures set.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from precedents.config import DEFAULT_MODEL, load_settings
from precedents.errors import OrgDenied, OrgError, OrgNotAnIndex, OrgUnreachable
from precedents.org.pull import pull
from precedents.org.status import (
    MIRROR,
    ORG_SNAPSHOT,
    OrgStatus,
    pulling,
    read_status,
    write_status,
)
from precedents.query_daemon.org_pull import OrgPulls
from precedents.store.snapshot_file import read as read_snapshot
from tests.conftest_daemon import alive, prompt_json, run_hook, start_fake_daemon, stop_daemon
from tests.conftest_org import (  # noqa: F401
    S3Server,
    bucket,
    s3_env,
    s3_server,
    start_moto,
)
from tests.org_tables import OrgTable, write_pointer

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def org(bucket: str, embedder: Any) -> OrgTable:  # noqa: F811
    """Two repositories in the bucket, served."""
    table = OrgTable(bucket, embedder, DEFAULT_MODEL)
    table.put_repo("payments", 6)
    table.put_repo("platform", 6)
    table.serve()
    return table


# Bound and never listening: a connection to it is refused, and no other process can
# take the port meanwhile (a free port found and released could be, on a busy machine).
_REFUSING: list[socket.socket] = []


def refused_endpoint() -> str:
    """An endpoint whose connections are refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _REFUSING.append(sock)
    return f"http://127.0.0.1:{sock.getsockname()[1]}"


def _cli(
    home: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    extra = {k: v for k, v in os.environ.items() if not k.startswith("PRECEDENTS_")}
    extra.update(PRECEDENTS_HOME=str(home), HF_HUB_OFFLINE="1", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "precedents.cli", *args],
        capture_output=True,
        text=True,
        env=extra,
        timeout=300,
        check=False,
    )


def test_pull_copies_the_served_version_and_writes_snapshot_and_status(
    home: Path, org: OrgTable
) -> None:
    status = pull(load_settings(), org.uri)
    assert status.version is not None and status.records == 12
    assert status.repositories == 2 and status.bytes_copied > 0 and not status.last_error
    assert status.mirror_bytes == status.bytes_copied  # the first pull copies it all
    snap = read_snapshot(home / "org" / ORG_SNAPSHOT)
    assert snap.fingerprint == f"org:{status.version}"
    assert {m["repo"] for m in snap.meta} == {"payments", "platform"}
    assert all(m["path"].startswith("org://") for m in snap.meta)
    assert read_status(home / "org") == status
    # Only the served version's files: no transaction files, no older manifest.
    local = {p.name for p in (home / "org" / MIRROR).rglob("*") if p.is_file()}
    assert not any(n.endswith(".txn") for n in local)
    assert sum(n.endswith(".manifest") for n in local) == 1


def test_same_version_copies_nothing_and_a_new_version_only_its_files(
    home: Path, org: OrgTable
) -> None:
    first = pull(load_settings(), org.uri)
    again = pull(load_settings(), org.uri)
    assert again.version == first.version and again.bytes_copied == 0
    assert again.files_copied == 0 and again.changed_at == first.changed_at

    org.put_repo("payments", 6, salt=" v2")  # one repository changed: a delete, an append
    org.serve()
    third = pull(load_settings(), org.uri)
    assert third.version is not None and first.version is not None
    assert third.version > first.version and third.records == 12
    # The new data file, a deletion file and one manifest: far less than the whole table.
    assert 0 < third.bytes_copied < third.mirror_bytes
    assert third.files_copied <= 3
    snap = read_snapshot(home / "org" / ORG_SNAPSHOT)
    texts = [m["name"] for m in snap.meta if m["repo"] == "payments"]
    assert len(texts) == 6 and all("v2" in t for t in texts)
    # The files of the old version are gone from the mirror; one manifest left.
    manifests = list((home / "org" / MIRROR).rglob("*.manifest"))
    assert len(manifests) == 1


def test_a_version_built_but_not_served_is_not_pulled(home: Path, org: OrgTable) -> None:
    first = pull(load_settings(), org.uri)
    org.put_repo("checkout", 4)  # a build that has not written its pointer yet
    again = pull(load_settings(), org.uri)
    assert again.version == first.version and again.bytes_copied == 0
    assert again.records == 12


def _failed_pull(home: Path, uri: str, error: type[OrgError]) -> str:
    with pytest.raises(error) as caught:
        pull(load_settings(), uri)
    line = str(caught.value)
    assert "\n" not in line and "Traceback" not in line
    status = read_status(home / "org")
    assert status is not None and status.last_error == line
    return line


def test_unreachable_endpoint_keeps_the_previous_snapshot(
    home: Path, org: OrgTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = pull(load_settings(), org.uri)
    before = (home / "org" / ORG_SNAPSHOT).read_bytes()
    monkeypatch.setenv("AWS_ENDPOINT_URL", refused_endpoint())
    started = time.monotonic()
    line = _failed_pull(home, org.uri, OrgUnreachable)
    assert time.monotonic() - started < 90  # bounded retries, not a hang
    assert org.uri.split("/")[2] in line
    assert (home / "org" / ORG_SNAPSHOT).read_bytes() == before
    status = read_status(home / "org")
    assert status is not None and status.version == first.version and status.records == 12


def test_a_bucket_that_is_not_there_is_one_line(home: Path, s3_env: S3Server) -> None:  # noqa: F811
    _failed_pull(home, "s3://no-such-bucket-precedents/index", OrgUnreachable)


def test_a_foreign_table_or_a_newer_format_is_refused(
    home: Path,
    org: OrgTable,
    bucket: str,  # noqa: F811
) -> None:
    pull(load_settings(), org.uri)
    before = (home / "org" / ORG_SNAPSHOT).read_bytes()
    # A Lance table without a pointer: not a precedents index.
    foreign = f"{bucket}-foreign"
    import lance
    import pyarrow as pa

    lance.write_dataset(pa.table({"a": [1, 2]}), f"{foreign}/chunks.lance")
    assert "not a precedents org index" in _failed_pull(home, foreign, OrgNotAnIndex)
    # A pointer of a newer layout, and one that is not JSON.
    write_pointer(
        foreign, {"format": 99, "version": 1, "model": "m", "dimension": 3, "built_at": ""}
    )
    assert "newer" in _failed_pull(home, foreign, OrgNotAnIndex)
    write_pointer(foreign, b"\x00garbage")
    _failed_pull(home, foreign, OrgNotAnIndex)
    # A pointer to a version the table does not have.
    write_pointer(
        foreign,
        {"format": 1, "version": 42, "model": DEFAULT_MODEL, "dimension": 384, "built_at": ""},
    )
    assert "no manifest" in _failed_pull(home, foreign, OrgNotAnIndex)
    # The foreign table's version 1, served as if it were an org table: its export fails.
    write_pointer(
        foreign,
        {"format": 1, "version": 1, "model": DEFAULT_MODEL, "dimension": 384, "built_at": ""},
    )
    _failed_pull(home, foreign, OrgError)
    assert (home / "org" / ORG_SNAPSHOT).read_bytes() == before


def test_another_model_is_refused(home: Path, bucket: str, embedder: Any) -> None:  # noqa: F811
    table = OrgTable(bucket, embedder, "BAAI/bge-m3")
    table.put_repo("payments", 2)
    table.serve()
    line = _failed_pull(home, bucket, OrgError)
    assert "BAAI/bge-m3" in line and not (home / "org" / ORG_SNAPSHOT).exists()


def test_cli_pull_status_and_the_status_line(home: Path, org: OrgTable) -> None:
    done = _cli(home, "org", "pull", env={"PRECEDENTS_ORG_URI": org.uri})
    assert done.returncode == 0, done.stderr
    assert "version" in done.stdout and "12 records in 2 repositories" in done.stdout
    shown = _cli(home, "org", "status", "--json", env={"PRECEDENTS_ORG_URI": org.uri})
    info = json.loads(shown.stdout)
    assert info["records"] == 12 and info["last_error"] == "" and info["age_s"] < 300
    assert info["configured"] == org.uri and info["pulling"] is None
    text = _cli(home, "org", "status", env={"PRECEDENTS_ORG_URI": org.uri}).stdout
    assert "records:    12 in 2 repositories" in text and "last error" not in text
    line = [
        x
        for x in _cli(home, "status", env={"PRECEDENTS_ORG_URI": org.uri}).stdout.splitlines()
        if x.startswith("org:")
    ]
    assert len(line) == 1 and "12 records in 2 repositories" in line[0]


def test_cli_failure_is_one_line_and_exit_1(home: Path, org: OrgTable) -> None:
    assert _cli(home, "org", "pull", "--from", org.uri).returncode == 0
    done = _cli(
        home,
        "org",
        "pull",
        env={"PRECEDENTS_ORG_URI": org.uri, "AWS_ENDPOINT_URL": refused_endpoint()},
    )
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr and "test" not in done.stderr.replace(org.uri, "")
    text = _cli(home, "org", "status", env={"PRECEDENTS_ORG_URI": org.uri}).stdout
    assert "records:    12" in text and "last error:" in text  # the version held still serves
    unset = _cli(home, "org", "pull")
    assert unset.returncode == 2 and "org_uri" in unset.stderr
    assert "none configured" in _cli(tmp_home(home), "org", "status").stdout


def tmp_home(home: Path) -> Path:
    """Another, empty state folder beside ``home``."""
    other = home.parent / "other-state"
    other.mkdir(exist_ok=True)
    return other


# -- the daemon ----------------------------------------------------------------------


@contextlib.contextmanager
def hanging_endpoint() -> Iterator[str]:
    """An HTTP endpoint that accepts connections and never answers: its URL."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.2)
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            with contextlib.suppress(OSError):
                conn, _ = server.accept()
                held.append(conn)  # kept open, never read from or written to

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        done.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def _configure(home: Path, uri: str, pull_s: float = 900) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'org_uri = "{uri}"\norg_pull_s = {pull_s}\n')


def _wait_for(predicate: Any, limit: float, what: str) -> None:
    deadline = time.monotonic() + limit
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_a_daemon_pulls_on_start(home: Path, org: OrgTable) -> None:
    _configure(home, org.uri)
    proc = start_fake_daemon(home)
    try:
        _wait_for(lambda: (read_status(home / "org") or OrgStatus()).records == 12, 120, "the pull")
        assert (home / "org" / ORG_SNAPSHOT).is_file()
        log = home / "logs" / "daemon.log"
        _wait_for(lambda: "org pull {" in log.read_text(), 30, "the pull's log line")
        assert '"records": 12' in log.read_text()
    finally:
        stop_daemon(proc)


@pytest.mark.usefixtures("s3_env")
def test_the_hook_never_waits_for_a_hanging_pull(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with hanging_endpoint() as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        _configure(home, "s3://hangs/index")
        proc = start_fake_daemon(home)
        try:
            _wait_for(lambda: pulling(home / "org") is not None, 60, "the pull to start")
            child = pulling(home / "org")
            cwd = home.parent
            for stdin in (prompt_json("how do services reach the queue?", cwd), _session_json(cwd)):
                started = time.monotonic()
                done = run_hook(home, stdin, budget_ms=None, timeout=30)
                took = time.monotonic() - started
                assert done.returncode == 0 and took < 10, (took, done.stderr)
            asked = prompt_json("how do services reach the queue again?", cwd)
            assert b"ctx" in run_hook(home, asked, timeout=30).stdout  # answered, not skipped
            assert pulling(home / "org") == child  # still hanging, one pull only
        finally:
            stop_daemon(proc)
        assert child
        _wait_for(lambda: not alive(child), 20, "the pull child to be stopped")


def _session_json(cwd: Path) -> bytes:
    return json.dumps(
        {
            "session_id": "s-org",
            "cwd": str(cwd),
            "hook_event_name": "SessionStart",
            "source": "startup",
        }
    ).encode()


@pytest.mark.usefixtures("s3_env")
def test_a_hung_pull_is_killed_and_said(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with hanging_endpoint() as url:
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        monkeypatch.setenv("PRECEDENTS_ORG_URI", "s3://hangs/index")
        pulls = OrgPulls(load_settings(), threading.Event(), hung_s=3)
        started = time.monotonic()
        code = pulls.pull_once()
        assert code not in (None, 0) and time.monotonic() - started < 30
        assert pulls.child is not None and not alive(pulls.child.pid)
    status = read_status(home / "org")
    assert status is not None and "no answer after 3s" in status.last_error
    assert status.uri == "s3://hangs/index" and status.version is None


def test_a_session_start_pulls_when_the_last_pull_is_old(
    home: Path, org: OrgTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRECEDENTS_ORG_URI", org.uri)
    stop = threading.Event()
    pulls = OrgPulls(load_settings(), stop)
    pulls.start()
    try:
        _wait_for(lambda: pulls.pulls == 1 and not pulls.running, 120, "the first pull")
        pulls.session_started()  # just pulled: nothing
        time.sleep(1)
        assert pulls.pulls == 1
        status = read_status(home / "org")
        assert status is not None and status.records == 12
        status.attempted_at = "2020-01-01T00:00:00+00:00"  # as after a night asleep
        write_status(home / "org", status)
        pulls.session_started()
        _wait_for(lambda: pulls.pulls == 2 and not pulls.running, 120, "the second pull")
        again = read_status(home / "org")
        assert again is not None and again.bytes_copied == 0 and not again.last_error
    finally:
        stop.set()
        pulls.close()


# -- wrong credentials: a second S3 server that checks them --------------------------


@pytest.fixture(scope="module")
def checking_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """moto's server with its credential check on (``INITIAL_NO_AUTH_ACTION_COUNT``: the
    first three calls create a user, its key and its policy): the endpoint and that
    user's environment."""
    import boto3

    server = start_moto(tmp_path_factory.mktemp("moto-auth") / "server.log", checks_after=3)
    endpoint = server.endpoint
    try:
        iam = boto3.client(
            "iam",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="anyone",
            aws_secret_access_key="anyone",
        )
        iam.create_user(UserName="ci")
        key = iam.create_access_key(UserName="ci")["AccessKey"]
        allow = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
        }
        iam.put_user_policy(UserName="ci", PolicyName="all", PolicyDocument=json.dumps(allow))
        env = server.env(key["AccessKeyId"], key["SecretAccessKey"])
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        ).create_bucket(Bucket="checked-org")
        yield endpoint, env
    finally:
        server.stop()


def test_wrong_credentials_are_one_line_and_keep_the_snapshot(
    home: Path,
    checking_s3: tuple[str, dict[str, str]],
    embedder: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, env = checking_s3
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    uri = "s3://checked-org/index"
    table = OrgTable(uri, embedder, DEFAULT_MODEL)
    table.put_repo("payments", 3)
    table.serve()
    assert pull(load_settings(), uri).records == 3
    before = (home / "org" / ORG_SNAPSHOT).read_bytes()
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    line = _failed_pull(home, uri, OrgDenied)
    assert "not-the-secret" not in line and env["AWS_ACCESS_KEY_ID"] not in line
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIANOBODYKNOWS00000")
    _failed_pull(home, uri, OrgDenied)
    assert (home / "org" / ORG_SNAPSHOT).read_bytes() == before


def test_a_table_rebuilt_from_scratch_is_pulled_whole(
    home: Path, org: OrgTable, embedder: Any
) -> None:
    import obstore

    from precedents.org.location import OrgLocation

    first = pull(load_settings(), org.uri)
    store = OrgLocation.parse(org.uri).store()
    paths = [o["path"] for o in obstore.list(store, prefix="chunks.lance/").collect()]
    obstore.delete(store, paths)
    time.sleep(1.1)  # another build time
    again = OrgTable(org.uri, embedder, DEFAULT_MODEL)
    again.put_repo("identity", 5)
    again.put_repo("search", 5)
    again.serve()
    second = pull(load_settings(), org.uri)
    assert second.version == first.version  # numbered from 1 again: the same manifest name
    assert second.records == 10
    snap = read_snapshot(home / "org" / ORG_SNAPSHOT)
    assert {m["repo"] for m in snap.meta} == {"identity", "search"}


def test_a_key_in_the_uri_is_never_shown(home: Path, s3_env: S3Server) -> None:  # noqa: F811
    key = "AKIAIOSFODNN7EXAMPLE"
    uri = f"s3://org-keys/{key}"  # a key pasted into the prefix
    env = {"PRECEDENTS_ORG_URI": uri}
    failed = _cli(home, "org", "pull", env=env)
    assert failed.returncode == 1 and key not in failed.stderr
    for args in (("org", "status"), ("org", "status", "--json"), ("status",)):
        shown = _cli(home, *args, env=env)
        assert shown.returncode == 0 and key not in shown.stdout, args
    assert key not in (home / "org" / "status.json").read_text()


def test_a_second_pull_at_once_is_told_so(home: Path, org: OrgTable) -> None:
    from precedents.org.status import PULL_ROLE
    from precedents.runlock import Claim

    claim = Claim(home / "org", PULL_ROLE)  # as the daemon's pull child holds it
    assert claim.acquire()
    try:
        done = _cli(home, "org", "pull", "--from", org.uri)
        assert done.returncode == 1 and "another pull" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        info = json.loads(_cli(home, "org", "status", "--json", "--", env={}).stdout or "null")
        assert info is None or info["pulling"] == os.getpid()
    finally:
        claim.release()


def test_a_pointer_of_another_dimension_is_refused(home: Path, org: OrgTable) -> None:
    import lance

    version = int(lance.dataset(org.table).version)
    pointer = {"format": 1, "version": version, "model": DEFAULT_MODEL, "dimension": 96,
               "built_at": "2026-01-01T00:00:00+00:00"}  # fmt: skip
    write_pointer(org.uri, pointer)
    line = _failed_pull(home, org.uri, OrgNotAnIndex)
    assert "vectors of 384 dimensions" in line and not (home / "org" / ORG_SNAPSHOT).exists()


def test_the_file_names_agree_with_the_export() -> None:
    from precedents.org import snapshot, status

    assert (snapshot.ORG_SNAPSHOT, snapshot.ORG_STATUS) == (
        status.ORG_SNAPSHOT,
        status.ORG_STATUS,
    )


def test_pulls_what_the_org_build_serves(home: Path, bucket: str, tmp_path: Path) -> None:  # noqa: F811
    """End to end with the real build: `org build` in CI, then this machine's pull."""
    from precedents import api
    from tests.test_org_build import MADR, _commit, make_repos, repos_file

    made = make_repos(tmp_path / "r")
    listing = repos_file(tmp_path / "r" / "repos.txt", ["alpha", "beta", "./gamma name=comet"])
    api.org_build(load_settings(), listing, bucket, workers=1)
    first = pull(load_settings(), bucket)
    snap = read_snapshot(home / "org" / ORG_SNAPSHOT)
    assert {m["repo"] for m in snap.meta} == {"alpha", "beta", "comet"}
    assert first.repositories == 3 and first.records == len(snap.meta) > 0
    marks = {m["path"]: m.get("mark") for m in snap.meta if m["repo"] == "comet"}
    assert any("superseded" in (mark or "") for mark in marks.values())

    changed = made["alpha"] / "docs" / "adr" / sorted(MADR.glob("00*.md"))[2].name
    changed.write_text(changed.read_text() + "\n\nAmended: the tooling lives in its own repo.\n")
    _commit(made["alpha"])
    api.org_build(load_settings(), listing, bucket, workers=1)
    second = pull(load_settings(), bucket)
    assert second.version is not None and first.version is not None
    assert second.version > first.version and second.records == first.records
    assert 0 < second.bytes_copied < second.mirror_bytes


def test_an_index_on_a_path_is_pulled_too(home: Path, tmp_path: Path, embedder: Any) -> None:
    folder = tmp_path / "shared-drive" / "org"
    table = OrgTable(str(folder), embedder, DEFAULT_MODEL)
    table.put_repo("payments", 3)
    table.serve()
    status = pull(load_settings(), str(folder))
    assert status.records == 3 and status.uri == str(folder) and status.bytes_copied > 0
    again = pull(load_settings(), f"file://{folder}")  # the same folder, spelled as a URI
    assert again.records == 3 and again.uri == f"file://{folder}"
