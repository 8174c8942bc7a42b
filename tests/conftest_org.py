"""Real services for the organisation index's tests (issue #30): an S3-compatible server
process and a local Ray cluster, each started once per test session.

Imported by those test modules (``from tests.conftest_org import s3_server, ...``):

* :func:`s3_server` — moto's standalone server (``python -m moto.server``), a real
  HTTP S3 endpoint on 127.0.0.1 in its own process; :func:`s3_env` points the
  standard AWS chain at it (``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP``, test keys)
  and :func:`bucket` gives each test a fresh bucket. Nothing of ours is stubbed.
* :func:`ray_cluster` — ``ray start --head --num-cpus 2`` in a temp folder: the
  address a build's ``--ray ADDRESS`` connects to; ``ray stop`` afterwards.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def git(root: Path, *args: str) -> None:
    """Run git in ``root`` with a committer set (the tests' repositories are real ones)."""
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def free_port() -> int:
    """A TCP port nobody listens on now (127.0.0.1)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class S3Server:
    """A running S3-compatible server: its endpoint and the environment that reaches it."""

    endpoint: str
    process: subprocess.Popen[bytes]

    def env(self, key_id: str = "test", secret: str = "test") -> dict[str, str]:
        """The standard chain's variables for this server (test keys: moto accepts any,
        unless it was started to check them)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": key_id,
            "AWS_SECRET_ACCESS_KEY": secret,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
        }

    def create_bucket(self, name: str) -> None:
        """A new bucket on the server (boto3: the server's own API, not our code)."""
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=name)

    def stop(self) -> None:
        """Terminate the server's process (killed when it does not go)."""
        self.process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
        if self.process.poll() is None:
            self.process.kill()


def start_moto(log: Path, checks_after: int | None = None) -> S3Server:
    """moto's standalone S3 server in its own process, answering; with ``checks_after``
    it checks credentials and IAM policies after that many calls
    (``INITIAL_NO_AUTH_ACTION_COUNT``: the calls that create the users)."""
    port = free_port()
    env = dict(os.environ)
    if checks_after is not None:
        env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(checks_after)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    server = S3Server(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{server.endpoint}/moto-api/", timeout=2).close()
            return server
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"moto server did not start: {log.read_text(errors='replace')[-500:]}")
            time.sleep(0.1)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's standalone S3 server in its own process, for the whole session."""
    server = start_moto(tmp_path_factory.mktemp("moto") / "server.log")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_env(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Server:
    """This test's environment points the AWS chain at the server (children inherit it)."""
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    return s3_server


@pytest.fixture
def bucket(s3_env: S3Server) -> str:
    """A fresh bucket on the server: its ``s3://`` URI with a prefix."""
    name = f"org-{uuid.uuid4().hex[:12]}"
    s3_env.create_bucket(name)
    return f"s3://{name}/index"


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real local Ray cluster of 2 CPUs (``ray start --head``): its address."""
    port = free_port()
    temp = Path("/tmp") / f"ray-{uuid.uuid4().hex[:8]}"  # short: Ray's socket paths
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}
    # Ray starts its workers at nice 15: beside work at normal priority (the spinners of
    # `make test-loaded`, another job on a CI runner) a build then crawls at a few % of
    # a core. A cluster that exists for the build runs them at normal priority
    # (docs/org.md, "Ray").
    env["RAY_worker_niceness"] = "0"
    start = [
        str(BIN / "ray"),
        "start",
        "--head",
        "--num-cpus",
        "2",
        "--port",
        str(port),
        "--include-dashboard",
        "false",
        "--disable-usage-stats",
        "--temp-dir",
        str(temp),
    ]
    done = subprocess.run(start, env=env, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        pytest.fail(f"ray start failed: {done.stderr[-800:]}")
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run(
            [str(BIN / "ray"), "stop", "--force"], env=env, capture_output=True, timeout=120
        )
