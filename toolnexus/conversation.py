"""Conversation: a multi-turn chat kept in memory, over anything that runs a prompt (a
Client), so that this module and client.py do not import each other."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from .content import Prompt
from .errors import ToolnexusError
from .tools.toolkit import Toolkit
from .types import Message, RunResult

__all__ = [
    "Conversation",
    "Runner",
]


class Runner(Protocol):
    """What a Conversation needs of its client: `Client.run`."""

    @property
    def run(self) -> Callable[..., Awaitable[RunResult]]: ...


class Conversation:
    """An in-memory multi-turn conversation: each send() continues from `messages`."""

    def __init__(
        self, client: Runner, toolkit: Toolkit, cancel: asyncio.Event | None = None
    ) -> None:
        self.client = client
        self.toolkit = toolkit
        self.cancel = cancel
        self.messages: list[Message] = []

    async def send(
        self, prompt: Prompt, *, schema: dict[str, Any] | None = None, reasoning: str | None = None
    ) -> RunResult:
        try:
            result = await self.client.run(
                prompt,
                self.toolkit,
                history=self.messages,
                cancel=self.cancel,
                schema=schema,
                reasoning=reasoning,
            )
        except ToolnexusError as exc:
            if exc.result is not None:  # keep the turn and whatever partial answer came
                self.messages = exc.result.messages
            raise
        self.messages = result.messages
        return result

    def reset(self) -> None:
        self.messages = []
