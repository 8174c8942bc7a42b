"""What one indexing pass did: the report `reindex` prints and `--json` returns."""

from __future__ import annotations

from dataclasses import dataclass, field

from precedents.ingest.sources import Problem


@dataclass
class IndexReport:
    """What one indexing pass did."""

    files_seen: int = 0
    files_indexed: int = 0
    files_unchanged: int = 0
    files_deleted: int = 0
    chunks_embedded: int = 0
    # Of files_indexed, those read but holding nothing to search: automated
    # sessions (`claude -p` runs) and empty files; their file rows are kept so
    # they count as unchanged next time.
    skipped_sessions: int = 0
    files_empty: int = 0
    bad_lines: int = 0
    # Decision commits embedded as records this pass (ingest/commit_index.py).
    commits_indexed: int = 0
    seconds: float = 0.0
    model_seconds: float = 0.0
    problems: list[Problem] = field(default_factory=list)

    @property
    def chunks_per_second(self) -> float:
        """Indexing throughput of this pass, the model's load time left out."""
        busy = self.seconds - self.model_seconds
        return self.chunks_embedded / busy if busy > 0 else 0.0

    def to_json(self) -> dict[str, object]:
        """The ``reindex --json`` shape."""
        return {
            "files_seen": self.files_seen,
            "files_indexed": self.files_indexed,
            "files_unchanged": self.files_unchanged,
            "files_deleted": self.files_deleted,
            "chunks_embedded": self.chunks_embedded,
            "skipped_sessions": self.skipped_sessions,
            "files_empty": self.files_empty,
            "bad_lines": self.bad_lines,
            "commits_indexed": self.commits_indexed,
            "seconds": round(self.seconds, 3),
            "model_load_seconds": round(self.model_seconds, 3),
            "chunks_per_second": round(self.chunks_per_second, 1),
            "problems": [{"path": p.path, "reason": p.reason} for p in self.problems],
        }
