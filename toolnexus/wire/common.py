"""Pieces both wire styles share."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import ProviderError
from ..events import Usage


@dataclass
class ModelReply:
    """One model call's outcome, whatever the style: a canonical assistant message."""

    message: dict[str, Any]
    usage: Usage
    finish_reason: str | None


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def loads_event(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        raise ProviderError(
            f"the endpoint sent a stream event that is not JSON: {data[:200]!r}"
        ) from None


def assistant_message(
    text: str, tool_calls: list[dict[str, Any]], reasoning: str = ""
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text if text or not tool_calls else None,
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning:
        message["reasoning"] = reasoning
    return message


def canonical_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments or "{}"},
    }


def text_of(content: Any) -> str:
    """The text of a message `content` that may be a string or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(
        part.get("text", "") for part in content if isinstance(part, dict)
    )
