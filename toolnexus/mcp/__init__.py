"""MCP servers as a tool source: local servers over stdio, remote ones over streamable HTTP.

    tools, statuses, close = await open_mcp_servers("mcp.json")   # or a parsed dict
    ...
    await close()                                                 # ends every server

`add_mcp_servers(toolkit, config)` does the same onto a toolkit: it registers the tools and
has `toolkit.close()` end the servers. The package: `config` reads mcp.json (env expansion,
secrets), `server` runs each server and offers its tools, `process` is how a stdio server's
process runs (a group supervisor, a bounded stderr tail), `content` turns what a tool
returns into text and attachments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from ..tools import Tool
from .config import McpConfig
from .content import convert_content
from .process import STDERR_TAIL
from .server import McpServers, ServerStatus, open_mcp_servers

__all__ = [
    "STDERR_TAIL",
    "McpServers",
    "ServerStatus",
    "add_mcp_servers",
    "convert_content",
    "open_mcp_servers",
]


class ToolRegistry(Protocol):
    """What `add_mcp_servers` needs of a toolkit."""

    def tools(self) -> list[Tool]: ...
    def register(self, *tools: Tool) -> object: ...
    def on_close(self, closer: Callable[[], Awaitable[None]]) -> None: ...


async def add_mcp_servers(
    toolkit: ToolRegistry, config: McpConfig, *, timeout: float = 30.0
) -> list[ServerStatus]:
    """`open_mcp_servers`, its tools registered on `toolkit` (named clear of the tools it
    has) and its servers ended by `toolkit.close()`. Returns one status per server."""
    tools, statuses, close = await open_mcp_servers(
        config, timeout=timeout, taken=[tool.name for tool in toolkit.tools()])
    toolkit.on_close(close)
    toolkit.register(*tools)
    return statuses
