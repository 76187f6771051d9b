"""OAuth for remote MCP servers, as the SDK's client implements it (`mcp.client.auth`:
discovery, dynamic client registration, authorization code with PKCE, token refresh); here
is where its tokens and client registrations are kept, and when it is used.

`TokenFile` is one JSON file (0600) of what each server's login left: its tokens, when the
access token expires, and the client registered with its authorization server, by server
name and bound to the server's URL (a server whose URL changed is not sent the old one's
tokens). Nothing here prints or logs a token.

A server is connected with OAuth when it has a login in the file (its tokens are sent and
refreshed when they expire); one that has none, or whose login no longer works, is
`LoginNeeded`: a browser is needed, and only `login` (see login.py) opens one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from .config import ServerSpec

__all__ = [
    "LoginNeeded",
    "ServerTokens",
    "TokenFile",
]

LOGIN_HINT = "it needs a login: run 'toolnexus mcp login {name}'"
CLIENT_NAME = "toolnexus"
PLACEHOLDER_REDIRECT = "http://127.0.0.1/callback"  # never used: a browser flow is refused
SECRET_CMD_TIMEOUT = 30.0  # seconds a client_secret_cmd may take


class LoginNeeded(Exception):
    """The server wants an authorization a person has to give in a browser."""

    def __init__(self, name: str) -> None:
        super().__init__(LOGIN_HINT.format(name=name))


class TokenFile:
    """The logins of MCP servers, in one 0600 JSON file: {name: {"url", "tokens",
    "expires_at", "client"}}. Every change is a read-modify-write under a lock, so that
    toolnexus processes refreshing tokens at once do not lose each other's."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()

    def entry(self, name: str, url: str) -> dict[str, Any]:
        """What the login of `name` at `url` left ({} when nothing, or for another URL)."""
        found = self._read().get(name)
        if not isinstance(found, dict) or found.get("url") != url:
            return {}
        return found

    def update(self, name: str, url: str, **fields: Any) -> None:
        """Set `fields` of `name`'s entry (a None value removes the field); an entry for
        another URL is replaced."""
        with self._locked():
            data = self._read()
            entry = self.entry(name, url) or {"url": url}
            entry.update(fields)
            data[name] = {key: value for key, value in entry.items() if value is not None}
            self._write(data)

    def forget(self, name: str) -> bool:
        """Remove `name`'s login; whether there was one."""
        with self._locked():
            data = self._read()
            if data.pop(name, None) is None:
                return False
            self._write(data)
            return True

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}  # none yet, or unreadable: a login writes it anew
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
        os.chmod(tmp, 0o600)  # an older tmp file may have had other bits
        os.replace(tmp, self.path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl  # POSIX, as the rest of toolnexus's process handling

        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path.with_name(self.path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


class ServerTokens:
    """One server's part of a TokenFile, as the SDK's `TokenStorage`. The access token's
    expiry is kept as a time, so that a token that expired while toolnexus was not running
    is refreshed rather than sent."""

    def __init__(self, file: TokenFile, spec: ServerSpec) -> None:
        self.file = file
        self.name = spec.name
        self.url = spec.url
        self.preset = spec.oauth.client_id is not None  # its client is the config's

    def logged_in(self) -> bool:
        """It has tokens, and the client they were given to."""
        entry = self.file.entry(self.name, self.url)
        return isinstance(entry.get("tokens"), dict) and (
            self.preset or isinstance(entry.get("client"), dict)
        )

    async def get_tokens(self) -> Any:
        from mcp.shared.auth import OAuthToken

        return self._stored("tokens", OAuthToken)

    async def set_tokens(self, tokens: Any) -> None:
        expires_at = None if tokens.expires_in is None else time.time() + int(tokens.expires_in)
        self.file.update(
            self.name, self.url, tokens=tokens.model_dump(mode="json"), expires_at=expires_at
        )

    async def get_client_info(self) -> Any:
        from mcp.shared.auth import OAuthClientInformationFull

        return self._stored("client", OAuthClientInformationFull)

    async def set_client_info(self, client_info: Any) -> None:
        self.file.update(
            self.name, self.url, client=client_info.model_dump(mode="json", exclude_none=True)
        )

    def _stored(self, key: str, model: Any) -> Any:
        """The entry's `key` as the SDK's `model` (None: absent, or not one)."""
        value = self.file.entry(self.name, self.url).get(key)
        if not isinstance(value, dict):
            return None
        with contextlib.suppress(ValueError):
            return model.model_validate(value)
        return None

    def expires_at(self) -> float | None:
        value = self.file.entry(self.name, self.url).get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    def client_id(self) -> str | None:
        """The client id of the kept registration, if any."""
        found = self.file.entry(self.name, self.url).get("client", {}).get("client_id")
        return str(found) if found else None

    def redirect_uri(self) -> str | None:
        """The redirect URI the stored client was registered with, if any."""
        uris = self.file.entry(self.name, self.url).get("client", {}).get("redirect_uris")
        return str(uris[0]) if isinstance(uris, list) and uris else None


Redirect = Callable[[str], Awaitable[None]]
Callback = Callable[[], Awaitable[Any]]


def oauth(
    spec: ServerSpec,
    tokens: ServerTokens,
    *,
    redirect_uri: str | None = None,
    redirect: Redirect | None = None,
    callback: Callback | None = None,
) -> Any:
    """The SDK's OAuth provider (an httpx2.Auth) for `spec`'s server. Without `redirect`
    and `callback` (how a login shows the authorization URL and waits for the code) a
    browser flow is refused: `LoginNeeded`."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    async def refuse(*_: Any) -> Any:
        raise LoginNeeded(spec.name)

    uri = redirect_uri or tokens.redirect_uri() or PLACEHOLDER_REDIRECT
    preset = spec.oauth

    class Provider(OAuthClientProvider):
        async def _initialize(self) -> None:
            await super()._initialize()
            # the SDK keeps an expiry only for tokens it got itself, this run
            self.context.token_expiry_time = tokens.expires_at()
            if preset.client_id is not None:  # registered beforehand: never registered here
                self.context.client_info = await preset_client(spec, uri)

        async def _perform_authorization(self) -> Any:
            if preset.scopes is not None:  # the config's, over what the server suggests
                self.context.client_metadata.scope = " ".join(preset.scopes)
            return await super()._perform_authorization()

        async def _auth_flow(self, request: Any) -> AsyncGenerator[Any, Any]:
            """The SDK's flow, but a 401 to a token not yet expired (the server revoked
            it, or restarted) first tries the refresh token: a browser login only when
            that fails too."""
            flow = super()._auth_flow(request)
            sent = await flow.__anext__()
            refreshed = False
            while True:
                response = yield sent
                if (
                    sent is request
                    and response.status_code == 401
                    and not refreshed
                    and self.context.can_refresh_token()
                ):
                    refreshed = True
                    if await self._handle_refresh_response((yield await self._refresh_token())):
                        self._add_auth_header(request)
                        response = yield request
                        if response.status_code != 401:
                            await flow.aclose()
                            return
                try:
                    sent = await flow.asend(response)
                except StopAsyncIteration:
                    return

    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
    )
    return Provider(
        spec.url,
        metadata,
        tokens,
        redirect_handler=redirect or refuse,
        callback_handler=callback or refuse,
    )


async def preset_client(spec: ServerSpec, redirect_uri: str) -> Any:
    """The client of the config's `oauth` entry, its secret (if it has one) printed by
    `client_secret_cmd` now: kept in memory only."""
    from mcp.shared.auth import OAuthClientInformationFull

    from .._secret_command import run_secret_command

    command, client_id = spec.oauth.client_secret_cmd, spec.oauth.client_id
    assert client_id is not None, "a preset client has an id"
    secret = None
    if command is not None:
        label = f"oauth.client_secret_cmd of MCP server {spec.name}"
        secret = await asyncio.to_thread(run_secret_command, command, label, SECRET_CMD_TIMEOUT)
    return OAuthClientInformationFull(
        client_id=client_id,
        client_secret=secret,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post" if secret else "none",
    )


def has_own_authorization(spec: ServerSpec) -> bool:
    """The config gives the server an Authorization header: OAuth is not used for it."""
    return any(key.lower() == "authorization" for key in spec.headers)
