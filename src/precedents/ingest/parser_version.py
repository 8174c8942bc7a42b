"""The record parser's version, and the kinds each version's change touched: a store
read by an older parser has those kinds read again. Split from
:mod:`precedents.ingest.indexer` (which re-exports it)."""

from __future__ import annotations

from precedents.kinds import KINDS, Kind

# Bump when parsing or chunking changes what is stored for an unchanged file: the
# next full pass (reindex, the watcher's start) then re-reads every file.
# 2: Cursor-style front matter (`globs: **/*.ts`) read as Cursor reads it.
# 3: documents not written in English also get multilingual vectors (store/multilingual.py).
# 4: every record gets its file scope (rules/scope.py): a rule's, the files a note names.
# 5: secrets masked by context (passphrases after "password is", connection strings,
#    command lines) and, in conversations, wherever a value found once recurs; files
#    whose path carries a secret withheld (issue #20). What older versions stored
#    may hold those secrets in clear, so every kind is read again.
# 6: a team note (ingest/team.py) is stored with its origin and author, dated by `created`.
# 7: a conversation's decision passage (ingest/decisions.py) is its description, its
#    deciding exchange its first chunk, `decided` says where it was said and its
#    scope the files and code that exchange names; notes and ADRs get the code they
#    name in their scope too (rules/symbols.py, issue #27).
# 8: a hostile repository (issue #28): front matter without aliases and within caps,
#    dates after tomorrow refused, rule globs over a cap attached to nothing, and a
#    note's or ADR's named paths kept only when specific (ingest/specific.py). A
#    conversation's scope keeps what it was until the chat changes: re-reading every
#    log would re-embed a heavy user's whole history for a refinement of the file hook.
CHUNKER_VERSION = "8"
# The kinds each version's change touched: a store read by an older parser re-reads
# only those (version 4 left conversations as they were: a heavy user's logs are
# most of the embedding work, and none of it would change).
_DOCUMENTS: frozenset[Kind] = frozenset({"note", "rule", "adr"})
CHANGED_KINDS: dict[int, frozenset[Kind]] = {
    2: frozenset(KINDS),
    3: frozenset(KINDS),
    4: _DOCUMENTS,
    5: frozenset(KINDS),
    6: frozenset({"note"}),
    7: frozenset({"conversation", "note", "adr"}),
    8: _DOCUMENTS,
}

# Meta keys of a re-read in progress: the parser version, and when it began (files
# written since were read by that version).
REREAD_VERSION = "rereading"
REREAD_SINCE = "rereading_since"


def reread_kinds(stamped: str | None) -> frozenset[Kind]:
    """The kinds a store stamped by parser version ``stamped`` must have read again
    (every kind when the stamp is missing, unreadable or newer than this parser)."""
    try:
        old = int(stamped or "")
    except ValueError:
        return frozenset(KINDS)
    if old > int(CHUNKER_VERSION):
        return frozenset(KINDS)
    changed = [
        CHANGED_KINDS.get(v, frozenset(KINDS)) for v in range(old + 1, int(CHUNKER_VERSION) + 1)
    ]
    return frozenset().union(*changed) if changed else frozenset(KINDS)
