"""The anthropic Messages wire as the scripted model answers it: a JSON message or the
Messages event stream, errors as the API types them, and the request read back into
canonical messages."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from ..errors import ProviderError
from ..types import Message, ToolCall
from ..wire.base import ToolSpec
from ._script import ModelRequest, ScriptedCall, ScriptedReply, pause
from ._wire_format import WireFormat, sse_event

_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def read_request(body: dict[str, Any]) -> ModelRequest:
    system = body.get("system")
    if isinstance(system, list):
        system = "\n\n".join(block.get("text", "") for block in system)
    tools = tuple(
        ToolSpec(tool["name"], tool.get("description", ""), tool.get("input_schema", {}))
        for tool in body.get("tools") or []
    )
    return ModelRequest(
        model=body.get("model", ""),
        messages=_canonical(body.get("messages") or []),
        system=system,
        tools=tools,
        stream=bool(body.get("stream")),
        reasoning="on" if "thinking" in body else "off",  # its budget names no level
        body=body,
    )


def _canonical(messages: list[dict[str, Any]]) -> list[Message]:
    """Messages API turns as canonical messages: tool_use blocks as tool calls, each
    tool_result block as a tool message."""
    out: list[Message] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append({"role": message["role"], "content": content})
            continue
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in content or []:
            kind = block.get("type")
            if kind == "text":
                texts.append(block["text"])
            elif kind == "tool_use":
                arguments = json.dumps(block.get("input", {}))
                calls.append(
                    {
                        "id": block["id"],
                        "type": "function",
                        "function": {"name": block["name"], "arguments": arguments},
                    }
                )
            elif kind == "tool_result":
                out.append(_tool_message(block))
        if texts or calls:
            said: dict[str, Any] = {"role": message["role"], "content": "".join(texts) or None}
            if calls:
                said["tool_calls"] = calls
            out.append(said)  # type: ignore[arg-type]
    return out


def _tool_message(block: dict[str, Any]) -> Message:
    content = block.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content)
    message: dict[str, Any] = {"role": "tool", "tool_call_id": block["tool_use_id"]}
    message["content"] = content or ""
    if block.get("is_error"):
        message["is_error"] = True
    return message  # type: ignore[return-value]


def whole_reply(scripted: ScriptedReply, model: str) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = []
    if scripted.reasoning:
        blocks.append({"type": "thinking", "thinking": scripted.reasoning, "signature": "c2lnbg=="})
    text = "".join(scripted.chunks)
    if text:
        blocks.append({"type": "text", "text": text})
    blocks += [_tool_use(call, index, whole=True) for index, call in enumerate(scripted.tool_calls)]
    return _message(
        blocks, _STOP.get(scripted.finish(), scripted.finish()), _usage(scripted), model
    )


async def stream(scripted: ScriptedReply, model: str) -> AsyncIterator[bytes]:
    usage = _usage(scripted)
    start = _message([], None, {**usage, "output_tokens": 1}, model)
    yield sse_event({"type": "message_start", "message": start}, "message_start")
    index = 0
    if scripted.reasoning:
        yield _block_start(index, {"type": "thinking", "thinking": "", "signature": ""})
        yield _delta(index, {"type": "thinking_delta", "thinking": scripted.reasoning})
        yield _delta(index, {"type": "signature_delta", "signature": "c2lnbg=="})
        yield _block_stop(index)
        index += 1
    text_open = False
    for piece in scripted.chunks:
        await pause(scripted.delay_s)
        if piece and not text_open:
            yield _block_start(index, {"type": "text", "text": ""})
            text_open = True
        if piece:
            yield _delta(index, {"type": "text_delta", "text": piece})
    if text_open:
        yield _block_stop(index)
        index += 1
    for number, call in enumerate(scripted.tool_calls):
        await pause(scripted.delay_s)
        yield _block_start(index, {**_tool_use(call, number, whole=False), "input": {}})
        raw = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
        yield _delta(index, {"type": "input_json_delta", "partial_json": raw})
        yield _block_stop(index)
        index += 1
    if scripted.error is not None:
        yield sse_event(error_body(scripted.error), "error")
        return
    stop = _STOP.get(scripted.finish(), scripted.finish())
    yield sse_event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
        "message_delta",
    )
    yield sse_event({"type": "message_stop"}, "message_stop")


def error_body(error: ProviderError) -> dict[str, Any]:
    message = error.provider_message or str(error)
    overflow = error.context_overflow
    kind = _ERROR_TYPES.get(error.status or 500, "api_error")
    if overflow is not None:
        message = "prompt is too long"
        if overflow.used is not None and overflow.window is not None:
            message += f": {overflow.used} tokens > {overflow.window} maximum"
    return {"type": "error", "error": {"type": kind, "message": message}}


def _tool_use(call: ScriptedCall, index: int, *, whole: bool) -> dict[str, Any]:
    made = call.as_tool_call(index)
    block: dict[str, Any] = {"type": "tool_use", "id": made["id"], "name": call.name}
    if whole:  # the Messages API sends an object: text that is not one goes as {}
        try:
            parsed = json.loads(made["function"]["arguments"])
        except ValueError:
            parsed = {}
        block["input"] = parsed if isinstance(parsed, dict) else {}
    return block


def _usage(scripted: ScriptedReply) -> dict[str, Any]:
    usage = scripted.usage or {}
    counts: dict[str, Any] = {
        "input_tokens": usage.get("prompt_tokens", 0) - usage.get("cached_tokens", 0),
        "output_tokens": usage.get("completion_tokens", 0),
    }
    if usage.get("cached_tokens"):
        counts["cache_read_input_tokens"] = usage["cached_tokens"]
    return counts


def _message(
    content: list[dict[str, Any]], stop: str | None, usage: dict[str, Any], model: str
) -> dict[str, Any]:
    return {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def _block_start(index: int, block: dict[str, Any]) -> bytes:
    event = {"type": "content_block_start", "index": index, "content_block": block}
    return sse_event(event, "content_block_start")


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    event = {"type": "content_block_delta", "index": index, "delta": delta}
    return sse_event(event, "content_block_delta")


def _block_stop(index: int) -> bytes:
    return sse_event({"type": "content_block_stop", "index": index}, "content_block_stop")


ANTHROPIC_MESSAGES = WireFormat(read_request, whole_reply, stream, error_body)
