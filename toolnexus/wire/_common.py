"""Pieces the wire styles share: canonical messages, and strict reading of hostile replies."""

from __future__ import annotations

import json
import uuid
from typing import Any

from .._bounded_json import TooDeep, loads_bounded
from ..errors import ProviderError
from ..events import empty_usage
from ..types import AssistantMessage, Message, ToolCall, Usage


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:24]}"


def loads_event(data: str) -> Any:
    try:
        return loads_bounded(data)
    except TooDeep as exc:
        raise ProviderError(f"the endpoint sent a stream event of {exc}") from None
    except ValueError:
        raise ProviderError(
            f"the endpoint sent a stream event that is not JSON: {data[:200]!r}"
        ) from None


def malformed(what: str) -> ProviderError:
    return ProviderError(f"the endpoint's reply is malformed: {what}")


def optional(value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """`value` when it is of `kind` or None; anything else is a malformed reply."""
    if value is None or isinstance(value, kind):
        return value
    raise malformed(f"{what} is {_shown(value)}")


def element(value: Any, what: str) -> dict[str, Any]:
    """One element of a list of objects (choices, items, parts): null is malformed too."""
    if isinstance(value, dict):
        return value
    raise malformed(f"{what} is {_shown(value)}, not an object")


def tokens(raw: dict[str, Any], key: str) -> int:
    """A token count from a usage object: absent or null is 0, a non-number is malformed."""
    value = raw.get(key)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise malformed(f"usage.{key} is {_shown(value)}, not a number")
    return int(value)


def put_count(usage: dict[str, int], key: str, raw: dict[str, Any], field: str) -> None:
    """Set the optional usage figure `key` (reasoning, cache reads and writes) from
    `raw[field]` when the reply reports it; a count of 0 leaves no key, as does silence."""
    if field not in raw:
        return
    count = tokens(raw, field)
    if count:
        usage[key] = count
    else:
        usage.pop(key, None)


def token_usage(
    raw: Any, prompt_key: str, completion_key: str, details_key: str, prompt_details_key: str
) -> Usage:
    """A usage object in this style's key names as canonical usage: reasoning tokens from
    its `details_key` object, cache reads and writes (part of the prompt tokens; OpenRouter
    reports the writes) from its `prompt_details_key` object, when it counts any."""
    usage = empty_usage()
    raw = optional(raw, dict, "usage")
    if not raw:
        return usage
    usage["prompt_tokens"] = tokens(raw, prompt_key)
    usage["completion_tokens"] = tokens(raw, completion_key)
    usage["total_tokens"] = (
        tokens(raw, "total_tokens") or usage["prompt_tokens"] + usage["completion_tokens"]
    )
    details = optional(raw.get(details_key), dict, f"usage.{details_key}")
    if details:
        put_count(usage, "reasoning_tokens", details, "reasoning_tokens")
    prompt = optional(raw.get(prompt_details_key), dict, f"usage.{prompt_details_key}")
    if prompt:
        put_count(usage, "cached_tokens", prompt, "cached_tokens")
        put_count(usage, "cache_write_tokens", prompt, "cache_write_tokens")
    return usage


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)[:80]


def assistant_message(
    text: str, tool_calls: list[ToolCall], reasoning: str = ""
) -> AssistantMessage:
    message: AssistantMessage = {
        "role": "assistant",
        "content": text if text or not tool_calls else None,
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    if reasoning:
        message["reasoning"] = reasoning
    return message


def canonical_call(call_id: str, name: str, arguments: Any) -> ToolCall:
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments or "{}"},
    }


def unique_call_ids(message: AssistantMessage) -> AssistantMessage:
    """`message` with each tool call id used once: a repeat (some servers number every
    call `call_0`) becomes `<id>_2`, `<id>_3`, ... so that each call and its result pair up
    in the next request."""
    calls = message.get("tool_calls")
    if not calls:
        return message
    ids = [call.get("id") for call in calls]
    if len(set(ids)) == len(ids):
        return message
    taken = set(ids)
    seen: set[Any] = set()
    unique: list[ToolCall] = []
    for call in calls:
        call_id = call.get("id")
        if call_id in seen:
            number = 2
            while f"{call_id}_{number}" in taken:
                number += 1
            call = call.copy()
            call["id"] = f"{call_id}_{number}"
            taken.add(call["id"])
        seen.add(call_id)
        unique.append(call)
    return {**message, "tool_calls": unique}


def newest_prompt(messages: list[Message]) -> int:
    """The index of the last user message (-1 if none): the prompt being asked, whose
    attachments go as they are or not at all. Media of earlier messages and of tool results
    that a style cannot carry goes as its text note (content.stand_in)."""
    return next(
        (i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), -1
    )


def text_of(content: Any) -> str:
    """The text of a canonical `content`: a string or a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def tool_output_text(message: Message) -> str:
    """A tool result's text for a style with no error flag: a failed call's output starts
    with "Error:" (unless it already says so), so the model cannot take it for data."""
    text = text_of(message.get("content"))
    if message.get("is_error") and not text.lstrip()[:6].lower().startswith("error"):
        return f"Error: {text}"
    return text
