"""What a Claude Code hook input asks the daemon: one reading of the hook's stdin JSON
for its two doors, the command hook (:mod:`precedents.hook.core`) and the daemon's
HTTP listener (:mod:`.http`).

Standard library only, like :mod:`precedents.protocol`: the command hook imports it
on every message. It lives on the daemon's side so that nothing in
``query_daemon`` reads the hook's code (the hook is one of the daemon's clients).
"""

from __future__ import annotations

from precedents.protocol import (
    EVENT_FILE,
    EVENT_INSTRUCTIONS,
    EVENT_PROMPT,
    EVENT_SESSION,
    MIN_PROMPT_CHARS,
    clip_prompt,
)

TYPE_CHECKING = False  # typing itself costs the hook milliseconds; mypy knows this name
if TYPE_CHECKING:
    from precedents.protocol import FileRequest, HookRequest, InstructionsRequest

# A longer path in the stdin JSON is no path (PATH_MAX is 4,096 on Linux).
MAX_PATH_CHARS = 4096
# A tool name or a load reason longer than this is cut (Claude Code's are short words).
MAX_TOOL_CHARS = 64

# The hook event an answer is printed for, by the kind of request.
EVENTS_OUT = {"session": EVENT_SESSION, "file": EVENT_FILE, "prompt": EVENT_PROMPT}


def _short(value: object) -> str:
    """A string field of the stdin JSON that is an id or a path ("" otherwise)."""
    return value if isinstance(value, str) and len(value) <= MAX_PATH_CHARS else ""


def _tool_path(tool_input: object) -> str | None:
    """The file a file tool is about to touch (``file_path``; NotebookEdit's ``notebook_path``)."""
    if not isinstance(tool_input, dict):
        return None
    for key in ("file_path", "notebook_path", "path"):
        value = _short(tool_input.get(key))
        if value:
            return value
    return None


def request_for(
    data: dict[str, object], mode: str, cwd: str
) -> tuple[str, HookRequest | None, str]:
    """The daemon request for one hook input (the command hook's and the HTTP listener's):
    (kind: "prompt" | "file" | "session" | "instructions", the request or None, why
    there is none: "bad-input", "short" or "no-path"). The event on stdin beats the
    ``mode``."""
    event = data.get("hook_event_name")
    kind = {
        EVENT_SESSION: "session",
        EVENT_FILE: "file",
        EVENT_PROMPT: "prompt",
        EVENT_INSTRUCTIONS: "instructions",
    }.get(str(event), mode)
    session_id = _short(data.get("session_id"))
    if kind == "session":
        return kind, {"op": "session", "cwd": cwd, "session_id": session_id}, ""
    if kind == "file":
        path = _tool_path(data.get("tool_input"))
        if path is None:
            return kind, None, "no-path"
        # The tool, because a Read makes Claude Code load some rules itself (docs/rules.md).
        tool = _short(data.get("tool_name"))[:MAX_TOOL_CHARS]
        asked: FileRequest = {
            "op": "file",
            "cwd": cwd,
            "path": path,
            "session_id": session_id,
            "tool": tool,
            "transcript_path": _short(data.get("transcript_path")),
        }
        return kind, asked, ""
    if kind == "instructions":
        loaded = _short(data.get("file_path"))
        reason = _short(data.get("load_reason"))[:MAX_TOOL_CHARS]
        told: InstructionsRequest = {
            "op": "instructions",
            "cwd": cwd,
            "path": loaded,
            "reason": reason,
            "session_id": session_id,
        }
        return kind, (told if loaded else None), ("" if loaded else "no-path")
    prompt = data.get("prompt")
    if not isinstance(prompt, str):
        return kind, None, "bad-input"
    # Only the start of a long prompt is sent: the model reads no more (protocol).
    prompt = clip_prompt(prompt)
    if len(prompt.strip()) < MIN_PROMPT_CHARS:
        return kind, None, "short"
    request: HookRequest = {
        "op": "context",
        "prompt": prompt,
        "cwd": cwd,
        "session_id": session_id,
        "transcript_path": _short(data.get("transcript_path")),
    }
    return kind, request, ""
