"""Subagents: the `task` tool, which hands a sub-task to a fresh context.

Each agent is a system prompt, the tools it may call (a subset of the parent's; read-only
by default) and optionally another client (another model). A call runs a nested agent loop
with the parent's hooks (so its calls are asked about as the parent's are, one question at
a time) and gives the parent model its final answer. While it runs, each of its tool calls
is reported as progress ("↳ read_file: src/x.py"). `stop_running()` stops the subagents
running now: each returns what it had said, marked as stopped, and the parent run goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._callbacks import maybe_await
from .._loop import TOOL_USAGE_KEY, agent_loop
from ..errors import RunCancelled, ToolnexusError
from ..types import Message, Usage
from ..wire._common import text_of
from .tool import Tool, ToolContext, ToolResult
from .toolkit import Toolkit

if TYPE_CHECKING:
    from .._loop import LoopSettings
    from ..client import Client

__all__ = [
    "Agent",
    "SubagentRun",
    "Subagents",
]

TASK_TOOL = "task"
READ_ONLY_TOOLS = ("read_file", "list_dir", "grep", "glob", "fetch_url")
STOPPED_NOTE = "[stopped: the user stopped this subagent before it finished]"
TIME_LIMIT_S = 3600.0  # a subagent works through many model calls: not a tool's 120 s


@dataclass(frozen=True)
class Agent:
    """One kind of subagent. `tools` None: READ_ONLY_TOOLS; `model` None: the parent's."""

    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None
    model: str | None = None


@dataclass
class SubagentRun:
    """What one call of the task tool did: its whole transcript, kept apart from the
    parent's messages."""

    call_id: str
    agent: str
    model: str
    messages: list[Message] = field(default_factory=list)
    usage: Usage = field(default_factory=dict)
    stopped: bool = False


KeepRun = Callable[[SubagentRun], Awaitable[None]]


