"""ScriptedModel: a WireStyle that answers in this process from a script (or a function of
the request), recording every request; no HTTP at all."""

from __future__ import annotations

import copy
import inspect
import json
from collections import deque
from collections.abc import AsyncGenerator, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..errors import ProviderError, ToolnexusError
from ..events import FILTERED, MAX_TOKENS, empty_usage, reasoning_event, text_event
from ..types import AssistantMessage, IncompleteReason, Message, OutputEvent, ToolCall
from ..wire.base import (
    NO_OPTIONS,
    Answerer,
    ModelReply,
    RequestOptions,
    StreamAssembler,
    ToolSpec,
    WireStyle,
)
from ._script import ModelRequest, Responder, Scripted, ScriptedReply, pause

if TYPE_CHECKING:
    from ._transport import ScriptedTransport


class ScriptedModel(WireStyle):
    """A model for tests: each request gets the next of `replies` (a ScriptedReply, a
    string for a text reply, or a ProviderError to fail that call with), or what
    `respond(request)` makes of it. `requests` holds every request it got.

    Pass it as the style (`create_client(style=model, ...)`, or a name registered for
    it) and nothing goes over HTTP; or speak a real style through `model.transport()`."""

    name: ClassVar[str] = "scripted"
    key_env: ClassVar[str] = ""  # no key: nothing is sent anywhere
    unfinished_reasons: ClassVar[dict[str, IncompleteReason]] = {
        "length": MAX_TOKENS,
        "content_filter": FILTERED,
    }

    def __init__(self, replies: Iterable[Scripted] = (), *, respond: Responder | None = None):
        self._script: deque[Scripted] = deque(replies)
        self._respond = respond
        self.requests: list[ModelRequest] = []

    def add(self, *replies: Scripted) -> None:
        """More replies, after those still in the script."""
        self._script.extend(replies)

    @property
    def unused(self) -> int:
        """How many scripted replies no request took yet."""
        return len(self._script)

    async def answer(self, request: ModelRequest) -> ScriptedReply:
        """Record `request` and give its reply; a scripted error is raised."""
        self.requests.append(request)
        if self._respond is not None:
            made = self._respond(request)
            scripted = await made if inspect.isawaitable(made) else made
        elif self._script:
            scripted = self._script.popleft()
        else:
            raise ToolnexusError(
                f"the scripted model has no reply left for request {len(self.requests)}"
            )
        if isinstance(scripted, ProviderError):
            raise scripted
        return ScriptedReply(text=scripted) if isinstance(scripted, str) else scripted

    def transport(self) -> ScriptedTransport:
        """An httpx2 transport answering from this script in a real style's wire format
        (anthropic's Messages API at a path ending in /messages, the OpenAI Responses API
        at one ending in /responses, else openai's chat completions), for
        `create_client(style="openai", http_client=httpx2.AsyncClient(
        transport=model.transport()))`: the style's real encoding runs, and no server."""
        from ._transport import ScriptedTransport

        return ScriptedTransport(self.answer)

    # -- the style: canonical requests in, scripted replies out

    def endpoint(self, base_url: str) -> str:
        return base_url

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {}

    def answerer(self) -> Answerer:
        return self

    def tool_schemas(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return [
            {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
            for tool in tools
        ]

    def build_body(
        self,
        *,
        model: str,
        messages: list[Message],
        system: str | None,
        tools: list[dict[str, Any]],
        stream: bool,
        options: RequestOptions = NO_OPTIONS,
    ) -> dict[str, Any]:
        return {
            "model": model,
            "messages": copy.deepcopy(messages),  # as sent: the thread grows on
            "system": system,
            "tools": tools,
            "stream": stream,
            "reasoning": options.reasoning,
        }

    async def reply(self, body: dict[str, Any]) -> ScriptedReply:
        scripted = await self.answer(_canonical_request(body))
        await pause(scripted.delay_s)
        if scripted.error is not None:
            raise scripted.error
        return scripted

    async def events(self, body: dict[str, Any]) -> AsyncGenerator[tuple[str, str]]:
        scripted = await self.answer(_canonical_request(body))
        if scripted.reasoning:
            yield "reasoning", scripted.reasoning
        for chunk in scripted.chunks:
            await pause(scripted.delay_s)
            if chunk:
                yield "text", chunk
        for index, call in enumerate(scripted.tool_calls):
            await pause(scripted.delay_s)
            yield "tool_call", json.dumps(call.as_tool_call(index))
        if scripted.error is not None:
            raise scripted.error
        usage = scripted.usage or empty_usage()
        yield "end", json.dumps({"usage": usage, "finish_reason": scripted.finish()})

    def read_reply(self, data: Any) -> ModelReply:
        scripted: ScriptedReply = data
        return ModelReply(scripted.message(), scripted.usage or empty_usage(), scripted.finish())

    def new_stream(self) -> StreamAssembler:
        return _ScriptedStream()

    def error_message(self, data: Any) -> str | None:
        return None

    def stream_error(self, event: str, data: str) -> ProviderError | None:
        return None  # a scripted error is raised as itself


class _ScriptedStream(StreamAssembler):
    """A scripted stream's events back into one reply."""

    style = "scripted"

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCall] = []
        self.end: dict[str, Any] | None = None

    def read(self, event: str, data: str) -> list[OutputEvent]:
        if event == "text":
            self.text.append(data)
            return [text_event(data)]
        if event == "reasoning":
            self.reasoning.append(data)
            return [reasoning_event(data)]
        if event == "tool_call":
            self.calls.append(json.loads(data))
        elif event == "end":
            self.end = json.loads(data)
        return []

    def complete(self) -> ModelReply:
        if self.end is None:
            raise ProviderError("the scripted stream ended before its reply was complete")
        message: AssistantMessage = {"role": "assistant", "content": self.partial_text() or None}
        if self.calls:
            message["tool_calls"] = self.calls
        if self.reasoning:
            message["reasoning"] = "".join(self.reasoning)
        return ModelReply(message, self.end["usage"], self.end["finish_reason"])

    def partial_text(self) -> str:
        return "".join(self.text)


def _canonical_request(body: dict[str, Any]) -> ModelRequest:
    return ModelRequest(
        model=body["model"],
        messages=body["messages"],
        system=body["system"],
        tools=tuple(ToolSpec(**tool) for tool in body["tools"]),
        stream=body["stream"],
        reasoning=body["reasoning"],
    )
