"""The four kinds of record (SPEC §2), spelled once.

``Kind`` is a ``Literal`` so that mypy rejects a misspelled kind anywhere a
record, a source folder or a store row is compared or built.
"""

from __future__ import annotations

from typing import Final, Literal, TypeGuard

Kind = Literal["note", "rule", "adr", "conversation"]

KINDS: Final[tuple[Kind, ...]] = ("note", "rule", "adr", "conversation")
# What the selection gap is computed over: conversations are long, score high
# against almost anything, and would shrink the gap (SPEC §5).
DOCUMENT_KINDS: Final[frozenset[Kind]] = frozenset({"note", "rule", "adr"})


def is_kind(value: object) -> TypeGuard[Kind]:
    """Whether ``value`` is one of the four kinds (a row read back from the store)."""
    return value in KINDS


# Rules are shared by every project; they are stored under this project key.
SHARED_PROJECT = "*"
