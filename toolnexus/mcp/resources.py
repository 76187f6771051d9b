"""Resources: what a server offers to read by URI. `read_resource` reads one; the
built-in tool of the same name lets the model read the resource links and resources a
tool returned, or those the servers list (its calls are approved like any MCP tool's)."""

from __future__ import annotations

from collections.abc import Callable

from .._visible import visible
from ..content import Attachment
from ..errors import ToolnexusError
from ..tools.tool import Tool, ToolResult
from ._connection import dump
from .content import convert_content
from .server import McpServer

__all__ = [
    "read_resource",
    "resource_uris",
]

READ_TOOL = "read_resource"
READ_DESCRIPTION = (
    "Read a resource of an MCP server by its URI: a resource link or resource a tool "
    "returned, or one a server lists. Give `server` when more than one server is running."
)


async def read_resource(server: McpServer, uri: str) -> tuple[str, list[Attachment]]:
    """The resource's text (each part's URI before it) and its images, audio and PDFs as
    attachments; ToolnexusError (one line) if it cannot be read."""
    session = server.session
    if session is None:
        raise ToolnexusError(f"the MCP server {server.name} {server.why_not_running()}")
    try:
        result = dump(await session.read_resource(uri))
    except Exception as exc:
        why = " ".join(str(exc).split()) or type(exc).__name__
        raise ToolnexusError(visible(f"{server.name} cannot read {uri}: {why}")[:500]) from None
    contents = [c for c in result.get("contents") or [] if isinstance(c, dict)]
    return convert_content({"content": [{"type": "resource", "resource": c} for c in contents]})


def resource_uris(server: McpServer) -> list[str]:
    """The URIs the server lists, then its templates (for completion after `@server:`)."""
    listed = [str(entry.get("uri", "")) for entry in server.offer.resources]
    templates = [str(entry.get("uriTemplate", "")) for entry in server.offer.templates]
    return [uri for uri in [*listed, *templates] if uri]


def reader_tool(servers: Callable[[], list[McpServer]], name: str = READ_TOOL) -> Tool:
    """The built-in tool over the servers running now (`servers()`)."""

    async def read(uri: str, server: str | None = None) -> ToolResult:
        try:
            chosen = _server_for(servers(), uri, server)
            text, attachments = await read_resource(chosen, uri)
        except ToolnexusError as exc:
            return ToolResult(f"error: {exc}", is_error=True)
        return ToolResult(text, False, {"mcp_server": chosen.name}, attachments)

    schema = {
        "type": "object",
        "properties": {
            "uri": {"type": "string", "description": "The resource's URI."},
            "server": {"type": "string", "description": "The MCP server that has it."},
        },
        "required": ["uri"],
    }
    return Tool(
        name=name,
        description=READ_DESCRIPTION,
        input_schema=schema,
        fn=read,
        source="mcp:resources",
        optional_params=("server",),
    )


def _server_for(running: list[McpServer], uri: str, name: str | None) -> McpServer:
    if name:
        for server in running:
            if server.name == name:
                return server
        raise ToolnexusError(
            f"no running MCP server is named {name!r} (running: {_names(running)})"
        )
    listing = [s for s in running if any(e.get("uri") == uri for e in s.offer.resources)]
    readers = listing or [s for s in running if "resources" in s.offer.capabilities]
    if len(readers) == 1:
        return readers[0]
    if not readers:
        raise ToolnexusError("no running MCP server offers resources")
    raise ToolnexusError(
        f"several MCP servers may have it: give `server` (one of {_names(readers)})"
    )


def _names(servers: list[McpServer]) -> str:
    return ", ".join(visible(s.name) for s in servers) or "none"


def any_reader(servers: list[McpServer]) -> bool:
    """Whether read_resource is offered: a running server lists resources or templates."""
    return any(server.offer.resources or server.offer.templates for server in servers)