class Subagents:
    """The task tool's engine. `client_for(agent)` gives the client a subagent talks
    through (its settings' hooks are the parent's approval); `toolkit` is the parent's,
    whose tools the agents may use; `keep` hears of each finished run (its transcript).
    At most `max_parallel` subagents run at once, the others wait their turn."""

    def __init__(
        self,
        agents: Sequence[Agent],
        toolkit: Toolkit,
        client_for: Callable[[Agent], Awaitable[Client] | Client],
        *,
        max_parallel: int = 3,
        keep: KeepRun | None = None,
    ) -> None:
        self.agents = {agent.name: agent for agent in agents}
        self.toolkit = toolkit
        self.client_for = client_for
        self.max_parallel = max_parallel
        self.keep = keep
        self._slots: asyncio.Semaphore | None = None
        self._running: dict[str, asyncio.Event] = {}  # call id -> its cancel event

    @property
    def running(self) -> bool:
        return bool(self._running)

    def stop_running(self) -> bool:
        """Stop every subagent running now; whether there was any."""
        stopping = [event for event in self._running.values() if not event.is_set()]
        for event in stopping:
            event.set()
        return bool(stopping)

    def tool(self) -> Tool:
        """The `task` tool, offering each agent as a choice."""
        choices = "\n".join(f"- {a.name}: {a.description}" for a in self.agents.values())
        return Tool(
            name=TASK_TOOL,
            description=(
                "Hand a self-contained sub-task to a subagent with a fresh context; it "
                "works with its own tools and answers with a report, which is what you "
                "get back. Several may run at once. Agents:\n" + choices
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "agent": {"type": "string", "enum": list(self.agents)},
                    "prompt": {
                        "type": "string",
                        "description": "the sub-task, with everything the agent needs to know",
                    },
                },
                "required": ["agent", "prompt"],
            },
            fn=self._call,
            source="subagent",
            context_param="ctx",
            timeout=TIME_LIMIT_S,
        )

    def tools_of(self, agent: Agent) -> Toolkit:
        """The parent's tools that `agent` may call (never the task tool itself)."""
        names = agent.tools if agent.tools is not None else READ_ONLY_TOOLS
        toolkit = Toolkit(timeout=self.toolkit.timeout, max_output=self.toolkit.max_output)
        for name in dict.fromkeys(names):
            tool = self.toolkit.get(name)
            if tool is not None and name != TASK_TOOL:
                toolkit.register(tool)
        toolkit.workspace = self.toolkit.workspace
        return toolkit

    async def _call(self, agent: str, prompt: str, ctx: ToolContext) -> ToolResult:
        chosen = self.agents.get(agent)
        if chosen is None:
            known = ", ".join(self.agents) or "none"
            return ToolResult(f"error: no agent named {agent!r} (agents: {known})", is_error=True)
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_parallel)
        stop = asyncio.Event()
        self._running[ctx.call_id] = stop
        try:
            async with self._slots:
                if stop.is_set():
                    return ToolResult(STOPPED_NOTE, is_error=True)
                return await self._run(chosen, prompt, ctx, stop)
        finally:
            self._running.pop(ctx.call_id, None)

    async def _run(
        self, agent: Agent, prompt: str, ctx: ToolContext, stop: asyncio.Event
    ) -> ToolResult:
        try:
            client = await maybe_await(self.client_for(agent))
        except ToolnexusError as exc:
            return ToolResult(f"error: {exc}", is_error=True)
        # its own system prompt; a context window of its own (no compaction shared)
        settings = dataclasses.replace(client.settings, system_prompt=agent.prompt, context=None)
        run = SubagentRun(ctx.call_id, agent.name, settings.model)
        ctx.report(f"{agent.name}: {_gist({'prompt': prompt})}")
        working = asyncio.ensure_future(self._work(settings, agent, prompt, ctx, stop, run))
        try:
            failure = await asyncio.shield(working)
        except asyncio.CancelledError:  # the parent run stopped: this one stops as it would
            stop.set()
            await asyncio.gather(working, return_exceptions=True)
            await self._kept(run)
            raise
        await self._kept(run)
        if failure is not None:
            return ToolResult(f"error: the subagent failed: {failure}", is_error=True)
        metadata: dict[str, Any] = {TOOL_USAGE_KEY: run.usage}
        if run.stopped:
            said = _last_words(run.messages)
            return ToolResult(f"{said}\n{STOPPED_NOTE}" if said else STOPPED_NOTE, True, metadata)
        answer = text_of(run.messages[-1].get("content")) if run.messages else ""
        return ToolResult(answer or "(the subagent gave no answer)", metadata=metadata)

    async def _work(
        self,
        settings: LoopSettings,
        agent: Agent,
        prompt: str,
        ctx: ToolContext,
        stop: asyncio.Event,
        run: SubagentRun,
    ) -> ToolnexusError | None:
        """Run the subagent's loop, its transcript and usage into `run`; the error it
        failed with, if it failed (stopped is not failed)."""
        events = agent_loop(settings, prompt, self.tools_of(agent), cancel=stop)
        try:
            async with contextlib.aclosing(events):
                async for event in events:
                    if event["type"] == "tool_call":
                        ctx.report(f"↳ {event['name']}: {_gist(event['args'])}")
                    elif event["type"] == "done":
                        run.messages = event["result"].messages
                        run.usage = event["result"].usage
        except RunCancelled as exc:
            run.stopped = True
            _take_partial(run, exc)
        except ToolnexusError as exc:
            _take_partial(run, exc)
            return exc
        return None

    async def _kept(self, run: SubagentRun) -> None:
        if self.keep is not None and run.messages:
            await self.keep(run)


def _take_partial(run: SubagentRun, exc: ToolnexusError) -> None:
    if exc.result is not None:
        run.messages = exc.result.messages
        run.usage = exc.result.usage


def _last_words(messages: list[Message]) -> str:
    """The last thing the subagent said (a partial answer), if anything."""
    for message in reversed(messages):
        if message.get("role") == "assistant":
            said = text_of(message.get("content"))
            if said.strip():
                return said.strip()
    return ""


def _gist(args: Any) -> str:
    """A call's arguments in a few words: its first text argument (a path, a pattern)."""
    if isinstance(args, dict):
        for value in args.values():
            if isinstance(value, str) and value:
                return " ".join(value.split())[:80]
    return ""
