"""A real MCP server over streamable HTTP that is its own OAuth 2.1 authorization server,
written with the SDK (`mcp.server.auth`): metadata discovery, dynamic client registration,
authorization code with PKCE (consent is given at once: fetching the authorization URL
redirects straight to the client's redirect URI with the code), refresh tokens.

    python oauth_server.py    # prints the port it listens on, then serves /mcp

With $OAUTH_MCP_DENY set, every authorization is refused (access_denied).

Besides MCP: POST /admin/expire invalidates every access token (refresh tokens keep
working), POST /admin/revoke every token of either kind, POST /admin/reset forgets
everything (clients, codes, tokens, counts: one server serves many tests), GET /admin/stats
counts what
happened ({"registrations", "authorizations", "refreshes", "bearers"}: `bearers` the
Authorization headers seen on /mcp, e.g. to show that one without a token sent none).
"""

from __future__ import annotations

import os
import secrets
import time
from collections import Counter

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from serving import serve  # this folder: the script's own
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

ACCESS_TTL = 3600


class Provider:
    """Clients, codes and tokens in memory."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats: Counter[str] = Counter()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.stats["registrations"] += 1
        self.clients[str(client_info.client_id)] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        if os.environ.get("OAUTH_MCP_DENY"):
            raise AuthorizeError("access_denied", "the tester said no")
        self.stats["authorizations"] += 1
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=str(client.client_id),
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        return self._issue(str(client.client_id), authorization_code.scopes)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.stats["refreshes"] += 1
        del self.refresh[refresh_token.token]  # rotated
        return self._issue(str(client.client_id), scopes or refresh_token.scopes)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)

    def _issue(self, client_id: str, scopes: list[str]) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ACCESS_TTL,
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes)
        return OAuthToken(
            access_token=access,
            expires_in=ACCESS_TTL,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )


def build(port: int) -> tuple[MCPServer, Provider]:
    provider = Provider()
    base = f"http://127.0.0.1:{port}"
    server = MCPServer(
        "remote",
        log_level="WARNING",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            validate_token_resource=False,
            client_registration_options=ClientRegistrationOptions(enabled=True),
        ),
    )

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    @server.custom_route("/admin/expire", methods=["POST"])
    async def expire(request: Request) -> Response:
        provider.access.clear()
        return Response()

    @server.custom_route("/admin/revoke", methods=["POST"])
    async def revoke(request: Request) -> Response:
        provider.access.clear()
        provider.refresh.clear()
        return Response()

    @server.custom_route("/admin/reset", methods=["POST"])
    async def reset(request: Request) -> Response:
        provider.reset()
        return Response()

    @server.custom_route("/admin/stats", methods=["GET"])
    async def stats(request: Request) -> Response:
        return JSONResponse(dict(provider.stats))

    return server, provider


def counting_bearers(app, provider: Provider):
    async def counted(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/mcp":
            if dict(scope["headers"]).get(b"authorization", b"").startswith(b"Bearer "):
                provider.stats["bearers"] += 1
        await app(scope, receive, send)

    return counted


def app_for(port: int):
    server, provider = build(port)
    return counting_bearers(server.streamable_http_app(), provider)


if __name__ == "__main__":
    serve(app_for)
