"""A real MCP server of the legacy HTTP+SSE transport on 127.0.0.1, written with the SDK
(`mcp.server.sse`, as older servers are): GET /sse opens the event stream, whose first
event names where messages are POSTed.

    python sse_server.py    # prints the port it listens on, then serves /sse
"""

from __future__ import annotations

import os
import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from parent import die_with_parent  # this folder: the script's own

server = MCPServer("legacy", log_level="WARNING")


@server.tool()
def reverse(text: str) -> str:
    """Reverse the text."""
    return text[::-1]


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", int(os.environ.get("HTTP_MCP_PORT", "0"))))
    sock.listen(16)
    config = uvicorn.Config(server.sse_app(), log_level="warning", lifespan="on")
    print(sock.getsockname()[1], flush=True)  # listening already: connections queue
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    die_with_parent()
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        sys.exit(0)
