"""The OpenAI Responses wire as the scripted model answers it: a JSON response object or
the Responses event stream (named events, each with its sequence number), errors as the
API words them, and the request's input items read back into canonical messages.

The API names no token counts when a prompt overflows the window, so a scripted
`context_overflow(used, window)` reaches the client as an overflow of unknown size."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator
from typing import Any

from ..errors import ProviderError
from ..types import Message, ToolCall
from ..wire.base import ToolSpec
from ..wire.responses import REASONING_ITEMS_KEY
from ._script import ModelRequest, ScriptedReply, pause
from ._wire_format import WireFormat, sse_event

# canonical finish reasons -> why the API says a response is incomplete
_INCOMPLETE = {"length": "max_output_tokens"}
_COMPLETE = ("stop", "tool_calls")
# the error codes the API sends for these failures (the client reads a stream's by code)
_CODES = {
    "rate_limited": "rate_limit_exceeded",
    "overloaded": "server_is_overloaded",
    "server_error": "server_error",
    "context_overflow": "context_length_exceeded",
}
_OVERFLOW = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)


def read_request(body: dict[str, Any]) -> ModelRequest:
    tools = tuple(
        ToolSpec(tool["name"], tool.get("description", ""), tool.get("parameters", {}))
        for tool in body.get("tools") or []
        if tool.get("type") == "function"
    )
    reasoning = body.get("reasoning") or {}
    return ModelRequest(
        model=body.get("model", ""),
        messages=_canonical(body.get("input") or []),
        system=body.get("instructions"),
        tools=tools,
        stream=bool(body.get("stream")),
        reasoning=reasoning.get("effort") or "off",
        body=body,
    )


def _canonical(items: list[dict[str, Any]]) -> list[Message]:
    """Input items as canonical messages: an assistant's reasoning, text and function
    calls in a row are one assistant message; each function call output a tool message."""
    out: list[Message] = []
    turn: dict[str, Any] | None = None  # the assistant message being gathered
    for item in items:
        kind = item.get("type")
        if kind == "function_call_output":
            turn = None
            tool: dict[str, Any] = {"role": "tool", "tool_call_id": item.get("call_id")}
            tool["content"] = item.get("output") or ""
            out.append(tool)  # type: ignore[arg-type]
            continue
        if kind == "message" and item.get("role") != "assistant":
            turn = None
            out.append({"role": item.get("role", "user"), "content": _text_of(item)})
            continue
        if turn is None:
            turn = {"role": "assistant", "content": None}
            out.append(turn)  # type: ignore[arg-type]
        if kind == "message":
            turn["content"] = (turn["content"] or "") + _text_of(item)
        elif kind == "function_call":
            turn.setdefault("tool_calls", []).append(_tool_call(item))
        elif kind == "reasoning":
            turn.setdefault(REASONING_ITEMS_KEY, []).append(item)
    return out


def _text_of(item: dict[str, Any]) -> str:
    content = item.get("content")
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def _tool_call(item: dict[str, Any]) -> ToolCall:
    return {
        "id": item.get("call_id", ""),
        "type": "function",
        "function": {"name": item.get("name", ""), "arguments": item.get("arguments", "")},
    }


def whole_reply(scripted: ScriptedReply, model: str) -> dict[str, Any]:
    return _response(_output(scripted), scripted, model, _usage(scripted))


class _Sequence:
    """Numbers a stream's events, as the API does, each named by its type."""

    def __init__(self) -> None:
        self.number = 0

    def __call__(self, kind: str, **fields: Any) -> bytes:
        event = {"type": kind, "sequence_number": self.number, **fields}
        self.number += 1
        return sse_event(event, kind)


async def stream(scripted: ScriptedReply, model: str) -> AsyncIterator[bytes]:
    emit = _Sequence()
    started = _response([], scripted, model, None, status="in_progress")
    yield emit("response.created", response=started)
    yield emit("response.in_progress", response=started)
    output = _output(scripted)
    for index, item in enumerate(output):
        ids = {"item_id": item["id"], "output_index": index}
        if item["type"] == "reasoning":
            for event in _reasoning_events(emit, ids, item):
                yield event
        elif item["type"] == "message":
            async for event in _message_events(emit, ids, item, scripted):
                yield event
        else:
            await pause(scripted.delay_s)
            for event in _call_events(emit, ids, item):
                yield event
        yield emit("response.output_item.done", output_index=index, item=item)
    if scripted.error is not None:
        failed = _response(output, scripted, model, None, status="failed")
        failed["error"] = {"code": _code(scripted.error), "message": _message(scripted.error)}
        yield emit("response.failed", response=failed)
        return
    done = _response(output, scripted, model, _usage(scripted))
    yield emit(f"response.{done['status']}", response=done)


