"""A small monorepo with rule files in every agent's format, ADRs, a note and a session log.

Built on disk by :func:`build_shop` for the file-hook tests (tests/test_file_hook.py)
and the real Claude Code client (tests/test_claude_code_e2e.py): a real git
folder, Claude Code's own folder beside it with the project's memory note and
one of its conversation logs, indexed by the real indexer and model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RULES = {
    ".cursor/rules/api-handlers.mdc": (
        "---\ndescription: How API handlers validate their input\n"
        "globs: src/api/**/*.ts\nalwaysApply: false\n---\n"
        "# API handlers\n\nValidate every request body with zod before touching it.\n"
    ),
    ".cursor/rules/test-files.mdc": (
        "---\nglobs: **/*.test.ts\n---\n# Test files\n\nUse vitest, never jest; no snapshots.\n"
    ),
    ".cursor/rules/house-style.mdc": (
        "---\ndescription: House style\nalwaysApply: true\n---\n"
        "# House style\n\nTwo-space indentation everywhere.\n"
    ),
    ".claude/rules/database.md": (
        '---\npaths:\n  - "src/db/**"\n---\n# Database access\n\n'
        "All queries go through the repository layer; no raw SQL in request handlers.\n"
    ),
    ".claude/rules/always-claude.md": (
        "# Commit messages\n\nWrite commit subjects in the imperative.\n"
    ),
    ".github/instructions/python.instructions.md": (
        '---\napplyTo: "scripts/**/*.py"\n---\n# Python scripts\n\n'
        "Scripts use argparse and exit non-zero on any failure.\n"
    ),
    ".windsurf/rules/frontend.md": (
        "---\ntrigger: glob\nglobs: *.tsx\n---\n# Frontend components\n\n"
        "Components are function components with typed props.\n"
    ),
    ".clinerules/deploy.md": "# Deploys\n\nNever deploy on a Friday afternoon.\n",
    "AGENTS.md": "# Agents guide\n\nThe monorepo uses pnpm workspaces.\n",
    "web/AGENTS.md": "# Web app guide\n\nRun the web tests before every commit in web/.\n",
    "services/billing/CLAUDE.md": "# Billing service\n\nAmounts are integer cents, never floats.\n",
}
ADRS = {
    "0001-refunds-through-stripe-directly.md": (
        "# 1. Issue refunds by calling Stripe directly\n\nDate: 2023-01-10\n\n## Status\n\n"
        "Superseded by [2. Refunds go through the payments service]"
        "(0002-refunds-through-the-payments-service.md)\n\n## Decision\n\n"
        "Handlers call Stripe's refund API directly from `src/payments/refund.ts`.\n"
    ),
    "0002-refunds-through-the-payments-service.md": (
        "# 2. Refunds go through the payments service\n\nDate: 2024-05-02\n\n## Status\n\n"
        "Accepted\n\nSupersedes [1. Issue refunds by calling Stripe directly]"
        "(0001-refunds-through-stripe-directly.md)\n\n## Decision\n\n"
        "Everything under src/payments/ calls the payments service, never Stripe itself.\n"
    ),
}
NOTE = (
    "---\nname: Cart totals are computed on the server\n"
    "description: Never trust a total the browser sends; recompute it in src/cart/total.ts.\n"
    "---\n\nThe checkout once charged a tampered total. `src/cart/total.ts` recomputes it.\n"
)
OWN_SESSION = "5f0c1d2e-own-session"
OWN_LOG_TOPIC = "the flamingo export pipeline"


@dataclass(frozen=True)
class Shop:
    """The project, Claude Code's folder for it, and the paths the tests look for."""

    repo: Path
    claude: Path
    memory_note: Path
    own_log: Path

    def rule(self, rel: str) -> str:
        """The absolute path of a rule file, as the store holds it."""
        return str(self.repo / rel)


def build_shop(root: Path) -> Shop:
    """Write the project and its Claude Code folder under ``root``."""
    from precedents.ingest.sources import encode_project_path

    repo = root / "shop"
    (repo / ".git").mkdir(parents=True)
    for rel, text in RULES.items():
        _write(repo / rel, text)
    for name, text in ADRS.items():
        _write(repo / "docs" / "adr" / name, text)
    _write(repo / "node_modules" / "left-pad" / "AGENTS.md", "# not the project's\n")
    folder = root / "claude" / "projects" / encode_project_path(str(repo))
    note = _write(folder / "memory" / "cart_totals_on_server.md", NOTE)
    log = _write(folder / f"{OWN_SESSION}.jsonl", _session_log(repo))
    return Shop(repo, root / "claude", note, log)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _session_log(repo: Path) -> str:
    common: dict[str, Any] = {"cwd": str(repo), "sessionId": OWN_SESSION, "entrypoint": "cli"}
    lines = [
        {
            **common,
            "type": "user",
            "timestamp": "2026-11-30T10:00:00Z",
            "message": {
                "role": "user",
                "content": f"let's plan {OWN_LOG_TOPIC}: flamingo exports go to S3 nightly",
            },
        },
        {
            **common,
            "type": "assistant",
            "timestamp": "2026-11-30T10:00:05Z",
            "message": {
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": "The flamingo export pipeline will write nightly files to S3.",
                    }
                ],
            },
        },
    ]
    return "".join(json.dumps(line) + "\n" for line in lines)
