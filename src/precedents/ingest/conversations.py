"""Claude Code transcripts (``~/.claude/projects/<encoded-cwd>/*.jsonl``) -> exchanges.

Pure logic: standard library and :mod:`precedents.text` (one-line text, dates)
only. Checked against real transcripts of Claude Code 1.0.98 to 2.1.293
(``shared/claude-code``).

An *exchange* is one real user prompt plus the assistant text that answers it. What
is a real prompt (SPEC §2): a ``type: "user"`` line whose ``message.content`` is a
string or holds text blocks, and which is none of these:

* a tool result (any ``tool_result`` block) - tool output, not the person;
* ``isMeta`` (expanded slash-command bodies, caveats, hook reminders),
  ``isCompactSummary`` (the summary written at compaction), ``isSidechain``
  (subagents: 1.0.x writes them into the main file, 2.x into ``subagents/``);
* ``origin.kind`` other than ``"human"`` (2.1.x: ``task-notification``, ``peer``);
* text starting with a tag Claude Code writes itself: ``<command-name>`` and friends
  (slash commands), ``<local-command-stdout>``, ``<bash-input>``/``<bash-stdout>``
  (``!`` shell mode), ``<task-notification>`` (before ``origin`` existed), or
  ``[Request interrupted by user...]``.

``<system-reminder>`` and ``<ide_...>`` segments are cut out of prompts: Claude Code
injects them, the person did not type them. ``attachment`` lines (including the
``hook_additional_context`` precedents itself injected) are never read for text.

The answer is the assistant's ``text`` blocks from the prompt up to the next real
prompt, in order; a reply split over several lines (one content block per line, the
same ``message.id``) is thereby joined. Thinking blocks, tool_use input and
``model: "<synthetic>"`` notices (API errors, interrupts) are left out. A slash
command closes the open exchange: what the assistant writes next answers the
command, not the earlier prompt.

Incremental indexing: the caller passes every line of the file (the whole log is
re-parsed; parsing is cheap next to embedding, and a title or an answer can change
when lines are appended). A last line still being written is malformed JSON and is
counted in ``bad_lines`` until it is whole. Split bytes on newlines
(``bytes.splitlines``); ``str.splitlines`` also splits at U+2028 and other
characters that JSON strings may hold raw, which would break good lines.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from precedents.text import ISO_DATE, one_line

__all__ = ["TITLE_CHARS", "Conversation", "Exchange", "MaskTogether", "parse_conversation"]

# Masks a conversation's stored texts as one, given the texts it only reads
# (tool input and output): see precedents.secrets.mask.mask_together.
MaskTogether = Callable[[Sequence[str], Sequence[str]], list[str]]

TITLE_CHARS = 80

# Text Claude Code writes into user lines itself. A prompt starting with one of these
# was not typed by the person (or, for <command-args>, is a slash command invocation).
_COMMAND_TAGS = ("<command-name>", "<command-message>", "<command-args>")
_NOT_TYPED_PREFIXES = (
    *_COMMAND_TAGS,
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
    "<user-prompt-submit-hook>",
    "[Request interrupted by user",
)
# Shorter strings (roles, block types, ids' ends) cannot hold a secret worth echoing.
_MIN_CONTEXT = 5
_INJECTED = re.compile(r"<(system-reminder|ide_[a-z_]+)>.*?</\1>", re.DOTALL)


@dataclass(frozen=True)
class Exchange:
    """One real user prompt and the assistant text that answered it (both masked)."""

    prompt: str
    answer: str
    timestamp: str  # ISO timestamp of the prompt line, "" if none


@dataclass(frozen=True)
class Conversation:
    """One transcript file, parsed. Every text in it has been through ``mask``.

    ``session_id`` and ``cwd`` are identifiers, not conversation content, and are
    returned as written: the indexer maps ``cwd`` to a project, which a masking
    false positive would break, and both are already visible in the file's path.
    """

    session_id: str  # the first ``sessionId`` seen, "" if none
    title: str  # custom-title > ai-title > summary (last of each) > first prompt[:80]
    date: str  # YYYY-MM-DD (UTC, as written) of the first exchange, else first timestamp
    cwd: str  # the first ``cwd`` seen, "" if none
    interactive: bool  # False once any line says sdk (entrypoint sdk-*, promptSource sdk)
    exchanges: tuple[Exchange, ...]
    lines: int  # every line passed in, blank ones included
    bad_lines: int  # malformed lines skipped: undecodable, not JSON, not an object


@dataclass
class _Open:
    """The exchange being assembled: its prompt and the answer blocks so far."""

    prompt: str
    timestamp: str
    blocks: list[str] = field(default_factory=list)
    seen: set[tuple[str, str]] = field(default_factory=set)


def _decode(raw: str | bytes) -> dict[str, Any] | None:
    """One JSONL line as a dict; None when blank or malformed (the caller tells which)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        value = json.loads(text.removeprefix("\ufeff"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _is_blank(raw: str | bytes) -> bool:
    return not raw.strip()


def _prompt_text(line: dict[str, Any]) -> str | None:
    """The typed text of a user line, or None when the line is not a real prompt.

    Returns "" for a slash command line (it is not a prompt, but it ends the open
    exchange), None for every other non-prompt.
    """
    if line.get("isMeta") or line.get("isCompactSummary") or line.get("isSidechain"):
        return None
    origin = line.get("origin")
    if isinstance(origin, dict) and origin.get("kind", "human") != "human":
        return None
    message = line.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        texts = [content]
    elif isinstance(content, list):
        texts = []
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                return None
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
    else:
        return None
    text = "\n\n".join(t for t in (_INJECTED.sub("", t).strip() for t in texts) if t)
    if text.startswith(_COMMAND_TAGS):
        return ""
    if not text or text.startswith(_NOT_TYPED_PREFIXES):
        return None
    return text


def _answer_blocks(line: dict[str, Any]) -> list[tuple[str, str]]:
    """(message id, text) of each text block of an assistant line worth indexing."""
    if line.get("isSidechain") or line.get("isApiErrorMessage"):
        return []
    message = line.get("message")
    if not isinstance(message, dict) or message.get("model") == "<synthetic>":
        return []
    message_id = str(message.get("id") or line.get("uuid") or "")
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    return [
        (message_id, block["text"].strip())
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and block["text"].strip()
    ]


def _title_of(line: dict[str, Any]) -> tuple[int, str] | None:
    """(rank, title) of a title line; lower rank wins (SPEC order)."""
    kind = line.get("type")
    if kind == "custom-title":
        value = line.get("customTitle") or line.get("title")
        rank = 0
    elif kind == "ai-title":
        value = line.get("aiTitle") or line.get("title")
        rank = 1
    elif kind == "summary":
        value = line.get("summary")
        rank = 2
    else:
        return None
    return (rank, value) if isinstance(value, str) and value.strip() else None


def parse_conversation(
    lines: Iterable[str | bytes],
    mask: Callable[[str], str],
    *,
    together: MaskTogether | None = None,
) -> Conversation:
    """Parse every line of one transcript into a :class:`Conversation`. Never raises.

    ``mask`` is applied to each prompt, answer and title before anything is cut, so a
    secret is never split in two unmasked halves. With ``together``
    (:func:`precedents.secrets.mask.mask_together`), the whole conversation is masked at
    once instead: a secret found in any prompt, answer or title, or in any tool
    input or output (read for that, never stored), is masked wherever it recurs,
    as when the assistant repeats a pasted password. Malformed lines (undecodable, not
    JSON, not an object) are skipped and counted; blank lines are skipped silently.
    ``interactive`` is False as soon as any line has an ``entrypoint`` starting with
    ``sdk`` or ``promptSource: "sdk"`` (``claude -p``, the SDK); otherwise True,
    which covers ``entrypoint: "cli"`` and older files with no entrypoint at all.
    """
    reader = _Reader(mask, together)
    for raw in lines:
        reader.feed(raw)
    return reader.finish()


@dataclass
class _Reader:
    """One transcript read line by line: the open exchange, titles and session facts.

    A reader object rather than one long loop: each kind of line has its own
    small method, and the state they share is named here.
    """

    mask: Callable[[str], str]
    together: MaskTogether | None = None
    exchanges: list[Exchange] = field(default_factory=list)
    # Texts read only to find secrets in (tool input and output, commands).
    context: list[str] = field(default_factory=list)
    current: _Open | None = None
    titles: dict[int, str] = field(default_factory=dict)  # rank -> last title of that kind
    session_id: str = ""
    cwd: str = ""
    first_timestamp: str = ""
    interactive: bool = True
    seen_uuids: set[str] = field(default_factory=set)
    count: int = 0
    bad: int = 0

    def feed(self, raw: str | bytes) -> None:
        """Read one line of the file, in order."""
        self.count += 1
        line = _decode(raw)
        if line is None:
            if not _is_blank(raw):
                self.bad += 1
            return
        if self._is_repeat(line):
            return
        timestamp = self._note_session(line)
        ranked = _title_of(line)
        if ranked is not None:
            self.titles[ranked[0]] = ranked[1]
            return
        kind = line.get("type")
        if kind == "user":
            self._on_user(line, timestamp)
        elif kind == "assistant":
            if self.together is not None:
                self._read_only(_tool_inputs(line))
            if self.current is not None:
                self._on_assistant(line, self.current)

    def _is_repeat(self, line: dict[str, Any]) -> bool:
        """A line written twice (same uuid) must not double an answer."""
        uuid = line.get("uuid")
        if not isinstance(uuid, str):
            return False
        if uuid in self.seen_uuids:
            return True
        self.seen_uuids.add(uuid)
        return False

    def _note_session(self, line: dict[str, Any]) -> str:
        """Session facts any line may carry (sdk or not, id, cwd); returns its timestamp.

        Kept from the first line that has them; one sdk line makes the whole file
        automated, since such a session is never the person's own conversation.
        """
        entrypoint = line.get("entrypoint")
        if (isinstance(entrypoint, str) and entrypoint.startswith("sdk")) or line.get(
            "promptSource"
        ) == "sdk":
            self.interactive = False
        self.session_id = self.session_id or _str(line.get("sessionId") or line.get("session_id"))
        self.cwd = self.cwd or _str(line.get("cwd"))
        timestamp = _str(line.get("timestamp"))
        self.first_timestamp = self.first_timestamp or timestamp
        return timestamp

    def _on_user(self, line: dict[str, Any], timestamp: str) -> None:
        """A real prompt opens a new exchange; a slash command only closes the open one."""
        prompt = _prompt_text(line)
        if prompt is not None:
            self.close()
            if prompt:
                self.current = _Open(prompt, timestamp)
        if not prompt and self.together is not None:  # tool output, a slash command...
            self._read_only(_strings(line.get("message")))

    def _read_only(self, texts: Iterable[str]) -> None:
        """Keep a line's texts to find secrets in, as one text: one scan per line,
        not one per string (a tool result holds many), and one cache entry per line."""
        joined = "\n".join(t for t in texts if len(t) >= _MIN_CONTEXT)
        if joined:
            self.context.append(joined)

    @staticmethod
    def _on_assistant(line: dict[str, Any], current: _Open) -> None:
        """Answer blocks join the open exchange, each block once."""
        for key in _answer_blocks(line):
            if key not in current.seen:  # the same block re-written in a later line
                current.seen.add(key)
                current.blocks.append(key[1])

    def close(self) -> None:
        """End the open exchange (masked by :meth:`finish`, once every text is known)."""
        if self.current is not None:
            current = self.current
            answer = "\n\n".join(current.blocks)
            self.exchanges.append(Exchange(current.prompt, answer, current.timestamp))
        self.current = None

    def _masked(self) -> None:
        """Mask every prompt, answer and title: one by one, or all together."""
        title = self.titles[min(self.titles)] if self.titles else ""
        texts = [title, *(t for e in self.exchanges for t in (e.prompt, e.answer))]
        if self.together is not None:
            masked = self.together(texts, self.context)
        else:
            masked = [self.mask(t) if t else t for t in texts]
        if title:
            self.titles = {0: masked[0]}
        self.exchanges = [
            Exchange(masked[1 + 2 * i], masked[2 + 2 * i], e.timestamp)
            for i, e in enumerate(self.exchanges)
        ]

    def finish(self) -> Conversation:
        """Close the last exchange, mask everything and name the conversation."""
        self.close()
        self._masked()
        return Conversation(
            session_id=self.session_id,
            title=self._title(),
            date=self._date(),
            cwd=self.cwd,
            interactive=self.interactive,
            exchanges=tuple(self.exchanges),
            lines=self.count,
            bad_lines=self.bad,
        )

    def _title(self) -> str:
        """The best title line (SPEC order), else the first prompt cut to TITLE_CHARS."""
        if self.titles:
            return one_line(self.titles[min(self.titles)])  # masked already
        if self.exchanges:
            # The prompt is already masked; cut after masking so no half secret survives.
            return one_line(self.exchanges[0].prompt)[:TITLE_CHARS].rstrip()
        return ""

    def _date(self) -> str:
        """The day of the first exchange, else of the first line with a timestamp."""
        first = self.exchanges[0].timestamp if self.exchanges else ""
        stamp = first or self.first_timestamp
        return stamp[:10] if ISO_DATE.match(stamp) else ""


def _strings(value: object) -> Iterator[str]:
    """Every string inside a JSON value (a tool's input, a tool result's content)."""
    if isinstance(value, str):
        if value.strip():
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _tool_inputs(line: dict[str, Any]) -> Iterator[str]:
    """The strings of an assistant line's tool calls (commands, file contents...)."""
    message = line.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                yield from _strings(block.get("input"))


def _str(value: object) -> str:
    """``value`` when it is a string, else "" (transcripts are not always well formed)."""
    return value if isinstance(value, str) else ""
