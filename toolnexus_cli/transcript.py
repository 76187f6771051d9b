"""A thread as Markdown, for /export and `threads export`."""

from __future__ import annotations

import json
from typing import Any

from toolnexus.marks import DROPPED_KEY, INTERRUPTED_KEY

_HEADINGS = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool result"}


def to_markdown(messages: list[dict[str, Any]]) -> str:
    parts = []
    for message in messages:
        role = message.get("role", "")
        content = message.get("content")
        body = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        if message.get(INTERRUPTED_KEY):
            body = f"{body}\n\n*(interrupted)*"
        if message.get(DROPPED_KEY):  # kept in the thread (undone, retried, failed), not sent
            body = f"{body or ''}\n\n*({message[DROPPED_KEY]}, not sent)*"
        for call in message.get("tool_calls") or []:
            fn = call.get("function", {})
            body = f"{body or ''}\n\n`{fn.get('name')}({fn.get('arguments')})`".strip()
        parts.append(f"## {_HEADINGS.get(role, role)}\n\n{body or ''}".rstrip())
    return "\n\n".join(parts) + "\n"
