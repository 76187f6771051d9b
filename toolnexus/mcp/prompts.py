"""Prompts: the messages a server's prompt gives, made into a prompt to send, and
completion of a prompt's arguments or a resource template's variables."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from .._visible import visible
from ..content import Attachment
from ..errors import ToolnexusError
from ._connection import dump
from .content import convert_content
from .server import McpServer

__all__ = [
    "complete",
    "get_prompt",
    "prompt_arguments",
]

COMPLETION_WAIT = 5.0  # seconds a completion may take before the list is shown without it
COMPLETIONS = 50


def prompt_arguments(server: McpServer, name: str) -> list[dict[str, Any]]:
    """The arguments the server's prompt `name` takes ({name, description?, required?})."""
    for entry in server.offer.prompts:
        if entry.get("name") == name:
            return [a for a in entry.get("arguments") or [] if isinstance(a, dict)]
    return []


async def get_prompt(
    server: McpServer, name: str, arguments: dict[str, str]
) -> tuple[str, list[Attachment]]:
    """The prompt's messages as one text (an assistant's part marked so) and the
    attachments among them; ToolnexusError (one line) when the server refuses."""
    session = server.session
    if session is None:
        raise ToolnexusError(f"the MCP server {server.name} {server.why_not_running()}")
    missing = [
        str(a.get("name"))
        for a in prompt_arguments(server, name)
        if a.get("required") and a.get("name") not in arguments
    ]
    if missing:
        raise ToolnexusError(f"{name} needs {', '.join(f'{m}=...' for m in missing)}")
    try:
        result = dump(await session.get_prompt(name, arguments))
    except Exception as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise ToolnexusError(visible(f"{server.name}: {name}: {why}")[:500]) from None
    texts: list[str] = []
    attachments: list[Attachment] = []
    for message in result.get("messages") or []:
        if not isinstance(message, dict):
            continue
        text, attached = convert_content({"content": [message.get("content")]})
        attachments += attached
        texts.append(text if message.get("role") != "assistant" else f"(assistant) {text}")
    return "\n\n".join(texts), attachments


async def complete(
    server: McpServer,
    ref: dict[str, str],
    argument: str,
    value: str,
    context: dict[str, str] | None = None,
) -> list[str]:
    """What the server suggests for `argument` starting `value` of a prompt
    (ref {"type": "ref/prompt", "name"}) or a resource template (ref {"type":
    "ref/resource", "uri"}); none when it offers no completion or is slow to answer."""
    session = server.session
    if session is None or "completions" not in server.offer.capabilities:
        return []
    types = server.sdk.types
    reference = (
        types.PromptReference(type="ref/prompt", name=ref["name"])
        if ref["type"] == "ref/prompt"
        else types.ResourceTemplateReference(type="ref/resource", uri=ref["uri"])
    )
    with contextlib.suppress(Exception):
        async with asyncio.timeout(COMPLETION_WAIT):
            result = dump(
                await session.complete(reference, {"name": argument, "value": value}, context)
            )
            values = (result.get("completion") or {}).get("values") or []
            return [v for v in values[:COMPLETIONS] if isinstance(v, str) and visible(v) == v]
    return []
