"""The one agent loop: model call -> tool calls -> results fed back -> repeat.

Every entry point (run, ask, stream, Conversation.send) is a thin wrapper over `agent_loop`,
an async generator of event dicts ending in a `done` event.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .control import RunControl
from .errors import ToolnexusError
from .events import (
    RunResult,
    add_usage,
    done_event,
    reasoning_event,
    text_event,
    tool_call_event,
    tool_result_event,
    usage_event,
)
from .toolkit import Toolkit
from .tools import ToolContext, ToolResult
from .transport import Transport
from .wire.common import ModelReply, text_of

INTERRUPTED_KEY = "interrupted"
CANCELLED_TOOL_OUTPUT = "error: the run was interrupted before this tool finished"


@dataclass
class LoopSettings:
    wire: ModuleType
    url: str
    headers: dict[str, str]
    model: str
    transport: Transport
    system_prompt: str | None = None
    max_turns: int = 10
    request_params: dict[str, Any] = field(default_factory=dict)
    timeout_ms: float | None = None


@dataclass
class _Call:
    id: str
    name: str
    args: Any  # a dict, or the raw text when it was not a JSON object
    problem: str | None = None  # why the call cannot run, as told to the model


async def agent_loop(
    settings: LoopSettings,
    prompt: str,
    toolkit: Toolkit | None,
    *,
    history: list[dict[str, Any]] | None = None,
    cancel: asyncio.Event | None = None,
    stream: bool = True,
) -> AsyncIterator[dict[str, Any]]:
    messages = [*(history or []), {"role": "user", "content": prompt}]
    result = RunResult(messages=messages, model=settings.model)
    deadline = None
    if settings.timeout_ms is not None:
        deadline = asyncio.get_running_loop().time() + settings.timeout_ms / 1000
    control = RunControl(cancel, deadline)
    assembler = None
    try:
        control.check()
        tools = _tool_schemas(settings.wire, toolkit)
        for turn in range(1, settings.max_turns + 1):
            body = settings.wire.build_body(
                model=settings.model, messages=messages, system=settings.system_prompt,
                tools=tools, stream=stream,
            )
            body.update(settings.request_params)
            assembler = settings.wire.Stream()
            reply: ModelReply | None = None
            async for kind, payload in settings.transport.send(
                settings.url, settings.headers, body, control
            ):
                if kind == "sse":
                    for event_name, data in payload:
                        for event in assembler.feed(event_name, data):
                            yield event
                elif kind == "json":
                    reply = settings.wire.parse_reply(payload)
                    for event in _whole_reply_events(reply):
                        yield event
                else:
                    yield payload
            if reply is None:
                reply = assembler.finish()
            assembler = None
            messages.append(reply.message)
            add_usage(result.usage, reply.usage)
            result.turns = turn
            result.finish_reason = reply.finish_reason
            yield usage_event(result.usage)

            calls = [_parse_call(c) for c in reply.message.get("tool_calls") or []]
            if not calls:
                result.text = text_of(reply.message.get("content"))
                break
            for call in calls:
                result.tool_calls.append({"id": call.id, "name": call.name, "args": call.args})
                yield tool_call_event(call.id, call.name, call.args)
            outcomes = await _run_tools(calls, toolkit, control, messages)
            for call, outcome in zip(calls, outcomes, strict=True):
                yield tool_result_event(call.id, call.name, outcome.output, outcome.is_error)
        else:
            result.status = "incomplete"
        yield done_event(result)
    except ToolnexusError as exc:
        if assembler is not None:
            _keep_partial_answer(messages, assembler.partial_text())
        exc.result = result
        raise
    finally:
        control.close()


def _tool_schemas(wire: ModuleType, toolkit: Toolkit | None) -> list[dict[str, Any]]:
    if toolkit is None or not len(toolkit):
        return []
    return toolkit.to_anthropic() if wire.__name__.endswith("anthropic") else toolkit.to_openai()


def _whole_reply_events(reply: ModelReply) -> list[dict[str, Any]]:
    """A reply that came as one JSON body yields its text as a single delta."""
    events = []
    if reply.message.get("reasoning"):
        events.append(reasoning_event(reply.message["reasoning"]))
    text = text_of(reply.message.get("content"))
    if text:
        events.append(text_event(text))
    return events


def _parse_call(call: dict[str, Any]) -> _Call:
    fn = call.get("function") or {}
    name = fn.get("name", "")
    raw = fn.get("arguments") or "{}"
    try:
        args = json.loads(raw)
    except ValueError as exc:
        return _Call(call["id"], name, raw,
                     f"error: the arguments for {name!r} are not valid JSON ({exc}): {raw[:500]}")
    if not isinstance(args, dict):
        return _Call(call["id"], name, args,
                     f"error: the arguments for {name!r} must be a JSON object, got: {raw[:500]}")
    return _Call(call["id"], name, args)


async def _run_tools(
    calls: list[_Call], toolkit: Toolkit | None, control: RunControl,
    messages: list[dict[str, Any]],
) -> list[ToolResult]:
    """Run one turn's calls concurrently; append their results to the transcript in call
    order. On interruption, calls that did not finish get an error result, so the
    transcript never holds a tool call without its result."""
    contexts = [ToolContext(call_id=call.id) for call in calls]
    tasks = [
        asyncio.ensure_future(_run_one(call, toolkit, context))
        for call, context in zip(calls, contexts, strict=True)
    ]
    try:
        await control.race(asyncio.gather(*tasks))
    except ToolnexusError:
        for context in contexts:
            context.cancelled.set()
        for task in tasks:
            task.cancel()
        raise
    finally:
        outcomes = [
            task.result() if task.done() and not task.cancelled() and not task.exception()
            else ToolResult(CANCELLED_TOOL_OUTPUT, is_error=True)
            for task in tasks
        ]
        for call, outcome in zip(calls, outcomes, strict=True):
            messages.append(_tool_message(call, outcome))
    return outcomes


async def _run_one(call: _Call, toolkit: Toolkit | None, context: ToolContext) -> ToolResult:
    if call.problem:
        return ToolResult(call.problem, is_error=True)
    if toolkit is None:
        return ToolResult(f"error: unknown tool {call.name!r} (no tools are available)",
                          is_error=True)
    return await toolkit.execute(call.name, call.args, context)


def _tool_message(call: _Call, outcome: ToolResult) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call.id, "content": outcome.output}
    if outcome.is_error:
        message["is_error"] = True
    return message


def _keep_partial_answer(messages: list[dict[str, Any]], text: str) -> None:
    """Keep what the user already saw of an answer that was cut off."""
    if text:
        messages.append({"role": "assistant", "content": text, INTERRUPTED_KEY: True})
