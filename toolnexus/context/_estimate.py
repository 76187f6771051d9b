"""Token estimates: what a message or a text costs in a request, by characters (about four a
token), for the parts of a request the endpoint has not counted yet."""

from __future__ import annotations

from collections.abc import Sequence

from ..types import Message

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  # tokens a message costs beyond its text (role, separators)
PART_TOKENS = 800  # an image or document part, roughly


def message_tokens(message: Message) -> int:
    """About how many tokens a message costs in a request (characters/4)."""
    content = message.get("content")
    if type(content) is str and "tool_calls" not in message:  # the common case, fast
        return -(-len(content) // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD
    chars = 0
    if isinstance(content, str):
        chars = len(content)
    elif isinstance(content, list):
        parts: Sequence[object] = content  # as found: a transcript from outside may hold anything
        for part in parts:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str):
                chars += len(text)
            else:
                chars += PART_TOKENS * CHARS_PER_TOKEN
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                chars += len(str(fn.get("name") or "")) + len(str(fn.get("arguments") or ""))
    return -(-chars // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD


def text_tokens(text: str | None) -> int:
    return -(-len(text or "") // CHARS_PER_TOKEN)
