"""A real MCP server over streamable HTTP on 127.0.0.1, written with the SDK.

    python http_server.py    # prints the port it listens on, then serves /mcp

Every request must carry `Authorization: Bearer $HTTP_MCP_TOKEN` (else 401).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

server = MCPServer("remote", log_level="WARNING")
TOKEN = os.environ["HTTP_MCP_TOKEN"]


@server.tool()
def whoami(ctx: Context) -> str:
    """Say who the caller is authenticated as."""
    auth = (ctx.headers or {}).get("authorization", "")
    return "authorized as tester" if auth == f"Bearer {TOKEN}" else "anonymous"


@server.tool()
def shout(text: str) -> str:
    """Upper-case the text."""
    return text.upper()


class RequireToken:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = dict(scope["headers"])
            if headers.get(b"authorization", b"").decode() != f"Bearer {TOKEN}":
                await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def die_with_parent() -> None:
    """Linux: SIGKILL this server when the test process that started it dies, however."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != int(os.environ.get("HTTP_MCP_PARENT", os.getppid())):
            sys.exit(1)


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    app = RequireToken(server.streamable_http_app())
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    print(sock.getsockname()[1], flush=True)  # listening already: connections queue
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    die_with_parent()
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        sys.exit(0)