def _reasoning_events(emit: _Sequence, ids: dict[str, Any], item: dict[str, Any]) -> list[bytes]:
    (part,) = item["summary"]
    opened = {"id": item["id"], "type": "reasoning", "summary": []}
    where = {**ids, "summary_index": 0}
    return [
        emit("response.output_item.added", output_index=ids["output_index"], item=opened),
        emit("response.reasoning_summary_part.added", **where, part={**part, "text": ""}),
        emit("response.reasoning_summary_text.delta", **where, delta=part["text"]),
        emit("response.reasoning_summary_text.done", **where, text=part["text"]),
        emit("response.reasoning_summary_part.done", **where, part=part),
    ]


async def _message_events(
    emit: _Sequence, ids: dict[str, Any], item: dict[str, Any], scripted: ScriptedReply
) -> AsyncIterator[bytes]:
    """A message item's events, a text delta for each scripted chunk, after its delay."""
    (part,) = item["content"]
    opened = {**item, "status": "in_progress", "content": []}
    where = {**ids, "content_index": 0}
    yield emit("response.output_item.added", output_index=ids["output_index"], item=opened)
    yield emit("response.content_part.added", **where, part={**part, "text": ""})
    for piece in scripted.chunks:
        await pause(scripted.delay_s)
        if piece:
            yield emit("response.output_text.delta", **where, delta=piece, logprobs=[])
    yield emit("response.output_text.done", **where, text=part["text"])
    yield emit("response.content_part.done", **where, part=part)


def _call_events(emit: _Sequence, ids: dict[str, Any], item: dict[str, Any]) -> list[bytes]:
    opened = {**item, "status": "in_progress", "arguments": ""}
    return [
        emit("response.output_item.added", output_index=ids["output_index"], item=opened),
        emit("response.function_call_arguments.delta", **ids, delta=item["arguments"]),
        emit("response.function_call_arguments.done", **ids, arguments=item["arguments"]),
    ]


def error_body(error: ProviderError) -> dict[str, Any]:
    status = error.status or 500
    kind = "server_error" if status >= 500 else "invalid_request_error"
    if status == 429:
        kind = "requests"
    param = "input" if error.context_overflow is not None else None
    said = {"message": _message(error), "type": kind, "param": param, "code": _code(error)}
    return {"error": said}


def _message(error: ProviderError) -> str:
    if error.context_overflow is not None:
        return _OVERFLOW
    return error.provider_message or str(error)


def _code(error: ProviderError) -> str | None:
    if error.context_overflow is not None:
        return _CODES["context_overflow"]
    return _CODES.get(error.kind)


def _output(scripted: ScriptedReply) -> list[dict[str, Any]]:
    """The reply's finished output items, in the API's order: reasoning (its summary, and
    its content encrypted, as a stateless request asks), the message, the function calls."""
    items: list[dict[str, Any]] = []
    if scripted.reasoning:
        sealed = base64.b64encode(scripted.reasoning.encode()).decode()
        summary = [{"type": "summary_text", "text": scripted.reasoning}]
        items.append(
            {
                "id": "rs_scripted",
                "type": "reasoning",
                "summary": summary,
                "encrypted_content": sealed,
            }
        )
    text = "".join(scripted.chunks)
    if text:
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        items.append(
            {
                "id": "msg_scripted",
                "type": "message",
                "status": "completed",
                "content": [part],
                "role": "assistant",
            }
        )
    for index, call in enumerate(scripted.tool_calls):
        made = call.as_tool_call(index)
        items.append(
            {
                "id": f"fc_scripted{index + 1}",
                "type": "function_call",
                "status": "completed",
                "arguments": made["function"]["arguments"],
                "call_id": made["id"],
                "name": call.name,
            }
        )
    return items


def _response(
    output: list[dict[str, Any]],
    scripted: ScriptedReply,
    model: str,
    usage: dict[str, Any] | None,
    *,
    status: str | None = None,
) -> dict[str, Any]:
    finish = scripted.finish()
    why = None if finish in _COMPLETE else _INCOMPLETE.get(finish, finish)
    return {
        "id": "resp_scripted",
        "object": "response",
        "created_at": int(time.time()),
        "status": status or ("incomplete" if why else "completed"),
        "background": False,
        "error": None,
        "incomplete_details": {"reason": why} if why and status is None else None,
        "instructions": None,
        "max_output_tokens": None,
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def _usage(scripted: ScriptedReply) -> dict[str, Any]:
    """The canonical usage as this API counts it: cached tokens inside the input's
    details, reasoning tokens inside the output's."""
    usage = scripted.usage or {}
    prompt, completion = usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0)},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
        "total_tokens": usage.get("total_tokens") or prompt + completion,
    }


OPENAI_RESPONSES = WireFormat(read_request, whole_reply, stream, error_body)
