"""Rule files in every agent's format: found without config, read by their own semantics.

Pure logic (docs/rules.md): where each format lives, what mode and globs its
front matter gives, how a scope matches a file, which files a note names.
The real indexer, daemon and hook are exercised in tests/test_file_hook.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from precedents.ingest.chunking import parse_note
from precedents.rules.formats import classify, discover, format_in_path
from precedents.rules.scope import Scope, named_scope, rule_scope

ROOT = "/r"


@pytest.mark.parametrize(
    ("path", "fmt", "base"),
    [
        ("/r/.cursor/rules/api.mdc", "cursor", ""),
        ("/r/.cursor/rules/sub/web.mdc", "cursor", ""),
        ("/r/packages/web/.cursor/rules/ui.mdc", "cursor", "packages/web"),
        ("/r/.cursorrules", "cursorrules", ""),
        ("/r/.claude/rules/testing.md", "claude", ""),
        ("/r/apps/api/.claude/rules/db.md", "claude", "apps/api"),
        ("/r/apps/api/CLAUDE.md", "claude-md", "apps/api"),
        ("/r/apps/api/CLAUDE.local.md", "claude-md", "apps/api"),
        ("/r/.github/copilot-instructions.md", "copilot", ""),
        ("/r/.github/instructions/ts.instructions.md", "copilot-instructions", ""),
        ("/r/.github/instructions/deep/py.instructions.md", "copilot-instructions", ""),
        ("/r/.windsurf/rules/style.md", "windsurf", ""),
        ("/r/.clinerules", "cline", ""),
        ("/r/.clinerules/01-style.md", "cline", ""),
        ("/r/AGENTS.md", "agents-md", ""),
        ("/r/services/billing/AGENTS.md", "agents-md", "services/billing"),
        ("/r/.github/workflows/AGENTS.md", "agents-md", ".github/workflows"),
        ("/r/.claude/AGENTS.md", "agents-md", ".claude"),
    ],
)
def test_every_format_is_recognised_by_its_place(path: str, fmt: str, base: str) -> None:
    found = classify(path, ROOT)
    assert found is not None and (found.format, found.base) == (fmt, base)


@pytest.mark.parametrize(
    "path",
    [
        "/r/CLAUDE.md",  # Claude Code loads the root's itself
        "/r/README.md",
        "/r/.github/instructions/notes.md",  # not *.instructions.md
        "/r/.github/copilot-instructions.txt",
        "/r/node_modules/pkg/AGENTS.md",  # a dependency's, not the project's
        "/r/.venv/lib/CLAUDE.md",
        "/r/.claude/CLAUDE.md",  # the project's memory, loaded by Claude Code like the root's
        "/r/.git/hooks/AGENTS.md",
        "/r/docs/.cursorrules",  # legacy file: the root's only
        "/other/AGENTS.md",
        "/r/.cursor/rules/image.png",
    ],
)
def test_what_is_not_a_rule_file(path: str) -> None:
    assert classify(path, ROOT) is None


def test_a_rule_folder_in_a_user_level_path_names_its_format() -> None:
    assert format_in_path("/home/u/.claude/rules/x.md") == "claude"
    assert format_in_path("/home/u/.cursor/rules/a/b.mdc") == "cursor"
    assert format_in_path("/home/u/rules/x.md") == ""


def write(root: Path, rel: str, text: str = "# rule\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_discovery_finds_every_format_and_prunes_dependencies(tmp_path: Path) -> None:
    for rel in (
        ".cursor/rules/a.mdc",
        ".cursorrules",
        ".claude/rules/b.md",
        ".github/copilot-instructions.md",
        ".github/instructions/c.instructions.md",
        ".windsurf/rules/d.md",
        ".clinerules/e.md",
        "AGENTS.md",
        "web/AGENTS.md",
        "web/CLAUDE.md",
        "web/.cursor/rules/f.mdc",
        "node_modules/x/AGENTS.md",
        "node_modules/x/.cursor/rules/g.mdc",
        ".git/AGENTS.md",
        ".github/workflows/AGENTS.md",
        ".claude/CLAUDE.md",
    ):
        write(tmp_path, rel)
    found = discover(tmp_path)
    folders = {(str(w.folder.relative_to(tmp_path)), w.recursive) for w in found.watches}
    assert {
        (".", False),
        (".github", False),
        (".github/instructions", True),
        (".clinerules", True),
        (".cursor/rules", True),
        (".claude/rules", True),
        (".windsurf/rules", True),
        ("web", False),
        ("web/.cursor/rules", True),
        (".github/workflows", False),
    } == folders
    assert not found.problems


def test_discovery_stops_at_its_limit_and_says_so(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"d{i}").mkdir()
    found = discover(tmp_path, max_folders=3)
    assert found.problems and "stopped looking" in found.problems[0][1]


def front(text: str) -> dict[str, object]:
    return parse_note(text, "x").front


def test_cursor_modes_by_its_own_rule() -> None:
    both = rule_scope(
        "cursor", "", front("---\ndescription: API\nglobs: src/**/*.ts, *.tsx\n---\n")
    )
    assert (both.mode, both.globs) == ("files+requested", ("src/**/*.ts", "*.tsx"))
    files = rule_scope("cursor", "", front("---\nglobs: **/*.py\nalwaysApply: false\n---\n"))
    assert files.mode == "files"
    always = rule_scope("cursor", "", front("---\nglobs: **/*.py\nalwaysApply: true\n---\n"))
    assert (always.mode, always.globs) == ("always", ())
    asked = rule_scope("cursor", "", front("---\ndescription: When writing migrations\n---\n"))
    assert asked.mode == "requested"
    assert rule_scope("cursor", "", front("# no front matter\n")).mode == "manual"
    listed = rule_scope("cursor", "", front('---\nglobs:\n  - "a/**"\n  - b/*.go\n---\n'))
    assert listed.globs == ("a/**", "b/*.go")


def test_claude_copilot_windsurf_cline_agents() -> None:
    claude = rule_scope("claude", "", front('---\npaths:\n  - "src/api/**/*.ts"\n---\n'))
    assert (claude.mode, claude.globs) == ("files", ("src/api/**/*.ts",))
    assert rule_scope("claude", "", front("---\npaths: src/**\n---\n")).globs == ("src/**",)
    assert rule_scope("claude", "", front("# always\n")).mode == "always"
    copilot = rule_scope(
        "copilot-instructions", "", front('---\napplyTo: "**/*.ts,**/*.tsx"\n---\n')
    )
    assert copilot.globs == ("**/*.ts", "**/*.tsx")
    assert rule_scope("copilot-instructions", "", {}).mode == "manual"
    assert rule_scope("copilot", "", {}).mode == "always"
    glob = rule_scope("windsurf", "", front("---\ntrigger: glob\nglobs: *.ts\n---\n"))
    assert (glob.mode, glob.globs) == ("files", ("*.ts",))
    assert rule_scope("windsurf", "", {"trigger": "always_on"}).mode == "always"
    assert rule_scope("windsurf", "", {"trigger": "model_decision"}).mode == "requested"
    assert rule_scope("windsurf", "", {"trigger": "manual"}).mode == "manual"
    odd = rule_scope("windsurf", "", {"trigger": "sometimes", "globs": "*.go"})
    assert odd.mode == "files" and odd.warnings
    assert rule_scope("cline", "", {"paths": ["lib/**"]}).mode == "files"
    assert rule_scope("cline", "", {}).mode == "always"
    nested = rule_scope("agents-md", "web", {})
    assert (nested.mode, nested.globs) == ("files", ("**",))
    assert rule_scope("agents-md", "", {}).mode == "always"
    assert rule_scope("cursorrules", "", {}).mode == "always"


def test_a_rule_outside_any_layout_is_read_by_its_keys() -> None:
    assert rule_scope("", "", {"description": "x", "globs": "**/*.py"}).format == "cursor"
    assert rule_scope("", "", {"applyTo": "**"}).format == "copilot-instructions"
    assert rule_scope("", "", {"paths": ["a/**"]}).format == "claude"
    plain = rule_scope("", "", {"name": "Money", "description": "cents"})
    assert (plain.format, plain.mode) == ("", "requested") and plain.ranked


def test_a_scope_value_of_the_wrong_type_is_reported_and_ignored() -> None:
    scope = rule_scope("claude", "", {"paths": {"a": 1}})
    assert scope.mode == "always" and scope.warnings


def test_scopes_match_relative_to_their_folder() -> None:
    cursor = rule_scope("cursor", "web", {"globs": "*.tsx"})
    assert cursor.applies_to("web/src/App.tsx")  # bare names: any depth in Cursor
    assert not cursor.applies_to("api/App.tsx")  # outside its folder
    claude = rule_scope("claude", "", {"paths": "*.md"})
    assert claude.applies_to("README.md") and not claude.applies_to("docs/a.md")  # root only
    agents = rule_scope("agents-md", "services/billing", {})
    assert agents.applies_to("services/billing/x/y.py")
    assert not agents.applies_to("services/billing-v2/y.py")
    negated = rule_scope("claude", "", {"paths": ["src/**/*.ts", "!src/**/*.test.ts"]})
    assert negated.applies_to("src/a.ts") and not negated.applies_to("src/a.test.ts")
    assert not rule_scope("cursor", "", {"description": "d"}).applies_to("a.py")  # requested


def test_a_file_named_in_a_message_may_be_in_scope() -> None:
    scope = rule_scope("claude", "", {"paths": ["src/api/**/*.ts"]})
    assert scope.could_name("users.ts") and not scope.could_name("users.py")


def test_scope_round_trips_and_bad_json_is_no_scope() -> None:
    scope = rule_scope("cursor", "web", {"globs": ["a/**", "!a/x"], "description": "d"})
    again = Scope.from_json(scope.to_json())
    assert again == scope and again.applies_to("web/a/b")
    assert Scope().to_json() == "" and Scope.from_json("") == Scope()
    assert Scope.from_json("{not json") == Scope() and Scope.from_json("[1]") == Scope()
    assert Scope.from_json('{"globs": [1, "x"], "mode": 3}').globs == ("x",)


def test_notes_and_adrs_name_files_folders_and_components() -> None:
    text = (
        "Refunds go through `src/payments/refund_service.py` only; never call Stripe from "
        "views.py. The whole services/billing/ folder is frozen. See https://example.com/a/b.py "
        "and docs at example.com. Node.js is fine."
    )
    scope = named_scope(text, component="payments")
    assert "src/payments/refund_service.py" in scope.mentions
    assert not any("example.com" in m for m in scope.mentions)
    assert scope.names("src/payments/refund_service.py")
    assert scope.names("app/views.py")  # a file name with its extension
    assert scope.names("services/billing/invoice.py")  # a folder named with its slash
    assert scope.names("lib/payments/other.py")  # the component is a folder of the file
    assert not scope.names("src/orders/refund.py")
    assert not scope.names("a/b.py")  # the URL's path is not a file of the project
    assert not named_scope("we use and/or on both client/server").names("src/app.py")


def test_an_absolute_path_in_a_note_names_the_file() -> None:
    scope = named_scope("edit /home/dev/shop/src/cart.py with care")
    assert scope.names("src/cart.py")


def test_session_start_caps_the_always_rules_and_counts_the_rest() -> None:
    from precedents.protocol import EVENT_SESSION, printed_bytes
    from precedents.recall.start import (
        RULES_CAP_BYTES,
        SESSION_CAP_BYTES,
        SESSION_MAX_RULES,
        session_text,
    )
    from precedents.store.rows import DocumentRecord

    rules = [
        DocumentRecord("rule", "/r", f"/r/.cursor/rules/r{i:02d}.mdc", f"Rule {i}", "always do x")
        for i in range(20)
    ]
    adrs = [
        DocumentRecord("adr", "/r", f"/r/docs/adr/{i:04d}.md", f"Decision {i}", adr_id=f"{i:04d}")
        for i in range(3)
    ]
    text, listed = session_text(rules, adrs)
    assert text is not None and 0 < listed <= SESSION_MAX_RULES
    lines = text.splitlines()
    footer = lines.index(
        f"… and {20 - listed} more rules that always apply (`precedents status` lists them)"
    )
    assert lines[0].startswith("Rules of this project that always apply")
    assert footer == listed + 1 and lines[footer + 1].startswith("Live ADRs of this repository")
    rules_part = "\n".join(lines[: footer + 1])
    assert printed_bytes(rules_part, EVENT_SESSION) <= RULES_CAP_BYTES
    assert printed_bytes(text, EVENT_SESSION) <= SESSION_CAP_BYTES
    few, n = session_text(rules[:2], [])
    assert n == 2 and few is not None and "more rules" not in few
    assert session_text([], []) == (None, 0)
