"""Every server of one MCP config, as one tool source of a toolkit (toolkit.ToolSource).

The servers start in the background, all at once, on `start()` or when a model call first
waits for them; the tools of those running are offered.
A model call waits for servers still starting, but with `wait` only until `wait` seconds
after the first model call that waited for this start of theirs (None: until each runs or
has failed): a chat answers soon while a slow server starts, and `ask` takes every server
that can start. The model is told once when a server it could use goes down, comes back,
or is still starting when it is asked without it.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Literal

from .._visible import visible
from ..tools.tool import Tool
from ..tools.workspace import holds_home
from .auth import TokenFile
from .config import STARTUP_TIMEOUT, McpConfig, ServerSpec, read_specs
from .requests import ServerRequests
from .resources import READ_TOOL, any_reader, reader_tool
from .server import McpServer, ServerStatus, ToolNames, sdk_installed

__all__ = [
    "ServerPool",
    "workspace_roots",
]

Watcher = Callable[[McpServer], None]
Told = Literal["ok", "starting", "down"]  # a server's state as the model hears of it
NAMED_IN_NOTICE = 8  # tools a notice names before "…"
INSTRUCTIONS_LIMIT = 4000  # characters of a server's instructions added to the system prompt


class ServerPool:
    """`ServerPool(config, ...)` reads the config (raising ToolnexusError only for one that
    cannot be read at all, or a missing `mcp` package, which it does not import yet);
    `start()` starts the servers; `close()` ends them. `roots` are the folders advertised
    to the servers as their roots (by default `workspace_roots` of the working folder), but
    for a server whose entry names its own (`roots` in the config). `tokens`: the file of
    OAuth logins (see auth.py; None: remote servers get only their configured headers).
    `requests` says who answers the servers' elicitation and sampling requests (see
    requests.py)."""

    def __init__(
        self,
        config: McpConfig,
        *,
        startup_timeout: float = STARTUP_TIMEOUT,
        wait: float | None = None,
        taken: Iterable[str] = (),
        roots: Iterable[str | Path] | None = None,
        tokens: str | os.PathLike[str] | None = None,
    ) -> None:
        sdk_installed()
        specs = read_specs(config)
        self.wait = wait
        self._started = False
        self._roots = _resolved(workspace_roots(Path.cwd()) if roots is None else roots)
        self._watchers: list[Watcher] = []
        self._told: dict[str, Told] = {}  # what the model was last told of a server
        self._told_tools: dict[str, list[str]] = {}  # and the tools it was offered then
        self._deadlines: dict[str, float] = {}  # until when model calls wait for a server
        names = ToolNames(list(taken))
        token_file = None if tokens is None else TokenFile(tokens)
        self.servers = [
            McpServer(
                spec,
                names,
                self._roots_for(spec),
                self._changed,
                startup_timeout=startup_timeout,
                tokens=token_file,
            )
            for spec in specs
        ]
        self.requests = ServerRequests()
        for server in self.servers:
            server.side.requests = self.requests
        self._reader = reader_tool(
            self.running, names.name("mcp", READ_TOOL) if READ_TOOL in taken else READ_TOOL
        )

    def start(self) -> None:
        """Start every server (the first start imports the SDK, which takes a second or
        two: the chat does it once its prompt shows)."""
        if self._started:
            return
        self._started = True
        for server in self.servers:
            if server.status.state.state == "starting":
                server.start()

    async def close(self) -> None:
        await asyncio.gather(*(server.close() for server in self.servers))

    # -- what a toolkit asks of a tool source ---------------------------------------------

    def tools(self) -> list[Tool]:
        tools = [tool for server in self.servers for tool in server.tools()]
        return [*tools, self._reader] if any_reader(self.running()) else tools

    def running(self) -> list[McpServer]:
        return [server for server in self.servers if server.session is not None]

    def instructions(self) -> list[str]:
        """What the running servers say of how to use them, for the system prompt."""
        return [
            f"Instructions from the MCP server {server.name} (for its tools only):\n"
            + visible(server.offer.instructions)[:INSTRUCTIONS_LIMIT]
            for server in self.running()
            if server.offer.instructions.strip()
        ]

    async def relisted(self) -> None:
        """Returns once the listings the servers said changed are read again."""
        await asyncio.gather(*(server.relisted() for server in self.servers))

    def unavailable(self, name: str) -> str | None:
        """Why the tool `name`, offered before, is not offered now (None: not one of ours)."""
        for server in self.servers:
            if server.owns(name):
                return f"its MCP server {server.name} {server.why_not_running()}"
        return None

    def starting(self) -> list[str]:
        """The servers a model call waits for: starting, and within their `wait` (which
        begins now for one no model call waited for yet). Servers not started yet start
        now."""
        return [server.name for server in self._waited_for()]

    async def started(self) -> None:
        """Returns once none of `starting()` is starting any more."""
        await asyncio.gather(
            *(
                server.wait_settled(None if self.wait is None else self._deadlines[server.name])
                for server in self._waited_for()
            )
        )

    def _waited_for(self) -> list[McpServer]:
        if not self._started:
            self.start()
        now = asyncio.get_running_loop().time()
        waited = []
        for server in self.servers:
            if server.status.state.state != "starting":
                continue
            if self.wait is None or now < self._deadlines.setdefault(server.name, now + self.wait):
                waited.append(server)
        return waited

    def news(self) -> list[str]:
        """What the model should be told about servers since it was last told, once: one
        it knew of went down or came back, or offers other tools (it restarted, or said its
        list changed), one is still starting without being waited for."""
        notes = []
        for server in self.servers:
            state, told = _state(server), self._told.get(server.name)
            tools, told_tools = server.status.tools, self._told_tools.get(server.name)
            if state == told == "ok" and told_tools is not None and tools != told_tools:
                notes.append(
                    f"The MCP server {server.name}'s tools changed: it offers "
                    f"{_named(tools) if tools else 'none'} now."
                )
            if state == "ok":
                self._told_tools[server.name] = list(tools)
            if state == told:
                continue
            note = _notice(server, state, told)
            if note is not None:
                notes.append(note)
            if note is not None or state == "ok":
                self._told[server.name] = state
        return notes

    def statuses(self) -> list[ServerStatus]:
        return [server.status for server in self.servers]

    def watch(self, watcher: Watcher) -> None:
        """Call `watcher(server)` whenever a server's status changes."""
        self._watchers.append(watcher)

    # -- the roots ------------------------------------------------------------------------

    async def set_roots(self, roots: Iterable[str | Path]) -> None:
        """Advertise other roots; running servers that take them are told the list changed
        (not those whose entry names their own)."""
        self._roots = _resolved(roots)
        await asyncio.gather(
            *(server.roots_changed() for server in self.servers if server.spec.roots is None)
        )

    def _roots_for(self, spec: ServerSpec) -> Callable[[], list[Path]]:
        if spec.roots is None:
            return lambda: self._roots
        own = _resolved(spec.roots)
        return lambda: own

    def _changed(self, server: McpServer) -> None:
        if server.status.state.state == "starting":  # a new start: model calls wait for it anew
            self._deadlines.pop(server.name, None)
        for watcher in self._watchers:
            watcher(server)


