"""Toolkit: the set of tools one run may call, and how they are executed.

Tools are registered once, or come from sources whose tools come and go (the servers of an
MCP config: offered while they run): `tools()` is what is offered now.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..mcp.server import ServerStatus
from ..wire import ToolSpec, wire_style
from ._clock import counted
from .tool import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT_S, Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from .workspace import Workspace

__all__ = [
    "ToolSource",
    "Toolkit",
    "create_toolkit",
]


class ToolSource(Protocol):
    """Tools that come and go (see mcp/pool.py, the one kind there is)."""

    wait: float | None  # seconds a model call waits for what is starting (None: no limit)

    def tools(self) -> list[Tool]:
        """The tools offered now."""
        ...

    def start(self) -> None:
        """Begin to start what it holds (in the background); again, it does nothing."""
        ...

    def unavailable(self, name: str) -> str | None:
        """Why `name`, one of its tools, is not offered now; None if it is not one."""
        ...

    def starting(self) -> list[str]:
        """What a model call should wait for (by name) before it is made."""
        ...

    async def started(self) -> None:
        """Returns once nothing of `starting()` is starting any more."""
        ...

    def news(self) -> list[str]:
        """What the model should be told about tools that went or came, once each."""
        ...

    def statuses(self) -> list[ServerStatus]:
        """How each part of it is doing (an MCP server's ServerStatus)."""
        ...

    def instructions(self) -> list[str]:
        """What its parts say of how to use them, for the system prompt."""
        ...

    async def relisted(self) -> None:
        """Returns once the tools its parts said changed are known again."""
        ...

    def watch(self, watcher: Callable[[Any], None]) -> None:
        """Call `watcher(part)` whenever a part's status changes."""
        ...

    async def close(self) -> None: ...


class Toolkit:
    def __init__(
        self, *, timeout: float = DEFAULT_TIMEOUT_S, max_output: int = DEFAULT_MAX_OUTPUT
    ) -> None:
        self.timeout = timeout
        self.max_output = max_output
        self._tools: dict[str, Tool] = {}
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self.instructions: list[str] = []  # added to the system prompt (e.g. the skills)
        self.sources: list[ToolSource] = []
        self.workspace: Workspace | None = None  # where the built-in tools act, if any

    def register(self, *tools: Tool) -> Toolkit:
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"a tool named {tool.name!r} is already registered")
            self._tools[tool.name] = tool
        return self

    def use_builtins(self, which: bool | list[str], workspace: Any = None) -> None:
        """Offer the built-in tools `which` (True: all of them, `[]`: none) acting in
        `workspace` (a `toolnexus.tools.workspace.Workspace`, or a folder; default the
        working folder) in place of the built-in tools offered now."""
        tools: list[Tool] = []
        if which:
            from .builtins import builtin_tools
            from .workspace import Workspace

            if not isinstance(workspace, Workspace):
                workspace = Workspace(workspace)
            tools = builtin_tools(which, workspace)
        others = {name: tool for name, tool in self._tools.items() if tool.source != "builtin"}
        for tool in tools:
            if tool.name in others:
                raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools = {**{tool.name: tool for tool in tools}, **others}
        self.workspace = workspace if tools else None

    def add_source(self, source: ToolSource) -> Toolkit:
        """Offer `source`'s tools while it offers them; it is closed with the toolkit."""
        self.sources.append(source)
        self.on_close(source.close)
        return self

    def tools(self) -> list[Tool]:
        """The tools offered now."""
        return [*self._tools.values(), *(t for source in self.sources for t in source.tools())]

    def get(self, name: str) -> Tool | None:
        found = self._tools.get(name)
        if found is None:
            found = next((t for t in self.tools() if t.name == name), None)
        return found

    def __len__(self) -> int:
        return len(self.tools())

    @property
    def servers(self) -> list[ServerStatus]:
        """The status of each MCP server (of every source)."""
        return [status for source in self.sources for status in source.statuses()]

    def starting(self) -> list[str]:
        """The tool sources a model call waits for, by name (MCP servers starting)."""
        return [name for source in self.sources for name in source.starting()]

    async def started(self) -> None:
        """Returns once none of `starting()` is starting any more."""
        await asyncio.gather(*(source.started() for source in self.sources))

    def start_sources(self) -> None:
        """Start the tool sources that were not started (see `create_toolkit`)."""
        for source in self.sources:
            source.start()

    def start_wait(self) -> float | None:
        """The longest a model call waits for what is starting (None: no limit)."""
        waits = [source.wait for source in self.sources]
        return None if None in waits else max(w for w in waits if w is not None)

    def still_starting(self) -> list[str]:
        """The MCP servers still starting, by name."""
        return [server.name for server in self.servers if server.state.state == "starting"]

    def news(self) -> list[str]:
        """What the model should hear about tools that went or came since it last heard."""
        return [note for source in self.sources for note in source.news()]

    def all_instructions(self) -> list[str]:
        """What goes into the system prompt: `instructions`, then each source's."""
        return [*self.instructions, *(i for source in self.sources for i in source.instructions())]

    def relisted(self) -> asyncio.Future[Any]:
        """Done once the tool sources that said their tools changed list them again (done
        already when there are no sources: a model turn then waits for nothing)."""
        return asyncio.gather(*(source.relisted() for source in self.sources))

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Run `closer` when the toolkit closes (tool sources that hold processes use it)."""
        self._closers.append(closer)

    async def execute(
        self, name: str, args: dict[str, Any], context: ToolContext | None = None
    ) -> ToolResult:
        """Run one tool. Never raises for the tool's own failures: those become error
        results the model can read. Cancellation of the caller propagates."""
        tool = self.get(name)
        if tool is None:
            why = next((w for s in self.sources if (w := s.unavailable(name))), None)
            if why is not None:
                return ToolResult(f"error: {name} is not available now: {why}", is_error=True)
            known = ", ".join(sorted(t.name for t in self.tools())) or "none"
            return ToolResult(f"error: unknown tool {name!r} (available: {known})", is_error=True)
        timeout = tool.timeout if tool.timeout is not None else self.timeout
        limit = asyncio.timeout(timeout)
        try:
            async with limit:
                with counted(limit):
                    result = await tool.call(args, context or ToolContext())
        except Exception as exc:
            # A TimeoutError the tool raised itself (a socket, a client library) is the
            # tool's own failure, not the toolkit's limit: say what really happened.
            if not (isinstance(exc, TimeoutError) and limit.expired()):
                return ToolResult(f"error: {type(exc).__name__}: {exc}", is_error=True)
            said = f"error: tool {name!r} timed out after {timeout:g} s"
            if context is not None:
                context.cancelled.set()
                printed = str(context.printed)
                if printed.strip():  # kept, as when the run is stopped
                    said += f"; what it printed until then:\n{printed.rstrip()}"
            return ToolResult(said, is_error=True)
        cap = tool.max_output if tool.max_output is not None else self.max_output
        return _capped(result, cap)

    def specs(self) -> list[ToolSpec]:
        """The tools as the model sees them, in no provider's shape (a WireStyle shapes them)."""
        return [ToolSpec(t.name, t.description, t.input_schema) for t in self.tools()]

    def to_openai(self) -> list[dict[str, Any]]:
        return wire_style("openai").tool_schemas(self.specs())

    def to_anthropic(self) -> list[dict[str, Any]]:
        return wire_style("anthropic").tool_schemas(self.specs())

    async def close(self) -> None:
        closers, self._closers = self._closers, []
        for closer in reversed(closers):
            await closer()

    async def __aenter__(self) -> Toolkit:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _capped(result: ToolResult, cap: int) -> ToolResult:
    if len(result.output) <= cap:
        return result
    cut = len(result.output) - cap
    output = f"{result.output[:cap]}\n[output truncated: {cut} more characters]"
    return dataclasses.replace(result, output=output)


