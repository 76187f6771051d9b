"""A real MCP server of the legacy HTTP+SSE transport on 127.0.0.1, written with the SDK
(`mcp.server.sse`, as older servers are): GET /sse opens the event stream, whose first
event names where messages are POSTed.

    python sse_server.py    # prints the port it listens on, then serves /sse
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from serving import serve  # this folder: the script's own

server = MCPServer("legacy", log_level="WARNING")


@server.tool()
def reverse(text: str) -> str:
    """Reverse the text."""
    return text[::-1]


if __name__ == "__main__":
    serve(lambda port: server.sse_app())
