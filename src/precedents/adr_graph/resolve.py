"""References -> records: by file name, relative path, id, number or title.

A link to a file that does not exist is resolved by the number in its name
(files get renamed: gsp's ``ADR028-docker-tools.md`` is ``ADR028-container-tools.md``),
then by the number or title in its link text. Whatever matches nothing is
``missing``; whatever lies outside the folder is ``external``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping

from precedents.adr_graph import text as tx
from precedents.adr_graph.model import ParsedAdr, Ref, Target, label_for
from precedents.text import one_line

_TEXT_NUMBER_RE = re.compile(r"^\s*(?:adr)?[-_ #]*(\d{1,6})\b", re.I)
_EMPHASIS_RE = re.compile(r"[`*_]+")
# A link to a file has an extension; "/adr/23" (a documentation site's route) has none.
_FILE_SUFFIX_RE = re.compile(r"\.[A-Za-z0-9]{1,10}$")


def _norm_title(title: str) -> str:
    """A title as a link's text may name it: emphasis marks, spacing and case ignored."""
    return one_line(_EMPHASIS_RE.sub(" ", title)).lower()


class Resolver:
    """Indexes of one parsed folder, to resolve every :class:`Ref` the same way."""

    def __init__(self, parsed: Mapping[str, ParsedAdr]) -> None:
        self.parsed = parsed
        self.by_path: dict[str, str] = {}
        self.by_lower_path: dict[str, str] = {}
        self.by_number: dict[int, list[str]] = defaultdict(list)
        self.by_lower_id: dict[str, str] = {}
        self.by_stem: dict[str, list[str]] = defaultdict(list)
        self.by_title: dict[str, list[str]] = defaultdict(list)
        for rid, p in sorted(parsed.items(), key=lambda kv: kv[1].path):
            self.by_path[p.path] = rid
            self.by_lower_path[p.path.lower()] = rid
            if p.number is not None:
                self.by_number[p.number].append(rid)
            self.by_lower_id[rid.lower()] = rid
            self.by_stem[p.path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()].append(rid)
            self.by_title[_norm_title(p.title)].append(rid)

    def record(self, rid: str, display: str, by_number: bool = False) -> Target:
        """The target for record ``rid``, shown as ``display`` (a path as written)."""
        p = self.parsed[rid]
        return Target("record", display, rid, by_number, label_for(rid, p.number))

    def _by_number(self, number: int | None) -> str | None:
        """The first record (in path order) with this number."""
        ids = self.by_number.get(number) if number is not None else None
        return ids[0] if ids else None

    def _by_words(self, text: str) -> str | None:
        """A record named by a link's text or a bare token: number, id, slug, title."""
        text = text.strip()
        if not text:
            return None
        m = _TEXT_NUMBER_RE.match(text)
        if m:
            rid = self._by_number(int(m.group(1)))
            if rid:
                return rid
        low = text.lower()
        if low in self.by_lower_id:
            return self.by_lower_id[low]
        stem = low.removesuffix(".md")
        if self.by_stem.get(stem):
            return self.by_stem[stem][0]
        titled = self.by_title.get(_norm_title(text))
        if titled and len(titled) == 1:
            return titled[0]
        return None

    def resolve(self, ref: Ref) -> Target:
        """Where ``ref`` leads: a record of the folder, something external, or nothing."""
        if ref.kind in ("url", "outside"):
            return Target("external", ref.value, label="external")
        if ref.kind == "path":
            rid = self.by_path.get(ref.value) or self.by_lower_path.get(ref.value.lower())
            if rid:
                return self.record(rid, ref.value)
            number, digits = tx.href_number(ref.value)
            rid = self._by_number(number) or self._by_words(ref.text)
            if rid:
                if not _FILE_SUFFIX_RE.search(ref.value):
                    # A site route ("/adr/23"), not a file that was renamed: the
                    # record it names is the successor, shown by its own path.
                    return self.record(rid, self.parsed[rid].path)
                return self.record(rid, ref.value, by_number=True)
            name = ref.value.rsplit("/", 1)[-1]
            return Target("missing", ref.value, label=f"ADR-{digits}" if digits else name)
        rid = self._by_words(ref.value)
        if rid:
            return self.record(rid, self.parsed[rid].path)
        number = tx.number_of(ref.value)
        digits = re.sub(r"^\D*", "", ref.value) if number is not None else None
        return Target("missing", ref.value, label=f"ADR-{digits}" if digits else ref.value)
