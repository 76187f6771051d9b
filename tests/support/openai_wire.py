"""The OpenAI chat-completions wire written and read by hand, for the stream variants real
servers send: chat.completion.chunk events (`chunk`, `calls`, `frag`) in an SSE reply
(`sse`), and the tool calls and results a follow-up request sent back."""

from __future__ import annotations

from typing import Any

from tests.support.stub_provider import Reply, StubProvider


def chunk(delta: dict | None = None, finish: str | None = None, **extra: Any) -> dict:
    """One chat.completion.chunk with a single choice."""
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"id": "chatcmpl-x", "object": "chat.completion.chunk", "choices": [choice], **extra}


def calls(*fragments: dict, finish: str | None = None) -> dict:
    return chunk({"tool_calls": list(fragments)}, finish)


def frag(
    index: int | None = None,
    id: str | None = None,
    name: str | None = None,
    args: Any = ...,
    **fn: Any,
) -> dict:
    """A tool-call fragment; keys left at their default are absent from the JSON."""
    out: dict[str, Any] = {}
    if index is not None:
        out["index"] = index
    if id is not None:
        out["id"] = id
        out["type"] = "function"
    if name is not None:
        fn["name"] = name
    if args is not ...:
        fn["arguments"] = args
    out["function"] = fn
    return out


def sse(*events: Any, done: bool = True) -> Reply:
    return Reply.sse(list(events), done=done)


def wire_calls(stub: StubProvider, request: int = 1) -> list[dict]:
    """The assistant tool calls a follow-up request sent back."""
    messages = stub.requests[request].json["messages"]
    return [c for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []]


def wire_results(stub: StubProvider, request: int = 1) -> list[dict]:
    return [m for m in stub.requests[request].json["messages"] if m["role"] == "tool"]
