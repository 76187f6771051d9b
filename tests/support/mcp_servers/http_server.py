"""A real MCP server over streamable HTTP on 127.0.0.1, written with the SDK.

    python http_server.py    # prints the port it listens on, then serves /mcp

Every request must carry `Authorization: Bearer $HTTP_MCP_TOKEN` (else 401). It listens on
$HTTP_MCP_PORT when set (a server started again where the last one was), else on a free port.
With HTTP_MCP_UNKNOWN_SESSION=400 it answers a session id it did not give with a 400, as the
reference servers' examples do (the SDK's own answer is the spec's 404); with
HTTP_MCP_EXTRA_TOOL=1 it offers one more tool, `whisper`.
"""

from __future__ import annotations

import json
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


if os.environ.get("HTTP_MCP_EXTRA_TOOL") == "1":

    @server.tool()
    def whisper(text: str) -> str:
        """Lower-case the text."""
        return text.lower()


NO_SESSION = json.dumps(
    {
        "jsonrpc": "2.0",
        "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
        "id": None,
    }
)


class RefuseUnknownSessions:
    """A request with a session id this process did not give: 400, as the reference
    servers' examples answer it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.given: set[bytes] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session = dict(scope["headers"]).get(b"mcp-session-id")
        if session is not None and session not in self.given:
            response = PlainTextResponse(NO_SESSION, 400, media_type="application/json")
            await response(scope, receive, send)
            return

        async def noting_sessions(message: dict) -> None:
            if message["type"] == "http.response.start":
                given = dict(message.get("headers") or []).get(b"mcp-session-id")
                if given is not None:
                    self.given.add(given)
            await send(message)

        await self.app(scope, receive, noting_sessions)


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

    def app(port: int) -> ASGIApp:
        mcp = server.streamable_http_app()
        if os.environ.get("HTTP_MCP_UNKNOWN_SESSION") == "400":
            mcp = RefuseUnknownSessions(mcp)
        return RequireToken(mcp)

    serve(app)