async def create_toolkit(
    *,
    functions: Iterable[Callable[..., Any] | str | Path] | None = None,
    skills_dir: str | Path | Sequence[str | Path] | None = None,
    mcp_config: str | Path | dict[str, Any] | None = None,
    builtins: bool | list[str] | None = None,
    workspace: Any = None,
    mcp_timeout: float = 30.0,
    mcp_wait: float | None = None,
    mcp_roots: Iterable[str | Path] | None = None,
    mcp_tokens: str | Path | None = None,
    mcp_start: bool = True,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> Toolkit:
    """A toolkit with the tool sources asked for; with no arguments, an empty one.

    `functions`: callables, or paths of Python files whose public typed functions become
    tools. `skills_dir`: a folder (or several: of two skills of one name, the first's)
    searched for **/SKILL.md. `builtins`: True for every
    built-in tool, or a list of their names; `workspace`: where they act (a
    `toolnexus.tools.workspace.Workspace`, or a folder; default the working folder).

    `mcp_config`: an mcp.json path or dict. Its servers start in the background (this
    returns at once) and their tools are offered while they run; a model call waits for
    the servers still starting, at most `mcp_wait` seconds after one first waited for
    them (None: until each runs or has failed, within `mcp_timeout`, a server's start-up
    limit unless its entry says). `mcp_roots`: the folders advertised to them (default:
    the workspace's root, or the working folder, unless it holds the home: then none;
    a server's own `roots` in the config win). `mcp_tokens`: the file where OAuth logins of
    remote servers are kept (0600; None: remote servers get only their configured headers).
    """
    toolkit = Toolkit(timeout=timeout, max_output=max_output)
    try:
        if builtins:
            toolkit.use_builtins(builtins, workspace)
        if functions:
            from .functions import function_tools

            toolkit.register(*function_tools(functions))
        if skills_dir is not None:
            from .skills import discover_skills, skill_tool, skills_prompt

            folders = [skills_dir] if isinstance(skills_dir, (str, Path)) else list(skills_dir)
            skills = discover_skills(*folders)
            if skills:
                toolkit.register(skill_tool(skills))
                toolkit.instructions.append(skills_prompt(skills))
        if mcp_config is not None:
            from ..mcp import ServerPool, workspace_roots

            if mcp_roots is None and toolkit.workspace is not None:
                mcp_roots = workspace_roots(toolkit.workspace.root)
            pool = ServerPool(
                mcp_config,
                startup_timeout=mcp_timeout,
                wait=mcp_wait,
                taken=[tool.name for tool in toolkit.tools()],
                roots=mcp_roots,
                tokens=mcp_tokens,
            )
            toolkit.add_source(pool)
            if mcp_start:
                pool.start()
    except BaseException:
        await toolkit.close()
        raise
    return toolkit
