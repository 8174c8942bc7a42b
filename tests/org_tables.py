"""A small organisation index written straight to a URI, for the pull's tests and bench.

Rows of :func:`precedents.org.table.org_schema` with real embeddings from the
bundled model, written with Lance (one commit per repository, as a build writes
a repository's rows), and the served pointer written last, as the build does.
The build itself (`precedents org build`) is not used: these tests are the
reader's, and build their table with the table contract alone.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

DECISIONS = (
    "Services talk to the queue through the outbox, never directly.",
    "Every service exposes health checks on /healthz for the load balancer.",
    "Secrets come from the vault agent, never from environment files in the repository.",
    "Payments are idempotent: every charge carries a client-generated idempotency key.",
    "Database migrations are backwards compatible for one release.",
    "Feature flags are removed within two releases of reaching 100 percent.",
)


def repo_rows(embedder: Any, repo: str, n: int, salt: str = "") -> list[dict[str, Any]]:
    """``n`` ADR rows of repository ``repo`` (one chunk each), embedded for real."""
    texts = [f"{DECISIONS[i % len(DECISIONS)]} ({repo} ADR {i}{salt})" for i in range(n)]
    vectors = embedder.encode_passages(texts)
    rows = []
    for i, (text, vector) in enumerate(zip(texts, vectors, strict=True)):
        path = f"docs/adr/{i + 1:04d}-decision.md"
        digest = hashlib.sha256(text.encode()).hexdigest()
        rows.append(
            {
                "chunk_id": f"{repo}:{path}:0",
                "doc_id": f"{repo}:{path}",
                "kind": "adr",
                "project": repo,
                "path": path,
                "name": f"{repo} ADR {i}{salt}",
                "description": "",
                "date": "2025-01-01",
                "adr_id": f"ADR-{i + 1:04d}",
                "chunk_index": 0,
                "text": text,
                "vector": [float(x) for x in vector],
                "source_hash": digest,
                "scope": "",
                "origin": "org",
                "author": "",
                "decided": "",
                "mark": "",
                "successors": "[]",
                "url": f"https://git.example.com/{repo}.git",
            }
        )
    return rows


class OrgTable:
    """An org table at ``uri`` being written: repositories appended or replaced, then served."""

    def __init__(self, uri: str, embedder: Any, model: str) -> None:
        self.uri = uri.rstrip("/")
        self.embedder = embedder
        self.model = model
        self.repos: dict[str, int] = {}

    @property
    def table(self) -> str:
        return f"{self.uri}/chunks.lance"

    def put_repo(self, repo: str, n: int, salt: str = "") -> int:
        """Write repository ``repo``'s ``n`` rows (replacing its old ones): the new version."""
        import lance
        import pyarrow as pa

        from precedents.org.table import org_schema

        schema = org_schema(self.embedder.dimension)
        data = pa.Table.from_pylist(repo_rows(self.embedder, repo, n, salt), schema=schema)
        try:
            dataset = lance.dataset(self.table)
        except (ValueError, OSError):
            dataset = None
        if dataset is None:
            dataset = lance.write_dataset(data, self.table, schema=schema)
        else:
            if repo in self.repos:
                dataset.delete(f"project = '{repo}'")
            dataset = lance.write_dataset(data, self.table, schema=schema, mode="append")
        self.repos[repo] = n
        return int(dataset.version)

    def serve(self, version: int | None = None) -> int:
        """Write the pointer naming ``version`` (default the latest): readers see it now."""
        import lance
        import obstore

        from precedents.org.location import OrgLocation
        from precedents.org.table import SERVED, RepoEntry, Served

        if version is None:
            version = int(lance.dataset(self.table).version)
        served = Served(
            version=version,
            model=self.model,
            dimension=int(self.embedder.dimension),
            built_at=datetime.now(UTC).isoformat(timespec="seconds"),
            repos={r: RepoEntry(source=f"/src/{r}", records=n) for r, n in self.repos.items()},
        )
        obstore.put(OrgLocation.parse(self.uri).store(), SERVED, served.to_json())
        return version


def write_pointer(uri: str, data: bytes | dict[str, Any]) -> None:
    """Any bytes (or JSON) as the pointer at ``uri``: a foreign or newer index."""
    import obstore

    from precedents.org.location import OrgLocation
    from precedents.org.table import SERVED

    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    obstore.put(OrgLocation.parse(uri).store(), SERVED, raw)
