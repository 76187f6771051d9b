"""Cancel at every point of a run, against the stub endpoint (issue 3, "Cancel" and
acceptance point 2).

Each point is run through every entry point that keeps a transcript: `stream` and `ask`
with a thread `id` (saved to the store) and `Conversation.send` (kept in `.messages`).
Each test checks: the exception, the time from the cancel to the stub seeing the client
hang up (or to the exception, where no response is open), the transcript left behind
(valid to send again, partial text kept and marked), that the saved thread or the
conversation holds that same transcript, and that a follow-up run on it succeeds.

The cancel is always triggered by something that happened, never by a sleep: a text or
retry event, the stub having received the request, or the tools having started. Where no
request is open when the cancel comes (before the run, while tools run, between turns,
after the run), the scripted model stands in for the endpoint.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support.resilience_helpers import (
    THREAD,
    Trigger,
    assert_resendable,
    assert_wire_resendable,
    make_client,
    ok_reply,
    partial_parts,
    sse_has_text,
    tap_received,
    tap_transport,
    text_of_events,
    wait_disconnect,
)
from tests.support.scripted import calling, scripted_client
from tests.support.stub_provider import Reply, StubProvider
from tests.support.waiting import WAIT_S
from toolnexus import Client, ProviderError, RunCancelled, ToolContext, Toolkit, define_tool
from toolnexus._sse import SSEDecoder
from toolnexus.testing import ScriptedModel
from toolnexus.transport import Retrying, StreamEvents

STYLES = ["openai", "anthropic"]


# ----------------------------------------------------------------------------- entry points


class Runner:
    """One entry point: run a prompt, report events to `on_event`, and tell where the
    transcript was kept and how to continue it."""

    name = ""

    def __init__(self, style: str) -> None:
        self.style = style
        self.seen: list[dict[str, Any]] = []  # the events the caller saw

    async def run(
        self, client: Client, prompt: str, toolkit: Toolkit | None, cancel: asyncio.Event, on_event
    ) -> None:
        raise NotImplementedError

    async def saved(self, client: Client) -> list[dict[str, Any]]:
        return await client.conversation_store.get(THREAD)

    async def follow_up(self, client: Client, toolkit: Toolkit | None) -> Any:
        return await client.ask("go on", toolkit, id=THREAD)

    def _see(self, on_event, event: dict[str, Any]) -> None:
        self.seen.append(event)
        on_event(event)


class StreamRunner(Runner):
    name = "stream"

    async def run(self, client, prompt, toolkit, cancel, on_event):
        async for event in client.stream(prompt, toolkit, id=THREAD, cancel=cancel):
            self._see(on_event, event)


class AskRunner(Runner):
    name = "ask"

    async def run(self, client, prompt, toolkit, cancel, on_event):
        # ask shows text through on_text only; retries are watched at the transport.
        tap_transport(
            client, lambda item: isinstance(item, Retrying) and self._see(on_event, item.event)
        )
        await client.ask(
            prompt,
            toolkit,
            id=THREAD,
            cancel=cancel,
            on_text=lambda d: self._see(on_event, {"type": "text", "delta": d}),
        )


class ConversationRunner(Runner):
    name = "conversation"

    def __init__(self, style: str) -> None:
        super().__init__(style)
        self.conversation = None

    async def run(self, client, prompt, toolkit, cancel, on_event):
        def watch(item: object) -> None:
            if isinstance(item, Retrying):
                on_event(item.event)
            elif isinstance(item, StreamEvents) and sse_has_text(self.style, item.events):
                on_event({"type": "text", "delta": None})

        decoder = SSEDecoder()

        def received(data: bytes) -> None:
            if sse_has_text(self.style, decoder.feed(data)):
                on_event({"type": "text", "delta": None})

        tap_transport(client, watch)  # Conversation.send offers no events of its own
        undo = tap_received(received)  # nor does its reply, until it is whole
        try:
            self.conversation = client.conversation(toolkit, cancel=cancel)
            await self.conversation.send(prompt)
        finally:
            undo()

    async def saved(self, client):
        return self.conversation.messages

    async def follow_up(self, client, toolkit):
        self.conversation.cancel.clear()  # the same conversation, its event reset
        return await self.conversation.send("go on")


RUNNERS = [StreamRunner, AskRunner, ConversationRunner]


@pytest.fixture(params=RUNNERS, ids=lambda r: r.name)
def runner_class(request):
    return request.param


async def cancelled_run(
    runner: Runner, client: Client, prompt: str, toolkit, cancel, on_event
) -> tuple[RunCancelled, float]:
    """Run until RunCancelled; the exception and when it arrived."""
    with pytest.raises(RunCancelled) as info:
        await runner.run(client, prompt, toolkit, cancel, on_event)
    return info.value, time.monotonic()


@dataclass(frozen=True)
class Endpoint:
    """What the follow-up check needs of where the requests go: `answer(text)` gives the
    next request that reply, `sent()` the JSON bodies sent so far."""

    answer: Callable[[str], None]
    sent: Callable[[], list[dict[str, Any]]]


def on_stub(stub: StubProvider, style: str) -> Endpoint:
    return Endpoint(
        lambda text: stub.script(ok_reply(style, text)), lambda: [r.json for r in stub.requests]
    )


def on_model(model: ScriptedModel) -> Endpoint:
    return Endpoint(model.add, lambda: [r.body for r in model.requests])


async def check_transcript_and_follow_up(
    runner: Runner, client: Client, endpoint: Endpoint, exc: RunCancelled, prompt: str, toolkit=None
):
    """The transcript is valid, kept where the entry point keeps it, and can go on."""
    messages = exc.result.messages
    assert_resendable(messages, prompt)
    assert await runner.saved(client) == messages
    endpoint.answer("carrying on")
    sent_before = len(endpoint.sent())
    result = await runner.follow_up(client, toolkit)
    assert result.text == "carrying on"
    sent = endpoint.sent()
    assert len(sent) == sent_before + 1
    assert_wire_resendable(sent[-1], runner.style)
    assert result.messages[: len(messages)] == messages
    assert await runner.saved(client) == result.messages


# ----------------------------------------------------------------------------- the points


@pytest.mark.parametrize("style", STYLES)
async def test_cancel_already_set_sends_nothing(scripted, runner_class, style):
    runner = runner_class(style)
    cancel = asyncio.Event()
    cancel.set()
    async with scripted_client(scripted, style) as client:
        exc, _ = await cancelled_run(runner, client, "hello", None, cancel, lambda ev: None)
        assert scripted.requests == []
        assert runner.seen == []
        assert exc.result.messages == [{"role": "user", "content": "hello"}]
        await check_transcript_and_follow_up(runner, client, on_model(scripted), exc, "hello")


@pytest.mark.parametrize("style", STYLES)
async def test_cancel_while_waiting_for_headers(stub, runner_class, style):
    runner = runner_class(style)
    stub.script(Reply.hang())  # accepts the request, never answers
    cancel = asyncio.Event()
    trigger = Trigger(cancel)

    async def cancel_once_the_stub_has_the_request():
        assert await asyncio.to_thread(stub.wait_for_requests, 1)
        trigger.fire()

    async with make_client(stub, style) as client:
        firing = asyncio.create_task(cancel_once_the_stub_has_the_request())
        exc, _ = await cancelled_run(runner, client, "hello", None, cancel, lambda ev: None)
        await firing
        await wait_disconnect(stub.requests[0])  # the stub never hangs up by itself
        assert exc.result.messages == [{"role": "user", "content": "hello"}]
        assert len(stub.requests) == 1  # a cancel is not a failure to retry
        await check_transcript_and_follow_up(runner, client, on_stub(stub, style), exc, "hello")


@pytest.mark.parametrize("style", STYLES)
async def test_cancel_mid_stream_keeps_the_partial_text(stub, runner_class, style):
    runner = runner_class(style)
    stub.script(Reply.hang_after(partial_parts(style, "Once upon a time")))
    cancel = asyncio.Event()
    trigger = Trigger(cancel)

    def on_event(event):
        if event["type"] == "text":
            trigger.fire()

    async with make_client(stub, style) as client:
        exc, _ = await cancelled_run(runner, client, "a story", None, cancel, on_event)
        assert trigger.at is not None
        await wait_disconnect(stub.requests[0])  # the stub never hangs up by itself
        last = exc.result.messages[-1]
        assert last["role"] == "assistant" and last["interrupted"] is True
        assert last["content"] and "Once upon a time".startswith(last["content"])
        if runner.seen:  # what the caller was shown is exactly what was kept
            assert text_of_events(runner.seen) == last["content"]
        assert len(exc.result.messages) == 2
        assert len(stub.requests) == 1
        await check_transcript_and_follow_up(runner, client, on_stub(stub, style), exc, "a story")


@pytest.mark.parametrize("style", STYLES)
async def test_cancel_during_a_backoff_sleep(stub, runner_class, style):
    runner = runner_class(style)
    stub.script(Reply.error(503, "busy", style=style, headers={"Retry-After": "30"}))
    stub.default = ok_reply(style, "unreached")
    cancel = asyncio.Event()
    trigger = Trigger(cancel)
    retries = []

    def on_event(event):
        if event["type"] == "retry":
            retries.append(event)
            trigger.fire()

    async with make_client(stub, style, retries=3) as client:
        exc, raised_at = await cancelled_run(runner, client, "hello", None, cancel, on_event)
        assert [r["delay"] for r in retries] == [30.0]  # it was going to sleep 30 s
        assert raised_at - trigger.at < 30.0  # and did not
        assert len(stub.requests) == 1  # and never sent the retry
        assert exc.result.messages == [{"role": "user", "content": "hello"}]
        stub.default = Reply.error(500, "stub: no scripted reply")
        await check_transcript_and_follow_up(runner, client, on_stub(stub, style), exc, "hello")


class SlowTools:
    """A quick tool, an async tool that waits forever and a sync tool that polls its
    context, each reporting what happened to it."""

    def __init__(self) -> None:
        self.async_started = asyncio.Event()
        self.async_cancelled = False
        self.sync_started = threading.Event()
        self.sync_done = threading.Event()
        self.sync_saw_cancel: bool | None = None

        async def quick() -> str:
            """Answers at once."""
            return "quick done"

        async def slow_async(ctx: ToolContext) -> str:
            """Never finishes on its own."""
            self.async_started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.async_cancelled = True
                raise
            return "slow async finished"

        def slow_sync(ctx: ToolContext) -> str:
            """Blocks its thread until the run is cancelled."""
            self.sync_started.set()
            self.sync_saw_cancel = ctx.cancelled.wait(10)
            self.sync_done.set()
            return "slow sync finished"

        self.toolkit = Toolkit().register(
            define_tool(quick), define_tool(slow_async), define_tool(slow_sync)
        )

    async def both_slow_ones_running(self) -> None:
        await self.async_started.wait()
        assert await asyncio.to_thread(self.sync_started.wait, WAIT_S)


@pytest.mark.parametrize("style", STYLES)
async def test_cancel_while_tools_run(scripted, runner_class, style):
    runner = runner_class(style)
    tools = SlowTools()
    scripted.add(calling(("quick", {}), ("slow_async", {}), ("slow_sync", {})))
    cancel = asyncio.Event()
    trigger = Trigger(cancel)

    async def cancel_once_they_run():
        await tools.both_slow_ones_running()
        trigger.fire()

    async with scripted_client(scripted, style) as client:
        firing = asyncio.create_task(cancel_once_they_run())
        exc, raised_at = await cancelled_run(
            runner, client, "use tools", tools.toolkit, cancel, lambda ev: None
        )
        await firing
        assert raised_at - trigger.at < 10.0  # before the sync tool would give up waiting
        assert tools.async_cancelled is True
        assert await asyncio.to_thread(tools.sync_done.wait, WAIT_S)
        assert tools.sync_saw_cancel is True

        messages = exc.result.messages
        assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "tool"]
        call_ids = [c["id"] for c in messages[1]["tool_calls"]]
        assert [m["tool_call_id"] for m in messages[2:]] == call_ids
        assert messages[2]["content"] == "quick done"  # a finished tool keeps its result
        for message in messages[3:]:
            assert message["is_error"] is True and "interrupted" in message["content"]
        assert len(scripted.requests) == 1
        await check_transcript_and_follow_up(
            runner, client, on_model(scripted), exc, "use tools", tools.toolkit
        )


# ----------------------------------------------------------------------------- around the edges


async def test_cancel_between_turns_keeps_finished_tool_results(scripted):
    """A cancel set by a tool result event (after the tools, before the next model call)
    sends no second request and keeps the whole first turn."""

    async def echo(text: str) -> str:
        """Echo."""
        return text

    toolkit = Toolkit().register(define_tool(echo))
    scripted.add(calling(("echo", {"text": "hi"})))
    cancel = asyncio.Event()
    async with scripted_client(scripted) as client:
        with pytest.raises(RunCancelled) as info:
            async for event in client.stream("go", toolkit, id=THREAD, cancel=cancel):
                if event["type"] == "tool_result":
                    cancel.set()
        messages = info.value.result.messages
        assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
        assert messages[2]["content"] == "hi" and "is_error" not in messages[2]
        assert len(scripted.requests) == 1
        assert await client.conversation_store.get(THREAD) == messages


async def test_a_cancel_after_the_run_ended_changes_nothing(scripted):
    scripted.add("done")
    cancel = asyncio.Event()
    async with scripted_client(scripted) as client:
        result = await client.run("hi", None, cancel=cancel)
        cancel.set()
        assert result.text == "done" and "interrupted" not in result.messages[-1]


async def test_closing_the_stream_mid_answer_hangs_up_at_once(stub):
    """A consumer that stops reading (closes the generator) releases the connection too."""
    stub.script(Reply.hang_after(partial_parts("openai", "Some words here")))
    async with make_client(stub) as client:
        stream = client.stream("hi", None)
        async for event in stream:
            if event["type"] == "text":
                break
        await stream.aclose()
        await wait_disconnect(stub.requests[0])  # the stub never hangs up by itself


async def test_an_error_event_mid_stream_hangs_up_at_once(stub):
    """The endpoint reports an error inside the stream and then keeps the connection
    open: the run raises and the connection is closed, not left to the garbage collector."""
    parts = [
        *partial_parts("openai", "Some text"),
        b'data: {"error": {"message": "upstream failed", "type": "server_error"}}\n\n',
    ]
    stub.script(Reply.hang_after(parts))
    async with make_client(stub) as client:
        with pytest.raises(ProviderError) as info:
            await client.ask("hi", None, id=THREAD, on_text=lambda d: None)
        assert "upstream failed" in str(info.value)
        await wait_disconnect(stub.requests[0])  # the stub never hangs up by itself
        assert (await client.conversation_store.get(THREAD))[-1]["interrupted"] is True
