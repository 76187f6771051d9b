"""MCP servers as a tool source: local servers over stdio, remote ones over streamable HTTP
(or the legacy HTTP+SSE), with OAuth.

    tools, statuses, close = await open_mcp_servers("mcp.json")   # or a parsed dict
    ...
    await close()                                                 # ends every server

`add_mcp_servers(toolkit, config)` does the same onto a toolkit: its servers become one of
the toolkit's sources (their tools offered while they run) and `toolkit.close()` ends them.
The package: `config` reads mcp.json (env expansion, secrets), `pool` runs the servers of
one config as a tool source, `server` is one server's lifecycle (restarts, its tools),
`connection` one connection to it (transport, session, handshake), `auth` a remote
server's OAuth (its tokens kept in a `TokenFile`: pass its path as `tokens`), `login` the
browser flow that gets them (`await login(spec, TokenFile(path), print)`), `process` how a
stdio server's process runs (a group supervisor, a bounded stderr tail, a quick end),
`content` turns what a tool returns into text and attachments. What servers offer besides
tools: `resources` (read_resource, the built-in tool of that name), `prompts` (and
completion), `requests` (who answers a server's `elicitation` and `sampling` requests: set
`pool.requests.elicit` / `.sample`; unset, they are declined).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable
from typing import NamedTuple, Protocol

from ..tools.tool import Tool
from ._process import STDERR_TAIL
from .config import STARTUP_TIMEOUT, McpConfig, McpTransport
from .content import convert_content
from .pool import ServerPool, workspace_roots
from .server import McpServer, McpServerState, McpState, ServerStatus

__all__ = [
    "STDERR_TAIL",
    "McpServer",
    "McpServerState",
    "McpServers",
    "McpState",
    "McpTransport",
    "ServerPool",
    "ServerStatus",
    "add_mcp_servers",
    "convert_content",
    "open_mcp_servers",
    "workspace_roots",
]


class McpServers(NamedTuple):
    """What `open_mcp_servers` opened: the servers' tools, one status per configured
    server (in config order), and the coroutine function that stops them all."""

    tools: list[Tool]
    statuses: list[ServerStatus]
    close: Callable[[], Awaitable[None]]


async def open_mcp_servers(
    config: McpConfig,
    *,
    timeout: float = STARTUP_TIMEOUT,
    taken: Iterable[str] = (),
    tokens: str | os.PathLike[str] | None = None,
) -> McpServers:
    """Start the configured MCP servers concurrently; once each runs or has failed, return
    their tools, statuses and close.

    Tool names are `<server>_<tool>`, made unique against each other and against `taken`
    (the names already in use). `timeout` is a server's start-up limit unless its entry
    says (`startup_timeout_sec`). `tokens`: the file of OAuth logins (`toolnexus mcp login`
    keeps them in mcp_tokens.json beside its keys). Raises ToolnexusError only for a config
    that cannot be read at all (or a missing `mcp` package); a problem with one server is
    its status. Until `close` is awaited, the servers that started keep running (and are
    restarted).
    """
    pool = ServerPool(config, startup_timeout=timeout, taken=taken, tokens=tokens)
    await _started(pool)
    return McpServers(pool.tools(), pool.statuses(), pool.close)


class ToolRegistry(Protocol):
    """What `add_mcp_servers` needs of a toolkit."""

    def tools(self) -> list[Tool]: ...
    def add_source(self, source: ServerPool) -> object: ...


async def add_mcp_servers(
    toolkit: ToolRegistry,
    config: McpConfig,
    *,
    timeout: float = STARTUP_TIMEOUT,
    tokens: str | os.PathLike[str] | None = None,
) -> list[ServerStatus]:
    """`open_mcp_servers` onto `toolkit`: the servers become one of its sources (their tools
    named clear of the tools it has) and `toolkit.close()` ends them. Returns one status
    per server, once each runs or has failed."""
    pool = ServerPool(
        config,
        startup_timeout=timeout,
        tokens=tokens,
        taken=[tool.name for tool in toolkit.tools()],
    )
    toolkit.add_source(pool)
    await _started(pool)
    return pool.statuses()


async def _started(pool: ServerPool) -> None:
    pool.start()
    try:
        await pool.started()
    except BaseException:  # cancelled (Ctrl-C) while starting: leave nothing running
        await pool.close()
        raise
