"""A stream ends at its protocol's last event, as the official SDKs end it: `data: [DONE]`
(openai-python's `Stream.__stream__` stops at "[DONE]"), `message_stop` (the Messages
streaming docs: "a final message_stop event") and `response.completed`, `response.failed`
or `response.incomplete` (the Responses streaming events). A server or proxy that keeps
the connection open after it does not keep the run waiting; the response is closed
unread, so its connection is never taken again for the next request."""

from __future__ import annotations

import pytest

from tests.support.resilience_helpers import collect, make_client
from tests.support.stub_provider import (
    Reply,
    anthropic_stream,
    openai_stream,
    responses_stream,
)
from toolnexus import ProviderError

# Long enough that a run waiting for the server to close would fail on the idle timeout
# (the stub never closes), not pass by luck.
IDLE_S = 60


def ended_reply(style: str, end: str, text: str) -> Reply:
    """A streamed answer whose connection stays open after its last event."""
    if style == "openai":
        return openai_stream(text, keep_open=True)
    if style == "anthropic":
        return anthropic_stream(text, keep_open=True)
    return responses_stream(text, end=end, keep_open=True)


CASES = [
    ("openai", "[DONE]"),
    ("anthropic", "message_stop"),
    ("responses", "completed"),
    ("responses", "incomplete"),
]


@pytest.mark.parametrize(("style", "end"), CASES, ids=[f"{s}-{e}" for s, e in CASES])
async def test_a_stream_ends_at_its_last_event_while_the_connection_stays_open(stub, style, end):
    stub.script(ended_reply(style, end, "first answer"), ended_reply(style, end, "second"))
    async with make_client(stub, style, retries=0, idle_timeout_s=IDLE_S) as client:
        events, exc = await collect(client, "one")
        assert exc is None, exc
        assert events[-1]["result"].text == "first answer"
        # the response was closed unread: the stub sees the client hang up
        assert stub.requests[0].disconnected.wait(10)
        events, exc = await collect(client, "two")
    assert exc is None and events[-1]["result"].text == "second"
    # the connection the stream ended on early is not reused for the next request
    assert stub.requests[1].connection != stub.requests[0].connection


async def test_a_stream_that_ends_with_its_connection_keeps_the_connection_for_the_next(stub):
    """The control: a response read to its end leaves a connection the pool takes again."""
    stub.script(openai_stream("first"), openai_stream("second"))
    async with make_client(stub, retries=0) as client:
        await collect(client, "one")
        events, exc = await collect(client, "two")
    assert exc is None and events[-1]["result"].text == "second"
    assert stub.requests[1].connection == stub.requests[0].connection


async def test_a_failed_response_ends_the_stream_with_its_error_while_the_connection_stays_open(
    stub,
):
    """`response.failed` is a last event too: its error ends the run at once."""
    failed = {
        "type": "response.failed",
        "sequence_number": 1,
        "response": {
            "id": "resp_1",
            "object": "response",
            "status": "failed",
            "error": {"code": "invalid_prompt", "message": "The prompt was refused."},
            "output": [],
        },
    }
    created = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1"}}
    stub.script(
        Reply.sse([("response.created", created), ("response.failed", failed)], keep_open=True)
    )
    async with make_client(stub, "responses", retries=0, idle_timeout_s=IDLE_S) as client:
        _, exc = await collect(client)
    assert isinstance(exc, ProviderError)
    assert exc.provider_message == "The prompt was refused."
    assert stub.requests[0].disconnected.wait(10)