def workspace_roots(folder: str | Path) -> list[Path]:
    """The roots a workspace gives MCP servers: the folder itself, or none when it is the
    home or holds it (a server that takes its roots for what it may touch, as the
    filesystem server does, would reach every file of the user's, keys and tokens too)."""
    return [] if holds_home(folder) else [Path(folder)]


def _resolved(roots: Iterable[str | Path]) -> list[Path]:
    return [Path(root).expanduser().resolve() for root in roots]


def _state(server: McpServer) -> Told:
    """A server's state as the model hears of it: "ok", "starting", or "down"."""
    state = server.status.state.state
    return state if state == "ok" or state == "starting" else "down"


def _notice(server: McpServer, state: Told, told: Told | None) -> str | None:
    """The note for the model on a server now in `state` of which it was last told `told`
    (None: nothing, so it knows only the tools it is offered)."""
    name = server.name
    if state == "starting":
        return f"The MCP server {name} is still starting: its tools are offered once it runs."
    if state == "ok":
        if told == "down":
            return f"The MCP server {name} is running again: its tools are offered again."
        if told == "starting":
            return (
                f"The MCP server {name} is ready: its tools are offered now "
                f"({_named(server.status.tools)})."
            )
        return None
    if told is None:
        return None  # it never heard of this server
    tools = f" ({_named(server.status.tools)})" if server.status.tools else ""
    return (
        f"The MCP server {name} {server.why_not_running()}: its tools{tools} are not "
        "offered until it runs again."
    )


def _named(tools: list[str]) -> str:
    shown = ", ".join(tools[:NAMED_IN_NOTICE])
    return shown + (", …" if len(tools) > NAMED_IN_NOTICE else "")
