"""Deadlines (issue 3, "Deadlines" and acceptance point 3): the read-idle and connect
timeouts and the whole-run `timeout_ms` while a request is open, against the stub endpoint;
`timeout_ms` over a backoff or a tool, and per-tool timeouts, on the scripted model.

The configured timeouts are small (a few hundred ms). Elapsed time is bounded below (the
limit was waited for) and, where at all, above only by what would have happened without the
limit (a backoff of 30 s or more): a busy machine is slow, and a limit that does not work
leaves the run hanging until the suite's own timeout fails the test.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from tests.support.resilience_helpers import (
    THREAD,
    assert_resendable,
    assert_wire_resendable,
    collect,
    make_client,
    ok_reply,
    partial_parts,
    text_of_events,
    wait_disconnect,
)
from tests.support.scripted import calling, scripted_client
from tests.support.stub_provider import Reply, llama_slots
from tests.support.waiting import WAIT_S
from toolnexus import (
    ProviderError,
    Retries,
    RunTimeout,
    ToolContext,
    Toolkit,
    create_client,
    create_toolkit,
    define_tool,
)
from toolnexus.testing import ScriptedModel, failure

IDLE_S = 0.3


# ----------------------------------------------------------------------------- idle timeout


@pytest.mark.parametrize("style", ["openai", "anthropic"])
async def test_a_server_that_never_answers_fails_within_the_idle_timeout(stub, style):
    stub.script(Reply.hang())
    async with make_client(stub, style, retries=0, idle_timeout_s=IDLE_S) as client:
        started = time.monotonic()
        events, exc = await collect(client, id=THREAD)
        elapsed = time.monotonic() - started
        assert isinstance(exc, ProviderError)
        assert "idle timeout" in str(exc) and f"{IDLE_S:g} s" in str(exc)
        assert IDLE_S * 0.9 <= elapsed
        assert events == []
        await wait_disconnect(stub.requests[0])
        # the prompt is kept, marked failed (never sent again by itself), with its error
        assert exc.result.messages == [
            {"role": "user", "content": "hi", "dropped": "failed", "failed_with": str(exc)}
        ]
        assert await client.conversation_store.get(THREAD) == exc.result.messages


async def test_an_idle_timeout_before_the_response_is_retried(stub):
    stub.script(Reply.hang(), ok_reply("openai", "awake now"))
    async with make_client(stub, retries=1, idle_timeout_s=IDLE_S) as client:
        events, exc = await collect(client)
    assert exc is None and events[-1]["result"].text == "awake now"
    [retry] = [e for e in events if e["type"] == "retry"]
    assert (retry["attempt"], retry["max_attempts"]) == (1, 1)
    assert retry["reason"] == f"the server sent nothing for {IDLE_S:g} s"
    assert stub.requests[0].disconnected.is_set()  # the hung request was hung up on
    assert len(stub.requests) == 2


async def test_after_an_idle_timeout_a_busy_llama_cpp_is_waited_for_before_the_retry(stub):
    """Repro: llama.cpp with one slot reads in a long prompt for longer than the idle
    timeout (60 s); toolnexus gave up and sent the same request again at once. The slot
    was still reading in the first (a server cannot stop that for a client that left),
    so the retry queued behind it and timed out as well. Now, before the retry, the server
    is asked (llama.cpp's /slots) and the retry waits until its slot is free."""
    seen: list[str] = []

    def handler(rec):
        seen.append(f"{rec.method} {rec.path}")
        if rec.path == "/slots":  # busy for the first two questions, then free
            return Reply.json(llama_slots([seen.count("GET /slots") <= 2]))
        if len(stub.requests) == 1:
            return Reply.hang()
        return ok_reply("openai", "done at last")

    stub.handler = handler
    retries = Retries(count=1, base_s=0.001, busy_poll_s=0.01)
    async with make_client(stub, retries=retries, idle_timeout_s=IDLE_S) as client:
        events, exc = await collect(client)
    assert exc is None and events[-1]["result"].text == "done at last"
    post = "POST /v1/chat/completions"
    assert seen == [post, "GET /slots", "GET /slots", "GET /slots", post]
    retried = [(e["attempt"], e["reason"]) for e in events if e["type"] == "retry"]
    busy = "the server is still working on an earlier request (1 of 1 slot busy)"
    idle = f"the server sent nothing for {IDLE_S:g} s"
    assert retried == [(1, busy), (1, busy), (1, idle)]


async def test_every_attempt_hanging_ends_after_retries(stub):
    stub.default = Reply.hang()
    async with make_client(stub, retries=1, idle_timeout_s=IDLE_S) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "idle timeout" in str(exc)
    assert len([e for e in events if e["type"] == "retry"]) == 1
    assert len(stub.requests) == 2


async def test_a_stream_that_stalls_mid_answer_fails_and_keeps_the_text(stub):
    stub.script(Reply.hang_after(partial_parts("openai", "Half of it")))
    stub.default = ok_reply("openai", "unreached")
    async with make_client(stub, retries=2, idle_timeout_s=IDLE_S) as client:
        events, exc = await collect(client, "q", id=THREAD)
        assert isinstance(exc, ProviderError) and "idle timeout" in str(exc)
        assert text_of_events(events) == "Half of it"
        assert len(stub.requests) == 1  # output had begun: not retried
        messages = exc.result.messages
        assert messages[-1] == {"role": "assistant", "content": "Half of it", "interrupted": True}
        assert_resendable(messages, "q")
        assert await client.conversation_store.get(THREAD) == messages
        await wait_disconnect(stub.requests[0])


# ----------------------------------------------------------------------------- connect timeout


async def test_a_connect_that_never_completes_hits_the_connect_timeout():
    """A listener whose accept queue is full drops new SYNs (Linux), so connecting hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            try:
                filler.connect(("127.0.0.1", port))
            except BlockingIOError:
                pass
            fillers.append(filler)
        client = create_client(
            base_url=f"http://127.0.0.1:{port}/v1",
            style="openai",
            model="m",
            api_key="k",
            retries=0,
            connect_timeout_s=IDLE_S,
            idle_timeout_s=60,
        )
        async with client:  # without the connect timeout, this hangs for the 60 s idle one
            with pytest.raises(ProviderError) as info:
                await client.run("hi", None)
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
    assert "could not connect" in str(info.value)


# ----------------------------------------------------------------------------- timeout_ms


async def test_timeout_ms_while_waiting_for_headers_raises_run_timeout(stub):
    stub.script(Reply.hang())
    async with make_client(stub, timeout_ms=300, idle_timeout_s=60) as client:
        started = time.monotonic()
        events, exc = await collect(client, id=THREAD)
        elapsed = time.monotonic() - started
        assert isinstance(exc, RunTimeout) and "timeout_ms" in str(exc)
        assert 0.25 <= elapsed
        await wait_disconnect(stub.requests[0])
        # the prompt is kept, marked failed (never sent again by itself), with its error
        assert exc.result.messages == [
            {"role": "user", "content": "hi", "dropped": "failed", "failed_with": str(exc)}
        ]
        assert await client.conversation_store.get(THREAD) == exc.result.messages
        assert len(stub.requests) == 1  # a deadline is not retried


async def test_timeout_ms_mid_stream_keeps_the_partial_text(stub):
    stub.script(Reply.hang_after(partial_parts("anthropic", "So far so good")))
    async with make_client(stub, "anthropic", timeout_ms=300, idle_timeout_s=60) as client:
        conversation = client.conversation(None)
        with pytest.raises(RunTimeout) as info:
            await conversation.send("q")
        assert conversation.messages == info.value.result.messages
        assert conversation.messages[-1] == {
            "role": "assistant",
            "content": "So far so good",
            "interrupted": True,
        }
        await wait_disconnect(stub.requests[0])
        stub.script(ok_reply("anthropic", "and the rest"))
        assert (await conversation.send("go on")).text == "and the rest"
        assert_wire_resendable(stub.requests[-1].json, "anthropic")


async def test_timeout_ms_cuts_a_long_backoff():
    model = ScriptedModel(respond=lambda request: failure(500, "down"))
    async with scripted_client(model, retries=3, retry_base_ms=60_000, timeout_ms=300) as client:
        started = time.monotonic()
        events, exc = await collect(client)
        elapsed = time.monotonic() - started
    assert isinstance(exc, RunTimeout)
    assert [e["type"] for e in events] == ["retry"] and events[0]["delay"] >= 30
    assert elapsed < events[0]["delay"] and len(model.requests) == 1  # the backoff was cut


async def test_timeout_ms_while_a_tool_runs(scripted):
    cancelled = asyncio.Event()

    async def wait_forever() -> str:
        """Never returns."""
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "unreachable"

    toolkit = Toolkit().register(define_tool(wait_forever))
    scripted.add(calling(("wait_forever", {})))
    async with scripted_client(scripted, timeout_ms=300) as client:
        events, exc = await collect(client, "go", toolkit, id=THREAD)
        assert isinstance(exc, RunTimeout) and cancelled.is_set()
        messages = exc.result.messages
        assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
        assert messages[2]["is_error"] is True
        assert_resendable(messages, "go")
        assert await client.conversation_store.get(THREAD) == messages


async def test_a_run_within_timeout_ms_is_unaffected(scripted):
    scripted.add("quick")
    async with scripted_client(scripted, timeout_ms=5_000) as client:
        assert (await client.run("hi", None)).text == "quick"


# ----------------------------------------------------------------------------- tool timeouts


async def test_a_hung_async_tool_is_stopped_by_its_timeout(scripted):
    async def hang() -> str:
        """Never returns."""
        await asyncio.sleep(3600)
        return "unreachable"

    toolkit = Toolkit().register(define_tool(hang, timeout=0.2))
    scripted.add(calling(("hang", {})), "it hung")
    async with scripted_client(scripted) as client:
        events, exc = await collect(client, "try it", toolkit)
    assert exc is None
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert result["is_error"] is True and "timed out after 0.2 s" in result["output"]
    assert events[-1]["result"].text == "it hung"  # the run went on; the model was told
    tool_message = scripted.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool" and "timed out" in tool_message["content"]


async def test_a_hung_sync_tool_is_stopped_by_the_toolkit_timeout(scripted):
    stopped = threading.Event()

    def block(ctx: ToolContext) -> str:
        """Blocks until told to stop."""
        if ctx.cancelled.wait(30):
            stopped.set()
        return "late"

    toolkit = await create_toolkit(timeout=0.2)
    toolkit.register(define_tool(block))
    scripted.add(calling(("block", {})), "ok")
    async with scripted_client(scripted, "anthropic") as client:
        result = await client.run("try it", toolkit)
    assert result.text == "ok"
    assert result.messages[2]["is_error"] is True
    assert "timed out after 0.2 s" in result.messages[2]["content"]
    assert await asyncio.to_thread(stopped.wait, WAIT_S)  # the thread was told, and let go
