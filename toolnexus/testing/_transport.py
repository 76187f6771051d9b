"""ScriptedTransport: an httpx2 transport that answers requests from a ScriptedModel in the
openai style's wire format (chat completions: a JSON body, or server-sent events), so the
style's real encoding and decoding run without a server."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2

from ..errors import ProviderError
from ..events import empty_usage
from ..wire.base import ToolSpec
from ._script import ModelRequest, ScriptedReply, pause

# ScriptedModel.answer: records the request and gives its reply, or raises its error
Answer = Callable[[ModelRequest], Awaitable[ScriptedReply]]


class ScriptedTransport(httpx2.AsyncBaseTransport):
    """Answers every POST (a chat-completions request, whatever its path: a style of yours
    may send it elsewhere) with what `answer` gives; anything else is a 404."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST":
            return _error_response(404, "the scripted model answers POST requests only")
        body = json.loads(await request.aread())
        try:
            scripted = await self.answer(_chat_request(body))
        except ProviderError as error:
            return _failure(error)
        if not body.get("stream"):
            await pause(scripted.delay_s)
            if scripted.error is not None:
                return _failure(scripted.error)
            return httpx2.Response(200, json=_completion(scripted, body.get("model", "")))
        return httpx2.Response(
            200,
            headers={"content-type": "text/event-stream"},
            stream=_EventStream(scripted, body.get("model", "")),
        )


class _EventStream(httpx2.AsyncByteStream):
    def __init__(self, scripted: ScriptedReply, model: str) -> None:
        self.scripted = scripted
        self.model = model

    async def __aiter__(self) -> AsyncIterator[bytes]:
        scripted = self.scripted
        if scripted.reasoning:
            yield self._chunk({"reasoning_content": scripted.reasoning})
        for chunk in scripted.chunks:
            await pause(scripted.delay_s)
            if chunk:
                yield self._chunk({"content": chunk})
        for index, call in enumerate(scripted.tool_calls):
            await pause(scripted.delay_s)
            made = call.as_tool_call(index)
            yield self._chunk({"tool_calls": [{"index": index, **made}]})
        if scripted.error is not None:
            yield _event({"error": _error_body(scripted.error)})
            return
        yield self._chunk({}, finish=scripted.finish(), usage=_wire_usage(scripted))
        yield b"data: [DONE]\n\n"

    def _chunk(self, delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> bytes:
        chunk: dict[str, Any] = {
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            chunk["usage"] = usage
        return _event(chunk)


def _chat_request(body: dict[str, Any]) -> ModelRequest:
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


def _completion(scripted: ScriptedReply, model: str) -> dict[str, Any]:
    message: dict[str, Any] = dict(scripted.message())
    if "reasoning" in message:
        message["reasoning_content"] = message.pop("reasoning")
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": scripted.finish()}],
        "usage": _wire_usage(scripted),
    }


def _wire_usage(scripted: ScriptedReply) -> dict[str, Any]:
    """The reply's canonical usage as the openai wire counts it: reasoning tokens inside
    the completion's details, cached ones inside the prompt's."""
    usage: dict[str, Any] = dict(scripted.usage or empty_usage())
    if "reasoning_tokens" in usage:
        usage["completion_tokens_details"] = {"reasoning_tokens": usage.pop("reasoning_tokens")}
    if "cached_tokens" in usage:
        usage["prompt_tokens_details"] = {"cached_tokens": usage.pop("cached_tokens")}
    return usage


def _error_body(error: ProviderError) -> dict[str, Any]:
    body: dict[str, Any] = {"message": error.provider_message or str(error), "type": error.kind}
    overflow = error.context_overflow
    if overflow is not None:
        body["code"] = "context_length_exceeded"
        if overflow.used is not None and overflow.window is not None:
            body["message"] = (
                f"This model's maximum context length is {overflow.window} tokens. However, "
                f"your messages resulted in {overflow.used} tokens."
            )
    return body


def _failure(error: ProviderError) -> httpx2.Response:
    headers = {}
    if error.retry_after is not None:
        headers["retry-after-ms"] = str(round(error.retry_after * 1000))
    return _error_response(error.status or 500, body=_error_body(error), headers=headers)


def _error_response(
    status: int,
    message: str = "",
    *,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> httpx2.Response:
    return httpx2.Response(
        status, headers=headers, json={"error": body or {"message": message, "type": "invalid"}}
    )


def _event(data: dict[str, Any]) -> bytes:
    return f"data: {json.dumps(data)}\n\n".encode()
