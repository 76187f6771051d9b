"""A thread as Markdown, for /export and `threads export`."""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolnexus import ToolnexusError
from toolnexus.app_support import (
    DROPPED_KEY,
    INTERRUPTED_KEY,
    PINNED_KEY,
    SYSTEM_PROMPT,
    is_record,
)
from toolnexus.content import byte_size, image_size, media_of
from toolnexus.types import calls_of

from ..render.context_view import record_rule

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from toolnexus import Message

_HEADINGS = {"user": "User", "assistant": "Assistant", "system": "System", "tool": "Tool result"}


def to_markdown(
    messages: Sequence[Message],
    numbers: list[int] | None = None,
    linked: Mapping[str, str] | None = None,
) -> str:
    """The transcript; with `numbers` (each message's 1-based place in its thread) every
    heading carries it. A compaction record is a rule saying what it summarizes, then
    the summary. `linked`: the thread keeping the transcript of a call's subagent, by
    call id (a line under the call names it)."""
    parts = []
    for at, message in enumerate(messages):
        role = message.get("role", "")
        body = content_text(message.get("content"))
        dropped = message.get(DROPPED_KEY)
        if is_record(message):
            mark = f"\n\n*({dropped}, not sent)*" if dropped else ""
            parts.append(f"{record_rule(message)}\n\n{body}{mark}".rstrip())
            continue
        if role == "tool":
            body = fenced(body)
        if message.get(INTERRUPTED_KEY):
            body = f"{body}\n\n*(interrupted)*"
        if dropped == SYSTEM_PROMPT:
            body = f"{body}\n\n*(the system prompt from here on)*"
        elif dropped:  # kept in the thread (undone, retried, failed), not sent
            body = f"{body or ''}\n\n*({dropped}, not sent)*"
        for call in calls_of(message):
            fn = call.get("function", {})
            body = f"{body or ''}\n\n`{fn.get('name')}({fn.get('arguments')})`".strip()
            record = (linked or {}).get(call.get("id", ""))
            if record is not None:
                body += f"\n\n↳ subagent transcript: `toolnexus threads show {record}`"
        number = f"{numbers[at]} · " if numbers is not None else ""
        pinned = " · pinned" if message.get(PINNED_KEY) else ""
        failed = " · error" if role == "tool" and message.get("is_error") else ""
        heading = f"{number}{_HEADINGS.get(role, role)}{failed}{pinned}"
        parts.append(f"## {heading}\n\n{body or ''}".rstrip())
    return "\n\n".join(parts) + "\n"


def fenced(text: str) -> str:
    """`text` as a code block, so a tool's output reads as output (a `## Hello` in it is not
    a heading): the fence is longer than any run of backticks inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def content_text(content: Any) -> str:
    """A message's content as Markdown: a tool-call turn has none (its calls are shown
    instead), attachments are named, never dumped."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False)
    shown = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            shown.append(str(part.get("text", "")))
        else:
            shown.append(f"*[{describe_part(part)}]*")
    return "\n\n".join(shown)


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, readable by its owner only (a transcript may hold secrets)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write(text)


def describe_part(part: Any) -> str:
    """A content part other than text, named by what it is: "image 512x512 png, 48 KB",
    "pdf report.pdf, 12 KB", "audio wav, 3 KB", "image https://x.test/cat.png"."""
    try:
        media = media_of(part)
    except ToolnexusError:
        media = None
    if media is None:
        kind = part.get("type") if isinstance(part, dict) else None
        return str(kind or "part")
    subtype = media.mime.split("/")[-1]
    if media.base64 is None:
        return f"{subtype if media.kind == 'document' else media.kind} {media.url}"
    try:
        data = base64.b64decode(media.base64)
    except (binascii.Error, ValueError):
        return f"{media.kind} {subtype}, unreadable data"
    if media.kind == "image":
        dimensions = image_size(data)
        size = f" {dimensions[0]}x{dimensions[1]}" if dimensions else ""
        return f"image{size} {subtype}, {byte_size(len(data))}"
    if media.kind == "document":
        return f"{subtype} {media.filename}, {byte_size(len(data))}"
    return f"{media.kind} {subtype}, {byte_size(len(data))}"
