"""What a scripted model is given and what it records: replies as canonical data, the
library's own errors, and the requests the agent sent."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    ContextOverflow,
    ContextSize,
    Overloaded,
    ProviderError,
    RateLimited,
    provider_error,
)
from ..types import AssistantMessage, Message, ToolCall, Usage
from ..wire._common import text_of
from ..wire.base import ToolSpec


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """A tool call the model makes: the tool's `name` and its `arguments` (a dict, or text
    as a model might write it, valid JSON or not); `id` is made up when not given."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def as_tool_call(self, index: int) -> ToolCall:
        args = self.arguments
        return {
            "id": self.id or f"call_{index + 1}",
            "type": "function",
            "function": {
                "name": self.name,
                "arguments": args if isinstance(args, str) else json.dumps(args),
            },
        }


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One model reply. `text` is the answer; a sequence of strings is the chunks it
    streams in, `delay_s` the wait before each chunk (and each tool call) of a stream, or
    before a whole reply.
    `tool_calls`, `reasoning`, `usage` and `finish_reason` as a provider would send them.
    `error`, when set, breaks the reply off after its chunks (a stream failing midway)."""

    text: str | Sequence[str] = ""
    tool_calls: Sequence[ScriptedCall] = ()
    reasoning: str = ""
    usage: Usage | None = None
    finish_reason: str | None = None
    delay_s: float = 0.0
    error: ProviderError | None = None

    @property
    def chunks(self) -> list[str]:
        return [self.text] if isinstance(self.text, str) else list(self.text)

    def message(self) -> AssistantMessage:
        """The reply as the canonical assistant message."""
        text = "".join(self.chunks)
        message: AssistantMessage = {"role": "assistant", "content": text or None}
        if self.tool_calls:
            message["tool_calls"] = [
                call.as_tool_call(index) for index, call in enumerate(self.tool_calls)
            ]
        if self.reasoning:
            message["reasoning"] = self.reasoning
        return message

    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request the agent sent: the canonical `messages` (a copy), the `system` prompt,
    the `tools` offered, the `model` asked for, whether it asked for a `stream`, and the
    `reasoning` level ("on" through the anthropic wire, whose thinking budget names no
    level). Through the transport, `body` is the request's JSON body as the real style
    encoded it (None as the style: nothing was encoded)."""

    model: str
    messages: list[Message]
    system: str | None
    tools: tuple[ToolSpec, ...]
    stream: bool
    reasoning: str = "off"
    body: dict[str, Any] | None = None

    @property
    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.tools]

    @property
    def last_text(self) -> str:
        """The text of the last message sent (the prompt, or a tool's result)."""
        return text_of(self.messages[-1].get("content")) if self.messages else ""


# What a script holds for one request: a reply, a plain string (a text reply), or an error
Scripted = ScriptedReply | str | ProviderError
# A function of the request that makes the reply (FunctionModel's way), maybe async
Responder = Callable[[ModelRequest], Scripted | Awaitable[Scripted]]


def failure(status: int, message: str = "the request failed") -> ProviderError:
    """A failed call of this HTTP status, as the library raises it: the class the status
    says (RateLimited, Overloaded, AuthFailed, ServerError, ...), retried when a server's
    would be."""
    return provider_error(
        f"HTTP {status} from the scripted model: {message}", status=status, provider_message=message
    )


def rate_limited(retry_after: float | None = None) -> RateLimited:
    """An HTTP 429 as the library raises it: retried, after `retry_after` if given."""
    return RateLimited(
        "HTTP 429 from the scripted model: rate limited", status=429, retry_after=retry_after
    )


def overloaded() -> Overloaded:
    """An HTTP 529 as the library raises it: the model is busy; retried."""
    return Overloaded("HTTP 529 from the scripted model: overloaded", status=529)


def context_overflow(used: int | None = None, window: int | None = None) -> ContextOverflow:
    """The prompt did not fit the model's window (`used` of `window` tokens): a client
    with a context policy compacts what it sends and tries once more."""
    return ContextOverflow(
        "HTTP 400 from the scripted model: the prompt is too long for the context window",
        status=400,
        context_overflow=ContextSize(used, window),
    )


async def pause(delay_s: float) -> None:
    """A scripted stream's wait before a chunk."""
    if delay_s > 0:
        await asyncio.sleep(delay_s)
