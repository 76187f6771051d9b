"""Sampling: a server asks the client's model for a message (sampling/createMessage).
Here: the request as canonical messages and as text a person can judge, and the answer in
the protocol's shape; who approves and which model answers is the host's (requests.py)."""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
from types import SimpleNamespace
from typing import Any

from ..content import Attachment
from ..errors import ToolnexusError
from ..types import Message
from ..visible import visible
from .requests import Refused, ServerRequests

log = logging.getLogger("toolnexus.mcp")

SHOWN_PER_MESSAGE = 600  # characters of each message a person is shown


def sampling_prompt(params: dict[str, Any]) -> tuple[str | list[Any], list[Message]]:
    """The request as a run's prompt (the last message: its text and attachments) and
    history (the messages before it, the server's system prompt first); Refused if
    there is nothing to answer."""
    messages = [m for m in params.get("messages") or [] if isinstance(m, dict)]
    if not messages or messages[-1].get("role") != "user":
        raise Refused("the last message must be the user's")
    history: list[Message] = []
    system = params.get("systemPrompt")
    if isinstance(system, str) and system.strip():
        history.append({"role": "user", "content": f"(instructions from the server) {system}"})
    for message in messages[:-1]:
        text = "\n".join(_texts(message))
        history.append(
            {"role": "assistant", "content": text}
            if message.get("role") == "assistant"
            else {"role": "user", "content": text}
        )
    text, attachments = "\n".join(_texts(messages[-1])), _attachments(messages[-1])
    return ([text, *attachments] if attachments else text), history


def describe_sampling(server: str, params: dict[str, Any]) -> str:
    """What a person is shown before approving: the server, each message (cut short) and
    the token budget."""
    lines = [
        f"the MCP server {visible(server)} asks the model for a message "
        f"(at most {params.get('maxTokens', '?')} tokens)"
    ]
    system = params.get("systemPrompt")
    if isinstance(system, str) and system:
        lines.append(f"system: {_cut(system)}")
    for message in params.get("messages") or []:
        if isinstance(message, dict):
            text = " ".join(_texts(message)) or "(no text)"
            lines.append(f"{visible(str(message.get('role', '?')))}: {_cut(text)}")
    return "\n".join(lines)


def sampling_result(text: str, model: str, *, cut_off: bool = False) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model,
        "stopReason": "maxTokens" if cut_off else "endTurn",
    }


async def answer_sampling(
    requests: ServerRequests, server: str, sdk: SimpleNamespace, params: Any
) -> Any:
    """A sampling request answered by `requests.sample`, or refused (an error to the
    server) without one, when it refuses, or when it fails."""
    types = sdk.types
    why = "sampling is not available here"
    if requests.sample is not None:
        request = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            return types.CreateMessageResult.model_validate(await requests.sample(server, request))
        except Refused as exc:
            why = str(exc)
        except Exception as exc:  # the model call failed: the server hears why
            log.warning("sampling for %s failed: %s", server, exc)
            why = f"the model call failed: {' '.join(str(exc).split())[:300]}"
    return types.ErrorData(code=types.INVALID_REQUEST, message=why)


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    blocks = content if isinstance(content, list) else [content]
    texts = []
    for block in blocks:
        if isinstance(block, dict):
            kind = block.get("type")
            texts.append(str(block.get("text", "")) if kind == "text" else f"[{kind}]")
    return texts


def _attachments(message: dict[str, Any]) -> list[Attachment]:
    content = message.get("content")
    found = []
    for block in content if isinstance(content, list) else [content]:
        if isinstance(block, dict) and block.get("type") in ("image", "audio"):
            with contextlib.suppress(binascii.Error, ValueError, ToolnexusError):
                raw = base64.b64decode(str(block.get("data")), validate=True)
                found.append(Attachment.from_bytes(raw, name=str(block["type"])))
    return found


def _cut(text: str) -> str:
    text = visible(" ".join(text.split()))
    return text if len(text) <= SHOWN_PER_MESSAGE else text[:SHOWN_PER_MESSAGE] + " …"
