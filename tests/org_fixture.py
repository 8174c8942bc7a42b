"""A real org index for the recall tests and the benchmark (issue #30, item 3).

:func:`build_org` writes each repository's files into a git folder, indexes it
with the local indexer and the real model (the same readers the org build uses:
ADRs with their graph, rule files, team notes), turns its chunk rows into the
org table's rows (:func:`precedents.org.table.org_schema`: ``project`` the
repository's name, ``path`` relative, ``origin`` "org", an ADR's ``mark`` and
``successors`` from its repository's ADR graph, ``url``), writes a real Lance
dataset and runs :func:`precedents.org.snapshot.export_org` into
``Settings.org_dir``: what the org pull leaves for the daemon.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from precedents.org.snapshot import ORG_SNAPSHOT, export_org
from precedents.org.table import ORIGIN, org_schema

# Repository name -> {path in the repository: text}.
Repos = Mapping[str, Mapping[str, str]]

PAYMENTS_ADRS = {
    "docs/adr/0001-charge-cards-synchronously.md": """# 1. Charge cards synchronously at checkout

Date: 2021-02-01

## Status

Superseded by [2. Charge cards through the outbox](0002-charge-cards-through-the-outbox.md)

## Context

Checkout needs the card processor's answer before it confirms an order.

## Decision

Checkout calls the card processor's HTTP API synchronously through
`src/payments/client.py`.
""",
    "docs/adr/0002-charge-cards-through-the-outbox.md": """# 2. Charge cards through the outbox

Date: 2023-05-10

## Status

Accepted

Supersedes [1. Charge cards synchronously at checkout](0001-charge-cards-synchronously.md)

## Context

Synchronous calls to the card processor timed out under load and charged cards twice.

## Decision

Card charges are written to the outbox table and sent to the card processor by a worker.
""",
}

PAYMENTS_RULE = (
    ".cursor/rules/refunds.mdc",
    """---
description: How refunds are issued in the payments service
alwaysApply: false
---
Issue refunds for card charges through the RefundLedger, never by calling the
card processor's refund endpoint directly.
""",
)

PLATFORM_RULE = (
    ".cursor/rules/queues.mdc",
    """---
description: How every service talks to the message queue
alwaysApply: false
scope: org
---
Every service publishes events to the message queue through its transactional
outbox table, never by calling the queue client directly.
""",
)

PLATFORM_GLOB_RULE = (
    ".cursor/rules/migrations.mdc",
    """---
description: Database migrations
globs: "**/migrations/*.sql"
alwaysApply: false
scope: org
---
A migration never drops a column in the release that stops writing it.
""",
)

PLATFORM_NOTE = (
    ".precedents/notes/kubernetes-probes.md",
    """---
title: Kubernetes readiness probes
---
Readiness probes of every service call /healthz/ready, which checks the database
pool; liveness probes never touch the database.
""",
)


def default_repos() -> dict[str, dict[str, str]]:
    """The fixture organisation: payments (its ADRs and a plain rule), platform (two
    `scope: org` rules, one scoped to files, and a team note)."""
    return {
        "payments": {**PAYMENTS_ADRS, PAYMENTS_RULE[0]: PAYMENTS_RULE[1]},
        "platform": dict([PLATFORM_RULE, PLATFORM_GLOB_RULE, PLATFORM_NOTE]),
    }


def write_repo(folder: Path, files: Mapping[str, str]) -> Path:
    """A repository folder (a ``.git`` folder marks its root) holding ``files``."""
    (folder / ".git").mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return folder


def index_project(home: Path, embedder: Any, root: Path) -> None:
    """Index the project at ``root`` into the state folder ``home`` (its own readers)."""
    from precedents.ingest.indexer import Indexer
    from precedents.ingest.sources import Sources, configured_sources, walk
    from precedents.store import Store
    from tests.conftest_daemon import settings_for

    settings = settings_for(home)
    store = Store(settings.index_dir, embedder.model_id, embedder.dimension)
    sources = configured_sources(settings, Sources(project=str(root)))
    Indexer(settings, store, embedder).sync(walk(sources))


def _graph_facts(root: Path, rel: str) -> tuple[str, list[str]]:
    """An ADR's mark and its live successors' paths in the repository, from its graph."""
    from precedents.adr_graph import build_graph
    from precedents.secrets.mask import mask_secrets

    path = root / rel
    graph = build_graph(path.parent, None, mask_secrets)
    found = graph.record_for_path(path)
    if found is None:
        return "status unknown", []
    ids = [found.current] if isinstance(found.current, str) else list(found.current or [])
    later = [
        str((graph.folder / graph.records[i].path).relative_to(root))
        for i in ids
        if i in graph.records and i != found.id
    ]
    return str(found.mark or ""), later


def org_rows(home: Path, root: Path, name: str, url: str) -> list[dict[str, Any]]:
    """The chunk rows of the project at ``root`` (indexed into ``home``) as org rows."""
    import lance

    from tests.conftest_daemon import settings_for

    table = lance.dataset(str(settings_for(home).index_dir / "chunks.lance")).to_table()
    rows = [r for r in table.to_pylist() if r["project"] == str(root)]
    marks: dict[str, tuple[str, list[str]]] = {}
    out = []
    for row in rows:
        rel = str(Path(row["path"]).relative_to(root))
        if row["kind"] == "adr" and rel not in marks:
            marks[rel] = _graph_facts(root, rel)
        mark, later = marks.get(rel, ("", []))
        out.append(
            {
                **row,
                "project": name,
                "path": rel,
                "doc_id": rel,
                "chunk_id": f"{name}/{rel}#{row['chunk_index']}",
                "origin": ORIGIN,
                "mark": mark,
                "successors": json.dumps(later),
                "url": url,
            }
        )
    return out


def write_table(rows: list[dict[str, Any]], uri: Path, dimension: int) -> int:
    """Write ``rows`` as the org table at ``uri`` (a new Lance version); its version."""
    import lance
    import pyarrow as pa

    schema = org_schema(dimension)
    data = pa.Table.from_pylist(
        [{f.name: r.get(f.name) for f in schema} for r in rows], schema=schema
    )
    mode = "overwrite" if uri.exists() else "create"
    return int(lance.write_dataset(data, str(uri), schema=schema, mode=mode).version)


def build_org(
    work: Path, embedder: Any, repos: Repos, org_dir: Path, *, table: Path | None = None
) -> Path:
    """Build the org table of ``repos`` under ``work`` and export it to
    ``org_dir/snapshot.npz`` (replaced atomically); the snapshot file."""
    home = work / "org-build-state"
    rows: list[dict[str, Any]] = []
    for name, files in repos.items():
        root = work / "org-repos" / name
        if root.exists():
            shutil.rmtree(root)
        write_repo(root, files)
        index_project(home, embedder, root)
        rows.extend(org_rows(home, root, name, f"https://git.example.com/acme/{name}.git"))
    uri = table or work / "org-table" / "chunks.lance"
    version = write_table(rows, uri, embedder.dimension)
    out = org_dir / ORG_SNAPSHOT
    export_org(uri, version, out, model=embedder.model_id, dimension=embedder.dimension)
    return out
