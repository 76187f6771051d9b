"""`login`: a remote MCP server's OAuth authorization, given by a person in a browser.

The SDK's OAuth provider discovers the server's authorization server, registers toolnexus
with it when it has no client there yet, and builds the authorization URL (PKCE, state);
`show_url` shows it (to open in a browser, here or anywhere). The browser is then sent to
a listener on 127.0.0.1 (`LoopbackCallback`), which takes the one redirect that brings the
code; the SDK exchanges it for tokens, kept in the TokenFile (see auth.py). The client is
registered with that loopback address: a later login listens on the same port when it is
free, else registers again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .._visible import visible
from ..errors import ToolnexusError
from ._connection import ClientSide, Connection, Offer, first_error
from ._process import StderrTail
from .auth import ServerTokens, TokenFile, has_own_authorization, oauth
from .config import ServerSpec
from .server import import_sdk

__all__ = [
    "login",
]

CALLBACK_PATH = "/callback"
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
LOGIN_TIMEOUT = 300.0  # seconds a person has to authorize in the browser
PROBE_TIMEOUT = 10.0  # seconds the authorization server may take to say if it knows a client
MAX_REQUEST_HEAD = 16 * 1024  # bytes of the redirect's request line and headers read
DONE_PAGE = (
    "<!doctype html><title>toolnexus</title><p>{}</p>"
    "<p>You can close this tab and go back to the terminal.</p>"
)


class LoopbackCallback:
    """An HTTP listener on 127.0.0.1 for the redirect that brings the authorization code
    (or the authorization server's refusal)."""

    def __init__(self) -> None:
        self.port = 0
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[Any] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def start(self, port: int = 0) -> None:
        """Listen on `port`, or on a free one when that is taken (or 0)."""
        self._result = asyncio.get_running_loop().create_future()
        try:
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", port)
        except OSError:
            if not port:
                raise
            self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def result(self) -> Any:
        """The code and state the redirect brought (an SDK AuthorizationCodeResult);
        raises ToolnexusError when the authorization server refused."""
        assert self._result is not None, "start() first"
        return await asyncio.shield(self._result)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        line = head[:MAX_REQUEST_HEAD].split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        target = urlsplit(rest.rpartition(" ")[0])
        if method != "GET" or target.path != CALLBACK_PATH:
            await _respond(writer, 404, "Not the authorization callback.")
            return
        params = {key: values[0] for key, values in parse_qs(target.query).items()}
        await _respond(writer, 200, self._take(params))

    def _take(self, params: dict[str, str]) -> str:
        """Settle the result with the first redirect; what the browser is told."""
        from mcp.client.auth import AuthorizationCodeResult

        future = self._result
        if future is None or future.done():
            return "This login is over already."
        if "error" in params:
            why = params.get("error_description") or params["error"]
            future.set_exception(
                ToolnexusError(f"the authorization server refused: {visible(why[:200])}")
            )
            return "The authorization was refused."
        if not params.get("code"):
            return "This is not an authorization: it has no code."
        future.set_result(
            AuthorizationCodeResult(
                code=params["code"], state=params.get("state"), iss=params.get("iss")
            )
        )
        return "toolnexus is authorized."


async def _respond(writer: asyncio.StreamWriter, status: int, text: str) -> None:
    body = DONE_PAGE.format(text).encode()
    reason = "OK" if status == 200 else "Not Found"
    writer.write(
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(ConnectionError):
        await writer.drain()
    writer.close()


async def login(
    spec: ServerSpec,
    tokens: TokenFile,
    show_url: Callable[[str], None],
    *,
    port: int | None = None,
    timeout: float = LOGIN_TIMEOUT,
) -> Offer:
    """Authorize toolnexus with `spec`'s server anew and keep its tokens in `tokens`;
    `show_url(url)` shows the authorization URL and where the listener waits, which waits
    `timeout` seconds at most. Returns what the server offers once it let toolnexus in.
    A client registration the authorization server no longer knows is made anew. Raises
    ToolnexusError, saying why, when the login cannot be done or fails."""
    _check_remote(spec)
    server_tokens = ServerTokens(tokens, spec)
    registered = server_tokens.redirect_uri()
    listener = LoopbackCallback()
    await listener.start(
        port if port is not None else spec.oauth.callback_port or _port_of(registered)
    )
    try:
        tokens.update(spec.name, spec.url, tokens=None, expires_at=None)  # log in anew
        if registered != listener.redirect_uri:  # its client was for another address
            tokens.update(spec.name, spec.url, client=None)
        try:
            offer = await _authorize(spec, server_tokens, listener, show_url, timeout)
        except RegistrationUnknown:
            tokens.update(spec.name, spec.url, client=None)  # register again
            offer = await _authorize(spec, server_tokens, listener, show_url, timeout)
    finally:
        await listener.close()
    if not server_tokens.logged_in():
        raise ToolnexusError(f"{spec.name} let toolnexus in without a login: it needs none")
    return offer


class RegistrationUnknown(Exception):
    """The authorization server no longer knows the client registration kept for it."""


async def _authorize(
    spec: ServerSpec,
    server_tokens: ServerTokens,
    listener: LoopbackCallback,
    show_url: Callable[[str], None],
    timeout: float,
) -> Offer:
    kept = server_tokens.client_id()

    async def redirect(url: str) -> None:
        client = auth.context.client_info
        if kept is not None and client is not None and client.client_id == kept:
            if not await _client_known(auth):  # the browser would get an error page
                raise RegistrationUnknown
        show_url(url)

    auth = oauth(
        spec,
        server_tokens,
        redirect_uri=listener.redirect_uri,
        redirect=redirect,
        callback=listener.result,
    )
    return await _connect(spec, auth, timeout)


async def _client_known(auth: Any) -> bool:
    """Whether the authorization server still knows the kept client: asked to refresh a
    token that cannot be valid, a server that knows the client says invalid_grant, one
    that does not, invalid_client (RFC 6749 5.2). Nothing is changed by asking."""
    context = auth.context
    data, headers = context.prepare_token_auth(
        {
            "grant_type": "refresh_token",
            "refresh_token": "toolnexus-checks-its-registration",
            "client_id": context.client_info.client_id,
        },
        {"Content-Type": "application/x-www-form-urlencoded"},
    )
    http = import_sdk().http
    try:
        async with http.AsyncClient(timeout=PROBE_TIMEOUT) as client:
            response = await client.post(auth._get_token_endpoint(), data=data, headers=headers)
        answer = response.json()
    except Exception:  # unreachable, or not JSON: the authorization itself will say
        return True
    return not (isinstance(answer, dict) and answer.get("error") == "invalid_client")


def _check_remote(spec: ServerSpec) -> None:
    if spec.error:
        raise ToolnexusError(f"{spec.name} cannot start: {spec.redact(spec.error)}")
    if spec.transport == "stdio":
        raise ToolnexusError(f"{spec.name} is a local (stdio) server: it needs no login")
    if has_own_authorization(spec):
        raise ToolnexusError(
            f"{spec.name} has an Authorization header in the MCP config: "
            "that is what it is sent, so it needs no login"
        )
    parts = urlsplit(spec.url)
    if parts.scheme != "https" and parts.hostname not in LOOPBACK_HOSTS:
        raise ToolnexusError(
            f"{spec.name} is not reached over https: OAuth tokens travel "
            "only over TLS (or to this machine)"
        )


async def _connect(spec: ServerSpec, auth: Any, timeout: float) -> Offer:
    side = ClientSide(roots=lambda: [], log=lambda _: None)
    connection = Connection(spec, import_sdk(), side, StderrTail(), auth=auth)
    try:
        async with asyncio.timeout(timeout), contextlib.AsyncExitStack() as stack:
            return await connection.open(stack)
    except TimeoutError:
        raise ToolnexusError(
            f"no authorization within {timeout:g} s: run the login again and open the URL"
        ) from None
    except Exception as exc:
        if isinstance(first_error(exc), RegistrationUnknown):
            raise RegistrationUnknown from None
        raise ToolnexusError(
            f"the login to {spec.name} failed: {connection.describe(exc)}"
        ) from None


def _port_of(uri: str | None) -> int:
    """The port of a loopback redirect URI (0: none, or not one)."""
    with contextlib.suppress(ValueError):
        return (urlsplit(uri).port if uri else None) or 0
    return 0
