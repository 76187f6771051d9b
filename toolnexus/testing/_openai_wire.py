"""The openai chat-completions wire as the scripted model answers it: a JSON completion or
chat.completion.chunk events, errors as the API words them, and the request read back."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from ..errors import ProviderError
from ..events import empty_usage
from ..wire.base import ToolSpec
from ._script import ModelRequest, ScriptedReply, pause
from ._wire_format import WireFormat, sse_event


def read_request(body: dict[str, Any]) -> ModelRequest:
    messages = list(body.get("messages") or [])
    system = None
    if messages and messages[0].get("role") in ("system", "developer"):
        system = messages.pop(0).get("content")
    tools = tuple(
        ToolSpec(fn["name"], fn.get("description", ""), fn.get("parameters", {}))
        for fn in (tool.get("function") or {} for tool in body.get("tools") or [])
    )
    return ModelRequest(
        model=body.get("model", ""),
        messages=messages,
        system=system,
        tools=tools,
        stream=bool(body.get("stream")),
        reasoning=body.get("reasoning_effort") or "off",
        body=body,
    )


def whole_reply(scripted: ScriptedReply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = dict(scripted.message())
    if "reasoning" in message:
        message["reasoning_content"] = message.pop("reasoning")
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": scripted.finish()}],
        "usage": _usage(scripted),
    }


async def stream(scripted: ScriptedReply, model: str) -> AsyncIterator[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
        made: dict[str, Any] = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            made["usage"] = usage
        return sse_event(made)

    if scripted.reasoning:
        yield chunk({"reasoning_content": scripted.reasoning})
    for piece in scripted.chunks:
        await pause(scripted.delay_s)
        if piece:
            yield chunk({"content": piece})
    for index, call in enumerate(scripted.tool_calls):
        await pause(scripted.delay_s)
        yield chunk({"tool_calls": [{"index": index, **call.as_tool_call(index)}]})
    if scripted.error is not None:
        yield sse_event({"error": error_body(scripted.error)["error"]})
        return
    yield chunk({}, finish=scripted.finish(), usage=_usage(scripted))
    yield b"data: [DONE]\n\n"


def error_body(error: ProviderError) -> dict[str, Any]:
    said: dict[str, Any] = {"message": error.provider_message or str(error), "type": error.kind}
    overflow = error.context_overflow
    if overflow is not None:
        said["code"] = "context_length_exceeded"
        if overflow.used is not None and overflow.window is not None:
            said["message"] = (
                f"This model's maximum context length is {overflow.window} tokens. However, "
                f"your messages resulted in {overflow.used} tokens."
            )
    return {"error": said}


def _usage(scripted: ScriptedReply) -> dict[str, Any]:
    """The reply's canonical usage as this wire counts it: reasoning tokens inside the
    completion's details, cached ones inside the prompt's."""
    usage: dict[str, Any] = dict(scripted.usage or empty_usage())
    if "reasoning_tokens" in usage:
        usage["completion_tokens_details"] = {"reasoning_tokens": usage.pop("reasoning_tokens")}
    if "cached_tokens" in usage:
        usage["prompt_tokens_details"] = {"cached_tokens": usage.pop("cached_tokens")}
    return usage


OPENAI_CHAT = WireFormat(read_request, whole_reply, stream, error_body)
