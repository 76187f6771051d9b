"""ScriptedTransport: an httpx2 transport that answers requests from a ScriptedModel in a
real style's wire format, so that style's encoding and decoding run without a server: the
anthropic Messages API for a path ending in /messages, the OpenAI Responses API for one
ending in /responses, else openai chat completions (whatever the path: a style of yours
may send them elsewhere)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx2

from ..errors import ProviderError
from ._anthropic_wire import ANTHROPIC_MESSAGES
from ._openai_wire import OPENAI_CHAT
from ._responses_wire import OPENAI_RESPONSES
from ._script import ModelRequest, ScriptedReply, pause
from ._wire_format import WireFormat

# ScriptedModel.answer: records the request and gives its reply, or raises its error
Answer = Callable[[ModelRequest], Awaitable[ScriptedReply]]


class ScriptedTransport(httpx2.AsyncBaseTransport):
    """Answers every POST with what `answer` gives; anything else is a 404."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        wire = _wire_for(request.url.path)
        if request.method != "POST":
            return _failure(wire, ProviderError("the scripted model answers POST only", status=404))
        body = json.loads(await request.aread())
        model = str(body.get("model", ""))
        try:
            scripted = await self.answer(wire.read_request(body))
        except ProviderError as error:
            return _failure(wire, error)
        if body.get("stream"):
            events = _Events(wire.stream(scripted, model))
            return httpx2.Response(
                200, headers={"content-type": "text/event-stream"}, stream=events
            )
        await pause(scripted.delay_s)
        if scripted.error is not None:
            return _failure(wire, scripted.error)
        return httpx2.Response(200, json=wire.whole_reply(scripted, model))


def _wire_for(path: str) -> WireFormat:
    if path.endswith("/messages"):
        return ANTHROPIC_MESSAGES
    if path.endswith("/responses"):
        return OPENAI_RESPONSES
    return OPENAI_CHAT


class _Events(httpx2.AsyncByteStream):
    def __init__(self, events: AsyncIterator[bytes]) -> None:
        self.events = events

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for event in self.events:
            yield event


def _failure(wire: WireFormat, error: ProviderError) -> httpx2.Response:
    headers = {}
    if error.retry_after is not None:
        headers["retry-after-ms"] = str(round(error.retry_after * 1000))
    return httpx2.Response(error.status or 500, headers=headers, json=wire.error_body(error))
