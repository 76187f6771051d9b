"""A real MCP server over streamable HTTP on 127.0.0.1, written with the SDK.

    python http_server.py    # prints the port it listens on, then serves /mcp

Every request must carry `Authorization: Bearer $HTTP_MCP_TOKEN` (else 401). It listens on
$HTTP_MCP_PORT when set (a server started again where the last one was), else on a free port.
"""

from __future__ import annotations

import os

from mcp.server.mcpserver import Context, MCPServer
from serving import serve  # this folder: the script's own
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


if __name__ == "__main__":
    serve(lambda port: RequireToken(server.streamable_http_app()))
