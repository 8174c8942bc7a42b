"""Claude Code transcripts -> exchanges -> chunks, on real transcripts and edge cases."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from precedents.ingest.chunking import (
    CHUNK_CHARS,
    MAX_CONVERSATION_CHUNKS,
    Conversation,
    Exchange,
    conversation_chunks,
    parse_conversation,
)

SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "claude-code"
KEY = "AKIAIOSFODNN7EXAMPLE"
HOOK_MARKERS = ("MARKER-ZEBRA-4711", "MARCA-ASSUNTO-7f3", "hook additional context")


def mask(text: str) -> str:
    """Stand-in for secrets.mask_secrets: masks the planted AWS example key only."""
    return text.replace(KEY, "[MASKED]")


def sample(name: str) -> Conversation:
    path = SAMPLES / name
    if not path.is_file():
        pytest.skip(f"real transcript {path} not found (the shared/ folder next to the repo)")
    return parse_conversation(path.read_bytes().splitlines(), mask)


def every_text(conv: Conversation) -> str:
    parts = [conv.title, *(f"{e.prompt}\n{e.answer}" for e in conv.exchanges)]
    return "\n".join(parts + conversation_chunks(conv))


def all_samples() -> list[Path]:
    if not SAMPLES.is_dir():
        pytest.skip(f"real transcripts not found at {SAMPLES}")
    return sorted(SAMPLES.glob("*.jsonl"))


# ------------------------------------------------------------- real transcripts


def test_interactive_2_1_197_has_two_exchanges_and_masks_the_key() -> None:
    conv = sample("claude-code_v2.1.197_cli_interactive.jsonl")
    assert conv.interactive
    assert [e.prompt for e in conv.exchanges] == [
        "how do I stop git tracking my .env file without deleting it?",
        "thanks. and the key I pasted earlier was [MASKED], rotate it please",
    ]
    assert [e.answer for e in conv.exchanges] == ["ok", "ok"]
    assert [e.timestamp for e in conv.exchanges] == [
        "2026-11-30T06:38:50.424Z",
        "2026-11-30T06:39:01.818Z",
    ]
    assert conv.session_id == "c60a7677-403b-4461-857c-31fbc877b2e1"
    assert conv.cwd == "/home/dev/webapp"
    assert conv.date == "2026-11-30"
    # No title line in the file: the first prompt (shorter than 80 characters).
    assert conv.title == "how do I stop git tracking my .env file without deleting it?"
    assert (conv.lines, conv.bad_lines) == (15, 0)
    assert KEY not in every_text(conv)
    assert conversation_chunks(conv) == [
        "how do I stop git tracking my .env file without deleting it?\n\nok",
        "thanks. and the key I pasted earlier was [MASKED], rotate it please\n\nok",
    ]


def test_interactive_2_1_197_with_the_real_masking() -> None:
    secrets = pytest.importorskip("precedents.secrets.mask")
    real_mask: Callable[[str], str] = secrets.mask_secrets
    path = SAMPLES / "claude-code_v2.1.197_cli_interactive.jsonl"
    if not path.is_file():
        pytest.skip(f"real transcript {path} not found")
    conv = parse_conversation(path.read_bytes().splitlines(), real_mask)
    assert len(conv.exchanges) == 2
    assert KEY not in every_text(conv)
    assert conv.exchanges[0].prompt.startswith("how do I stop git tracking")


@pytest.mark.parametrize(
    "name",
    [
        "claude-code_v2.1.197_sdkcli_hook-context.jsonl",
        "rainforest-mind_v2.1.293_sdkcli_prompt-submit.jsonl",
        "rainforest-mind_v2.1.293_sdkcli_agente-pai.jsonl",
    ],
)
def test_sdk_cli_sessions_are_not_interactive(name: str) -> None:
    assert not sample(name).interactive


def test_sdk_session_still_parses() -> None:
    # Parsing does not depend on the entrypoint; the indexer decides to skip it.
    conv = sample("claude-code_v2.1.197_sdkcli_hook-context.jsonl")
    assert [(e.prompt, e.answer) for e in conv.exchanges] == [
        ("why do we send payments through a queue now?", "ok")
    ]
    assert conv.cwd == "/home/dev/payments-service"


def test_injected_hook_context_never_appears_anywhere() -> None:
    for path in all_samples():
        conv = parse_conversation(path.read_bytes().splitlines(), mask)
        text = every_text(conv)
        for marker in HOOK_MARKERS:
            assert marker not in text, (path.name, marker)
        assert "<system-reminder>" not in text, path.name


def test_no_real_sample_has_malformed_lines() -> None:
    for path in all_samples():
        conv = parse_conversation(path.read_bytes().splitlines(), mask)
        assert conv.bad_lines == 0, path.name
        assert conv.lines == len(path.read_bytes().splitlines()), path.name


def test_spotter_2_1_39_without_entrypoint_is_interactive() -> None:
    conv = sample("spotter_v2.1.39_main_4d5611e5_excerpt.jsonl")
    assert conv.interactive
    assert [e.prompt for e in conv.exchanges] == [
        "Work on bead spotter-dov. Run bd show spotter-dov to see the issue details and bd"
        " ready to find available subtasks. Start with the first ready task.",
        "continue",
    ]
    # The compaction summary and the task notification are not prompts.
    assert all("being continued" not in e.prompt for e in conv.exchanges)
    assert all("task-notification" not in e.prompt for e in conv.exchanges)
    # The excerpt's assistant turns are thinking + tool_use (+ a blank text block).
    assert [e.answer for e in conv.exchanges] == ["", ""]
    text = every_text(conv)
    assert "Let me start by checking the issue details" not in text  # thinking
    assert "Ready work" not in text  # a tool result
    assert '"command"' not in text  # tool_use input
    assert conv.title == conv.exchanges[0].prompt[:80]
    assert len(conv.title) == 80
    assert conv.date == "2026-02-12"


def test_subagent_transcripts_have_no_exchanges() -> None:
    for name in (
        "spotter_v2.1.39_subagent_agent-a2898e3_excerpt.jsonl",
        "spotter_v2.1.39_subagent_agent-acompact-e1f845_full.jsonl",
    ):
        conv = sample(name)
        assert conv.exchanges == (), name
        assert conversation_chunks(conv) == []


def test_ccviewer_slash_commands_and_sidechains_are_not_prompts() -> None:
    for name in (
        "ccviewer_v1.0.98_fe5e1c67_excerpt.jsonl",
        "ccviewer_v1.0.108_5c0375b4_excerpt.jsonl",
    ):
        conv = sample(name)
        assert conv.interactive, name
        # The only main-chain user texts are /orchestrator invocations, their isMeta
        # expansion and tool results; the rest is the Task subagents' sidechain.
        assert conv.exchanges == (), name
        assert "<command-name>" not in every_text(conv)


def test_legacy_summary_line_is_the_title() -> None:
    conv = sample("ccviewer_v1.0.98_fe5e1c67_excerpt.jsonl")
    assert conv.title == "Empty Repo Setup: CLAUDE.md Foundation Created"
    assert conv.session_id == "fe5e1c67-53e7-4862-81ae-d0e013e3270b"
    assert conv.date == "2025-09-03"  # no exchange: the first timestamp


def test_no_title_and_no_prompt_gives_empty_title() -> None:
    assert sample("ccviewer_v1.0.108_5c0375b4_excerpt.jsonl").title == ""


# ------------------------------------------------------------- synthetic lines


def user(text: Any, **extra: Any) -> str:
    line = {
        "type": "user",
        "message": {"role": "user", "content": text},
        "timestamp": extra.pop("timestamp", "2026-01-02T03:04:05.000Z"),
        "sessionId": "s1",
        "cwd": "/home/dev/repo",
        "entrypoint": "cli",
        **extra,
    }
    return json.dumps(line)


def assistant(*blocks: dict[str, Any], msg_id: str = "m1", **extra: Any) -> str:
    message = {"id": msg_id, "role": "assistant", "model": "claude", "content": list(blocks)}
    message.update(extra.pop("message", {}))
    return json.dumps({"type": "assistant", "message": message, "entrypoint": "cli", **extra})


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def parse(*lines: str | bytes, masking: Callable[[str], str] = mask) -> Conversation:
    return parse_conversation(lines, masking)


def test_reply_split_over_lines_is_joined_and_only_text_kept() -> None:
    conv = parse(
        user("Why a queue?"),
        assistant({"type": "thinking", "thinking": "SECRET THOUGHT", "signature": "x"}),
        assistant(text("Because payments")),
        assistant({"type": "tool_use", "id": "t1", "name": "Bash", "input": {"cmd": "TOOLCMD"}}),
        user([{"type": "tool_result", "tool_use_id": "t1", "content": "TOOLOUT"}]),
        assistant(text("must not be lost."), msg_id="m2"),
    )
    assert conv.exchanges == (
        Exchange(
            "Why a queue?", "Because payments\n\nmust not be lost.", "2026-01-02T03:04:05.000Z"
        ),
    )
    assert not any(s in every_text(conv) for s in ("SECRET THOUGHT", "TOOLCMD", "TOOLOUT"))


def test_text_blocks_of_a_user_message_are_a_prompt() -> None:
    conv = parse(
        user([text("first part"), {"type": "image", "source": {}}, text("second part")]),
        assistant(text("answer")),
    )
    assert conv.exchanges[0].prompt == "first part\n\nsecond part"


@pytest.mark.parametrize(
    "line",
    [
        user("expanded command body", isMeta=True),
        user("This session is being continued...", isCompactSummary=True),
        user("subagent task", isSidechain=True),
        user("done", origin={"kind": "task-notification"}),
        user("from another agent", origin={"kind": "peer"}),
        user("<task-notification>\n<task-id>b1</task-id>\n</task-notification>\nRead it"),
        user("<local-command-stdout>Total cost: $0.01</local-command-stdout>"),
        user("<bash-input>ls</bash-input>"),
        user("<bash-stdout>a b</bash-stdout><bash-stderr></bash-stderr>"),
        user([text("[Request interrupted by user for tool use]")]),
        user("<system-reminder>only injected text</system-reminder>"),
        user([{"type": "image", "source": {}}]),
        user(""),
        user(None),
    ],
)
def test_not_a_prompt(line: str) -> None:
    conv = parse(user("real prompt"), assistant(text("real answer")), line)
    assert [e.prompt for e in conv.exchanges] == ["real prompt"]


def test_non_prompt_lines_do_not_end_the_exchange() -> None:
    conv = parse(
        user("real prompt"),
        assistant(text("part one")),
        user("summary", isCompactSummary=True),
        user("done", origin={"kind": "task-notification"}),
        assistant(text("part two"), msg_id="m2"),
    )
    assert [(e.prompt, e.answer) for e in conv.exchanges] == [
        ("real prompt", "part one\n\npart two")
    ]


def test_slash_command_ends_the_exchange() -> None:
    conv = parse(
        user("real prompt"),
        assistant(text("its answer")),
        user("<command-message>review</command-message>\n<command-name>/review</command-name>"),
        user([text("You are a reviewer...")], isMeta=True),
        assistant(text("answer to the command"), msg_id="m2"),
    )
    assert [(e.prompt, e.answer) for e in conv.exchanges] == [("real prompt", "its answer")]


def test_system_reminders_and_ide_context_are_cut_from_prompts() -> None:
    conv = parse(
        user(
            [
                text("<ide_opened_file>The user opened /x/secret.py</ide_opened_file>"),
                text("fix this<system-reminder>\nhook context MARK\n</system-reminder> please"),
            ]
        ),
    )
    assert conv.exchanges[0].prompt == "fix this please"


def test_attachments_and_synthetic_replies_are_not_answers() -> None:
    hook = {
        "type": "attachment",
        "attachment": {"type": "hook_additional_context", "content": ["MARKER-ZEBRA-4711"]},
        "entrypoint": "cli",
    }
    conv = parse(
        user("prompt"),
        json.dumps(hook),
        assistant(text("API Error: 529"), message={"model": "<synthetic>"}),
        assistant(text("overloaded"), isApiErrorMessage=True, msg_id="m3"),
        assistant(text("real"), msg_id="m2"),
    )
    assert conv.exchanges[0].answer == "real"


def test_assistant_text_before_any_prompt_and_sidechain_text_are_dropped() -> None:
    conv = parse(
        assistant(text("orphan")),
        user("prompt"),
        assistant(text("from a subagent"), isSidechain=True, msg_id="m2"),
        assistant(text("main"), msg_id="m3"),
    )
    assert [(e.prompt, e.answer) for e in conv.exchanges] == [("prompt", "main")]


def test_duplicate_lines_do_not_double_the_answer() -> None:
    reply = assistant(text("once"), uuid="u2")
    conv = parse(user("prompt", uuid="u1"), reply, reply, assistant(text("once"), uuid="u3"))
    assert conv.exchanges[0].answer == "once"


def test_prompt_without_answer_is_kept() -> None:
    conv = parse(user("first"), user("second"), assistant(text("a")))
    assert [(e.prompt, e.answer) for e in conv.exchanges] == [("first", ""), ("second", "a")]
    assert conversation_chunks(conv) == ["first", "second\n\na"]


# ------------------------------------------------------------------ titles


def title_line(kind: str, value: str) -> str:
    field = {"custom-title": "customTitle", "ai-title": "aiTitle", "summary": "summary"}[kind]
    return json.dumps({"type": kind, field: value, "sessionId": "s1"})


def test_title_order_custom_then_ai_then_summary_last_of_each() -> None:
    lines = [
        title_line("custom-title", "custom 1"),
        title_line("custom-title", "custom 2"),
        title_line("ai-title", "ai"),
        title_line("summary", "sum"),
        user("prompt"),
    ]
    assert parse(*lines).title == "custom 2"
    assert parse(*lines[2:]).title == "ai"
    assert parse(*lines[3:]).title == "sum"
    assert parse(*lines[4:]).title == "prompt"
    # Order in the file does not matter, only the kind.
    assert parse(title_line("ai-title", "ai"), title_line("custom-title", "c")).title == "c"


def test_title_from_first_real_prompt_scans_the_whole_file() -> None:
    noise = [user("x", isMeta=True)] * 500
    long_prompt = "word " * 40
    conv = parse(*noise, user(long_prompt), user("later"))
    assert conv.title == ("word " * 16).strip()  # 80 characters, trailing space dropped
    assert len(parse(user("a" * 200)).title) == 80


def test_titles_are_masked_before_they_are_cut() -> None:
    # The key straddles character 80: cutting first would leave half a key unmasked.
    prompt = "x" * 70 + " " + KEY + " tail"
    conv = parse(user(prompt))
    assert conv.title == ("x" * 70 + " [MASKED]")[:80]
    assert "AKIA" not in conv.title
    assert parse(title_line("ai-title", f"rotate {KEY}\n now")).title == "rotate [MASKED] now"


def test_mask_applies_to_answers_too() -> None:
    conv = parse(user("p"), assistant(text(f"use {KEY}")))
    assert conv.exchanges[0].answer == "use [MASKED]"


# ------------------------------------------------------------- interactive


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"entrypoint": "cli"}, True),
        ({"entrypoint": "sdk-cli"}, False),
        ({"entrypoint": "sdk-ts"}, False),
        ({"entrypoint": "sdk-py"}, False),
        ({"entrypoint": None}, True),
        ({"entrypoint": None, "promptSource": "sdk"}, False),
        ({"entrypoint": None, "promptSource": "typed"}, True),
    ],
)
def test_interactive_rule(extra: dict[str, Any], expected: bool) -> None:
    line = json.loads(user("p"))
    line.update(extra)
    line = {k: v for k, v in line.items() if v is not None}
    assert parse(json.dumps(line)).interactive is expected


def test_any_sdk_line_makes_the_session_automated() -> None:
    sdk_line = json.dumps({"type": "attachment", "attachment": {}, "entrypoint": "sdk-cli"})
    assert not parse(user("p"), assistant(text("a")), sdk_line).interactive


# ------------------------------------------------------------- malformed input


def test_malformed_lines_are_skipped_and_counted() -> None:
    lines: list[str | bytes] = [
        user("first"),
        '{"type": "user", "message": {"content": "trunc',  # truncated JSON
        "[1, 2, 3]",  # not an object
        '"a string"',
        "42",
        "null",
        b'{"type": "user", "message": {"content": "\xff\xfe"}}',  # invalid UTF-8
        "not json at all",
        "",  # blank lines are not malformed
        "   ",
        b"\n",
        user("second").encode(),
        assistant(text("answer")),
    ]
    conv = parse_conversation(lines, mask)
    assert (conv.lines, conv.bad_lines) == (13, 7)
    assert [(e.prompt, e.answer) for e in conv.exchanges] == [("first", ""), ("second", "answer")]


def test_odd_but_valid_shapes_never_raise() -> None:
    conv = parse(
        json.dumps({"type": "user", "message": "not a dict"}),
        json.dumps({"type": "user", "message": {"content": [1, None, {"type": "text"}]}}),
        json.dumps({"type": "assistant", "message": {"content": "plain string reply"}}),
        json.dumps({"type": "ai-title", "aiTitle": 5}),
        json.dumps({"type": "user", "origin": "human", "message": {"content": "ok"}}),
        json.dumps({"timestamp": 12345, "cwd": ["x"], "sessionId": {}}),
        "[" * 100_000,  # deep nesting
    )
    assert [(e.prompt, e.answer) for e in conv.exchanges] == [("ok", "")]
    assert (conv.session_id, conv.cwd, conv.date, conv.title) == ("", "", "", "ok")
    assert conv.bad_lines == 1


def test_empty_input() -> None:
    conv = parse_conversation([], mask)
    assert conv == Conversation("", "", "", "", True, (), 0, 0)
    assert conversation_chunks(conv) == []


def test_bom_on_first_line() -> None:
    conv = parse_conversation([("\ufeff" + user("p")).encode()], mask)
    assert (conv.bad_lines, len(conv.exchanges)) == (0, 1)


def test_date_falls_back_to_the_first_timestamp() -> None:
    conv = parse(
        json.dumps({"type": "system", "timestamp": "2025-01-01T00:00:00Z"}),
        user("p", timestamp="2025-02-02T00:00:00Z"),
    )
    assert conv.date == "2025-02-02"
    only_meta = parse(json.dumps({"type": "system", "timestamp": "2025-01-01T00:00:00Z"}))
    assert only_meta.date == "2025-01-01"
    assert parse(json.dumps({"type": "system", "timestamp": "yesterday"})).date == ""


# ------------------------------------------------------------- chunks


def conversation(*exchanges: Exchange, title: str = "T") -> Conversation:
    return Conversation("s", title, "2026-01-01", "/x", True, exchanges, 0, 0)


def test_long_exchange_pieces_overlap_and_later_ones_carry_the_title() -> None:
    prompt = "".join(f"{i:04d}|" for i in range(200))  # 1,000 characters
    answer = "".join(f"a{i:03d}|" for i in range(200))
    whole = f"{prompt}\n\n{answer}"  # 2,002 characters
    chunks = conversation_chunks(conversation(Exchange(prompt, answer, "")))
    assert chunks == [
        whole[:700],
        "T\n" + whole[600:1300],
        "T\n" + whole[1200:1900],
        "T\n" + whole[1800:],
    ]
    assert all(len(c) <= CHUNK_CHARS + 2 for c in chunks)


def test_no_title_no_prefix() -> None:
    chunks = conversation_chunks(conversation(Exchange("p" * 800, "", ""), title=""))
    assert chunks == ["p" * 700, "p" * 200]


def test_at_most_200_chunks_keeping_the_newest_exchanges() -> None:
    # Each exchange is 1,300 characters: exactly two pieces.
    exchanges = [Exchange(f"prompt {i:03d} " + "x" * 1288, "", "") for i in range(150)]
    chunks = conversation_chunks(conversation(*exchanges))
    assert len(chunks) == MAX_CONVERSATION_CHUNKS
    assert chunks[0].startswith("prompt 050 ")
    assert chunks[-2].startswith("prompt 149 ")


def test_oldest_kept_exchange_keeps_its_leading_pieces() -> None:
    big = Exchange("big " + "y" * 60_000, "", "")  # 101 pieces
    small = [Exchange(f"small {i}", "", "") for i in range(150)]
    chunks = conversation_chunks(conversation(big, *small))
    assert len(chunks) == MAX_CONVERSATION_CHUNKS
    assert chunks[0].startswith("big ")
    assert chunks[49].startswith("T\n")
    assert chunks[50] == "small 0"


def test_raw_line_separator_inside_a_json_string_is_fine() -> None:
    # JSON.stringify leaves U+2028 raw; the line must still parse as one line.
    conv = parse(user("before\u2028after"))
    assert (conv.bad_lines, conv.exchanges[0].prompt) == (0, "before\u2028after")
