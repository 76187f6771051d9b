"""Shared pieces of the retry / cancel / timeout tests (tests/library/test_retries.py,
tests/library/test_cancel.py, tests/library/test_timeouts.py): clients on the stub, canned replies,
and the check that a transcript left behind is valid to send again. The client that never
retries (`single_try_client`) also serves the hook, suspension, tool-source and MCP tests."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import Any

from tests.support.stub_provider import (
    Reply,
    StubProvider,
    anthropic_stream,
    anthropic_text,
    anthropic_tool_use,
    openai_stream,
    openai_text,
    openai_tool_call,
)
from tests.support.waiting import WAIT_S
from toolnexus import Client, create_client, create_toolkit, define_tool
from toolnexus.transport import Reply as TransportReply
from toolnexus.transport._channel import DATA, Channel

MODEL = "stub-model"
THREAD = "thread-1"


def make_client(stub: StubProvider, style: str = "openai", **options: Any) -> Client:
    """A client on the stub. Fast retries unless a test says otherwise."""
    options.setdefault("retries", 2)
    options.setdefault("retry_base_ms", 1)
    options.setdefault("api_key", "sk-test")
    options.setdefault("model", MODEL)
    return create_client(base_url=stub.base_url, style=style, **options)


async def echo_toolkit() -> Any:
    """`echo(text)` and `now()` (no arguments); each call's arguments land in `.seen`."""
    seen: list[dict] = []

    async def echo(text: str) -> str:
        """Echo the text back."""
        seen.append({"text": text})
        return f"echo:{text}"

    def now() -> str:
        """The time."""
        seen.append({})
        return "noon"

    toolkit = (await create_toolkit()).register(define_tool(echo), define_tool(now))
    toolkit.seen = seen
    return toolkit


def single_try_client(stub: StubProvider, style: str = "openai", **options: Any) -> Client:
    """A client on the stub that never retries, on model "m": where a failed request
    should end the run at once."""
    return make_client(stub, style, retries=0, model="m", **options)


async def collect(
    client: Client, prompt: str = "hi", toolkit: Any = None, **kwargs: Any
) -> tuple[list[dict[str, Any]], Exception | None]:
    """All events of a streamed run, and the exception that ended it (or None)."""
    events = []
    try:
        async for event in client.stream(prompt, toolkit, **kwargs):
            events.append(event)
    except Exception as exc:  # noqa: BLE001 - returned for the test to inspect
        return events, exc
    return events, None


def ok_reply(style: str, text: str) -> Reply:
    """A whole JSON answer (also accepted for a streaming request)."""
    body = openai_text(text) if style == "openai" else anthropic_text(text)
    return Reply.json(body)


def ok_stream(style: str, text: str) -> Reply:
    return openai_stream(text) if style == "openai" else anthropic_stream(text)


def tool_call_reply(style: str, calls: list[tuple[str, dict]]) -> Reply:
    body = openai_tool_call(calls) if style == "openai" else anthropic_tool_use(calls)
    return Reply.json(body)


def partial_parts(style: str, text: str) -> list[bytes]:
    """The SSE events of a streamed answer up to and including its last text delta: the
    finish/usage/stop events (the last three events of either style) are left out."""
    return ok_stream(style, text).parts[:-3]


def text_of_events(events: list[dict[str, Any]]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "text")


def sse_has_text(style: str, events: list[tuple[str, str]]) -> bool:
    """Whether a batch of raw SSE events carries an answer text delta."""
    for _, data in events:
        try:
            obj = json.loads(data)
        except ValueError:
            continue
        if not isinstance(obj, dict):
            continue
        if style == "openai":
            for choice in obj.get("choices") or []:
                if (choice.get("delta") or {}).get("content"):
                    return True
        elif obj.get("type") == "content_block_delta" and obj["delta"].get("text"):
            return True
    return False


def assert_resendable(messages: list[dict[str, Any]], prompt: str) -> None:
    """The transcript holds the user turn and no assistant tool call without its result
    (each result directly after its call's assistant message, as the APIs require)."""
    assert any(m["role"] == "user" and m["content"] == prompt for m in messages), messages
    open_calls: set[str] = set()
    for message in messages:
        role = message["role"]
        if role == "tool":
            assert message["tool_call_id"] in open_calls, f"orphan tool result: {message}"
            open_calls.discard(message["tool_call_id"])
            continue
        assert not open_calls, f"tool calls without results {open_calls} before {message}"
        if role == "assistant":
            open_calls = {call["id"] for call in message.get("tool_calls") or []}
            assert message.get("content") or open_calls, f"empty assistant message: {message}"
    assert not open_calls, f"tool calls without results: {open_calls}"


def assert_wire_resendable(request_json: dict[str, Any], style: str) -> None:
    """What actually went over the wire for a follow-up is well formed for the style."""
    messages = request_json["messages"]
    if style == "openai":
        for m in messages:
            assert "interrupted" not in m and "is_error" not in m, m
        assert_resendable(messages, messages[-1]["content"])
        return
    roles = [m["role"] for m in messages]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:], strict=False))
    for i, m in enumerate(messages):
        uses = [b["id"] for b in m["content"] if b.get("type") == "tool_use"]
        if uses:
            results = [
                b["tool_use_id"]
                for b in messages[i + 1]["content"]
                if b.get("type") == "tool_result"
            ]
            assert sorted(results) == sorted(uses), (m, messages[i + 1])


class Trigger:
    """Sets a cancel event once, remembering when (time.monotonic, as the stub uses)."""

    def __init__(self, cancel: asyncio.Event) -> None:
        self.cancel = cancel
        self.at: float | None = None

    def fire(self) -> None:
        if self.at is None:
            self.at = time.monotonic()
            self.cancel.set()


def tap_transport(client: Client, on_item: Callable[[TransportReply], None]) -> None:
    """Call `on_item(reply)` after the loop has fully handled each item the
    transport hands it (the loop pulls the next item only when it is done with one).

    Used only where an entry point gives the caller no event of its own to react to
    (Conversation.send, and retries seen through ask) - so a test can cancel at an exact
    point instead of sleeping and hoping."""
    transport = client.settings.transport
    send = transport.send

    async def tapped(*args: Any, **kwargs: Any):
        async for item in send(*args, **kwargs):
            yield item
            on_item(item)

    transport.send = tapped  # type: ignore[method-assign]


def tap_received(on_data: Callable[[bytes], None]) -> Callable[[], None]:
    """Call `on_data(chunk)` for each piece of a reply's body as the client receives it;
    returns what undoes the tap. For a reply that is not streamed (Conversation.send):
    the transport hands it on only once it is whole, so a test that cancels once part of
    it has come watches here."""
    offer = Channel.offer  # every item is queued through it (`put` too)

    def tapped(channel: Channel, item: tuple[Any, ...]) -> bool:
        queued = offer(channel, item)
        if queued and item[0] == DATA:
            on_data(item[1])
        return queued

    Channel.offer = tapped  # type: ignore[method-assign]

    def undo() -> None:
        Channel.offer = offer  # type: ignore[method-assign]

    return undo


async def wait_disconnect(recorded: Any, timeout: float = WAIT_S) -> float:
    """Wait (off the event loop) for the stub to see the client hang up; its timestamp."""
    assert await asyncio.to_thread(recorded.disconnected.wait, timeout), (
        "the stub never saw the client disconnect"
    )
    assert recorded.disconnected_at is not None
    return recorded.disconnected_at
