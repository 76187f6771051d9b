"""Toolkit: the set of tools one run may call, and how they are executed."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from .tools import DEFAULT_MAX_OUTPUT, DEFAULT_TIMEOUT_S, Tool, ToolContext, ToolResult
from .wire import ToolSpec, wire_style


class Toolkit:
    def __init__(
        self, *, timeout: float = DEFAULT_TIMEOUT_S, max_output: int = DEFAULT_MAX_OUTPUT
    ) -> None:
        self.timeout = timeout
        self.max_output = max_output
        self._tools: dict[str, Tool] = {}
        self._closers: list[Callable[[], Awaitable[None]]] = []
        self.instructions: list[str] = []  # added to the system prompt (e.g. the skills)
        self.servers: list[Any] = []  # the status of each MCP server
        self.workspace: Any = None  # where the built-in tools act (a Workspace), if any

    def register(self, *tools: Tool) -> Toolkit:
        for tool in tools:
            if tool.name in self._tools:
                raise ValueError(f"a tool named {tool.name!r} is already registered")
            self._tools[tool.name] = tool
        return self

    def tools(self) -> list[Tool]:
        return list(self._tools.values())

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __len__(self) -> int:
        return len(self._tools)

    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Run `closer` when the toolkit closes (tool sources that hold processes use it)."""
        self._closers.append(closer)

    async def execute(
        self, name: str, args: dict[str, Any], context: ToolContext | None = None
    ) -> ToolResult:
        """Run one tool. Never raises for the tool's own failures: those become error
        results the model can read. Cancellation of the caller propagates."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolResult(f"error: unknown tool {name!r} (available: {known})", is_error=True)
        timeout = tool.timeout if tool.timeout is not None else self.timeout
        limit = asyncio.timeout(timeout)
        try:
            async with limit:
                result = await tool.call(args, context or ToolContext())
        except Exception as exc:
            # A TimeoutError the tool raised itself (a socket, a client library) is the
            # tool's own failure, not the toolkit's limit: say what really happened.
            if not (isinstance(exc, TimeoutError) and limit.expired()):
                return ToolResult(f"error: {type(exc).__name__}: {exc}", is_error=True)
            if context is not None:
                context.cancelled.set()
            return ToolResult(f"error: tool {name!r} timed out after {timeout:g} s", is_error=True)
        cap = tool.max_output if tool.max_output is not None else self.max_output
        return _capped(result, cap)

    def specs(self) -> list[ToolSpec]:
        """The tools as the model sees them, in no provider's shape (a WireStyle shapes them)."""
        return [ToolSpec(t.name, t.description, t.input_schema) for t in self._tools.values()]

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
    skills_dir: str | Path | None = None,
    mcp_config: str | Path | dict[str, Any] | None = None,
    builtins: bool | list[str] | None = None,
    workspace: Any = None,
    mcp_timeout: float = 30.0,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_output: int = DEFAULT_MAX_OUTPUT,
) -> Toolkit:
    """A toolkit with the tool sources asked for; with no arguments, an empty one.

    `functions`: callables, or paths of Python files whose public typed functions become
    tools. `skills_dir`: a folder searched for **/SKILL.md. `mcp_config`: an mcp.json path
    or dict. `builtins`: True for every built-in tool, or a list of their names;
    `workspace`: where they act (a `toolnexus.workspace.Workspace`, or a folder; default
    the working folder).
    """
    toolkit = Toolkit(timeout=timeout, max_output=max_output)
    try:
        if builtins:
            from .builtins import builtin_tools
            from .workspace import Workspace

            if not isinstance(workspace, Workspace):
                workspace = Workspace(workspace)
            toolkit.register(*builtin_tools(builtins, workspace))
            toolkit.workspace = workspace
        if functions:
            from .functions import function_tools

            toolkit.register(*function_tools(functions))
        if skills_dir is not None:
            from .skills import discover_skills, skill_tool, skills_prompt

            skills = discover_skills(skills_dir)
            if skills:
                toolkit.register(skill_tool(skills))
                toolkit.instructions.append(skills_prompt(skills))
        if mcp_config is not None:
            from .mcp import open_mcp_servers

            taken = [tool.name for tool in toolkit.tools()]
            mcp = await open_mcp_servers(mcp_config, timeout=mcp_timeout, taken=taken)
            toolkit.on_close(mcp.close)
            toolkit.register(*mcp.tools)
            toolkit.servers = mcp.statuses
    except BaseException:
        await toolkit.close()
        raise
    return toolkit
