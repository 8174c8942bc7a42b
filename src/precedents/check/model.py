"""What a check reports: one finding per problem, and the run's report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

Level = Literal["error", "warning"]
ERROR: Final[Level] = "error"
WARNING: Final[Level] = "warning"

# The check that made a finding: `--json`'s "check" field, and docs/check.md's table.
SECRET: Final = "secret"
ADR: Final = "adr"
RULE: Final = "rule"
DUPLICATE: Final = "duplicate"
NOTE: Final = "note"  # a team note's author or date that is not shown as written
INPUT: Final = "input"  # a file that could not be checked (unreadable, binary, too large)


@dataclass(frozen=True)
class Finding:
    """One problem at ``path:line`` (1-based); ``path`` is relative to the repository's
    root while checks run, and as shown (relative to the working folder, any secret in
    a name masked) once the runner hands the report out."""

    path: str
    line: int
    level: Level
    check: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        """`--json`'s form of a finding."""
        return {
            "path": self.path,
            "line": self.line,
            "level": self.level,
            "check": self.check,
            "message": self.message,
        }


@dataclass
class Report:
    """Every finding of one run, and what it looked at."""

    root: str  # the repository checked ("" outside git)
    mode: str  # "staged", "files" or "all"
    checked: int = 0  # files whose content was checked
    skipped: int = 0  # files no check applies to (code, images...): their names only
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def errors(self) -> int:
        return sum(f.level == ERROR for f in self.findings)

    @property
    def warnings(self) -> int:
        return sum(f.level == WARNING for f in self.findings)

    def as_dict(self) -> dict[str, Any]:
        """The report as data (`api.check`): the CLI prints it, `--json` its findings."""
        return {
            "root": self.root,
            "mode": self.mode,
            "checked": self.checked,
            "skipped": self.skipped,
            "errors": self.errors,
            "warnings": self.warnings,
            "seconds": round(self.seconds, 3),
            "findings": [f.as_dict() for f in self.findings],
        }


def line_at(text: str, offset: int) -> int:
    """The 1-based line of ``text`` that ``offset`` falls on."""
    return text.count("\n", 0, offset) + 1
