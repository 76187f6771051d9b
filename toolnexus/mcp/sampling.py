"""Sampling: a server asks the client's model for a message (sampling/createMessage).
Here: the request as a model call (its messages, system prompt, token limit, temperature
and stop sequences in the answering style's terms), as text a person can judge, and the
answer in the protocol's shape; who approves and which model answers is the host's
(requests.py)."""

from __future__ import annotations

import base64
import binascii
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from .._visible import visible
from ..content import Attachment
from ..context._summary import REPLY_BUDGET_KEYS
from ..errors import ToolnexusError
from ..types import Message
from .requests import Refused, ServerRequests

if TYPE_CHECKING:
    from ..wire.base import WireStyle

__all__ = [
    "SamplingCall",
    "answer_sampling",
    "describe_sampling",
    "model_hints",
    "sampling_call",
    "sampling_result",
]

log = logging.getLogger("toolnexus.mcp")

SHOWN_PER_MESSAGE = 600  # characters of each message a person is shown


@dataclass(frozen=True)
class SamplingCall:
    """How a sampling request is put to a model: the prompt (the last message: its text
    and attachments) and the history before it, the server's system prompt, the request
    options to send (the user's, with the request's limit, temperature and stop sequences
    over them), the reply's token limit and what the model may think on top of it."""

    prompt: str | list[Any]
    history: list[Message]
    system: str | None
    params: dict[str, Any]
    limit: int
    thinking: int = 0


def sampling_call(
    params: dict[str, Any],
    wire: WireStyle,
    *,
    user_params: Mapping[str, Any],
    most_tokens: int,
    reasoning: str = "off",
) -> SamplingCall:
    """The request as a call in `wire`'s style: its `maxTokens` (at most `most_tokens`)
    under the budget key the user's options use, else the style's; `temperature`, and
    `stopSequences` where the style takes them. Refused if there is nothing to answer."""
    messages = [m for m in params.get("messages") or [] if isinstance(m, dict)]
    if not messages or messages[-1].get("role") != "user":
        raise Refused("the last message must be the user's")
    history: list[Message] = []
    for message in messages[:-1]:
        text = "\n".join(_texts(message))
        history.append(
            {"role": "assistant", "content": text}
            if message.get("role") == "assistant"
            else {"role": "user", "content": text}
        )
    text, attachments = "\n".join(_texts(messages[-1])), _attachments(messages[-1])
    system = params.get("systemPrompt")
    limit = sampling_limit(params, most_tokens)
    budget_key = next((k for k in REPLY_BUDGET_KEYS if k in user_params), wire.reply_budget_key)
    sent = {k: v for k, v in user_params.items() if k not in REPLY_BUDGET_KEYS}
    sent[budget_key] = limit
    temperature = params.get("temperature")
    if isinstance(temperature, int | float) and not isinstance(temperature, bool):
        sent["temperature"] = temperature
    stops = params.get("stopSequences")
    if wire.stop_key is not None and isinstance(stops, list) and stops:
        sent[wire.stop_key] = [str(stop) for stop in stops]
    return SamplingCall(
        prompt=[text, *attachments] if attachments else text,
        history=history,
        system=system if isinstance(system, str) and system.strip() else None,
        params=sent,
        limit=limit,
        thinking=wire.reasoning_tokens(reasoning),
    )


def sampling_limit(params: dict[str, Any], most_tokens: int) -> int:
    """The reply's token limit: the request's `maxTokens`, at most `most_tokens`."""
    asked = params.get("maxTokens")
    if isinstance(asked, bool) or not isinstance(asked, int) or asked < 1:
        return most_tokens
    return min(asked, most_tokens)


def model_hints(params: dict[str, Any]) -> list[str]:
    """The names the request's `modelPreferences` hints give, in its order (lower case)."""
    preferences = params.get("modelPreferences")
    hints = preferences.get("hints") if isinstance(preferences, dict) else None
    return [
        str(hint["name"]).lower()
        for hint in hints or []
        if isinstance(hint, dict) and isinstance(hint.get("name"), str) and hint["name"].strip()
    ]


def describe_sampling(server: str, params: dict[str, Any], call: SamplingCall) -> str:
    """What a person is shown before approving: the server, the token limit (and when
    it was cut, or raised for the model to think), each message (cut short)."""
    asked = params.get("maxTokens")
    lines = [
        f"the MCP server {visible(server)} asks the model for a message "
        f"(at most {call.limit} tokens)"
    ]
    if isinstance(asked, int) and asked > call.limit:
        lines.append(f"it asked for up to {asked} tokens: cut to the configured maximum")
    if call.thinking:
        lines.append(
            f"the model thinks first: the request allows {call.limit + call.thinking} tokens "
            f"({call.thinking} to think)"
        )
    if call.system:
        lines.append(f"system: {_cut(call.system)}")
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
