"""One connection to an MCP server, from its start to its end: the transport (a stdio
process, streamable HTTP, or the legacy HTTP+SSE of older servers: a remote server that
refuses the streamable POST with a 4xx other than 401/403 is asked for an SSE stream, as the
protocol's backwards-compatibility section says), the SDK session over it with toolnexus's
side of the protocol (the roots it advertises, the progress and log messages it takes),
the handshake, and what the server offers (its tools, resources and prompts).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from .._visible import visible
from ..errors import ToolnexusError
from ..tools._clock import held
from ._process import CommandNotFound, ServerProcess, StderrTail
from .auth import LOGIN_HINT, LoginNeeded, has_own_authorization
from .config import McpTransport, ServerSpec
from .elicitation import answer_elicitation
from .requests import ServerRequests
from .sampling import answer_sampling

PAGES = 100  # pages of one listing followed at most: a server that pages forever is cut off
_CAPABILITY = {
    "tools": "tools",
    "resources": "resources",
    "resourceTemplates": "resources",
    "prompts": "prompts",
}
_LISTER = {
    "tools": "list_tools",
    "resources": "list_resources",
    "resourceTemplates": "list_resource_templates",
    "prompts": "list_prompts",
}
_CHANGED = {
    "ToolListChangedNotification": "tools",
    "ResourceListChangedNotification": "resources",
    "PromptListChangedNotification": "prompts",
}
LOG_LEVEL = "info"  # the least severe log messages asked of a server
HTTP_TIMEOUT = 30.0  # seconds to connect, send, or wait for a free connection
STREAM_TIMEOUT = 300.0  # seconds a response stream may stay silent
WHY_LIMIT = 300  # characters of an error's own text in a status
CONNECTION_ERRORS = ("ConnectError", "ConnectTimeout")  # httpx2's, by name: it is imported late
SESSION_HEADER = "mcp-session-id"
# JSON-RPC errors a server may send with a 400 or 404 about the request itself, not the session
REQUEST_ERRORS = (-32602, -32601)  # invalid params, method not found


@dataclass
class Offer:
    """What a connected server offers, as it listed it (wire shape)."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    resources: list[dict[str, Any]] = field(default_factory=list)
    templates: list[dict[str, Any]] = field(default_factory=list)  # resource templates
    prompts: list[dict[str, Any]] = field(default_factory=list)
    instructions: str = ""  # how to use it, as the server says (untrusted)
    capabilities: dict[str, Any] = field(default_factory=dict)


@dataclass
class ClientSide:
    """What toolnexus answers a server with: the roots (folders), where
    a log message goes (its text, made visible), who answers its elicitation and sampling
    requests, and who hears that a listing changed ("tools", "resources", "prompts")."""

    roots: Callable[[], list[Path]]
    log: Callable[[str], None]
    requests: ServerRequests = field(default_factory=ServerRequests)
    changed: Callable[[str], None] = lambda kind: None


class Connection:
    """Open it in an AsyncExitStack (`await connection.open(stack)`); closing the stack
    ends it. `phase` says what it was doing, for a message when it fails. `transport` is
    what it speaks ("stdio", "http" or "sse"; "http" becomes "sse" when the server is an
    older one); `auth` an httpx2.Auth for a remote server's requests (OAuth), or None."""

    def __init__(
        self,
        spec: ServerSpec,
        sdk: SimpleNamespace,
        side: ClientSide,
        stderr: StderrTail,
        *,
        transport: McpTransport | None = None,
        auth: Any = None,
    ) -> None:
        self.spec = spec
        self.sdk = sdk
        self.side = side
        self.stderr = stderr
        self.transport: McpTransport = transport or spec.transport
        self.auth = auth
        self.phase = "starting"
        self.session: Any = None
        self.process: ServerProcess | None = None
        self.http_status: int | None = None  # the first HTTP error status seen while starting
        self.ready = False
        self.session_refused = False  # a 400 or 404 answered a request carrying the session

    async def open(self, stack: contextlib.AsyncExitStack) -> Offer:
        if self.transport == "http":
            try:
                async with contextlib.AsyncExitStack() as attempt:
                    offer = await self._open_over(attempt)
                    stack.push_async_exit(attempt.pop_all())
                    return offer
            except Exception:
                if not self._older_server():
                    raise
            self.transport, self.http_status = "sse", None
        return await self._open_over(stack)

    def _older_server(self) -> bool:
        """The server refused the streamable HTTP POST as a server of the HTTP+SSE
        transport would (not for want of authorization)."""
        status = self.http_status
        return status is not None and 400 <= status < 500 and status not in (401, 403)

    async def _open_over(self, stack: contextlib.AsyncExitStack) -> Offer:
        read, write = await self._transport(stack)
        sdk = self.sdk
        me = sdk.Implementation(name="toolnexus", version=_version())
        self.session = session = await stack.enter_async_context(
            sdk.ClientSession(
                read,
                write,
                client_info=me,
                list_roots_callback=self._list_roots,
                logging_callback=self._log,
                log_level=LOG_LEVEL,
                sampling_callback=self._sample,
                elicitation_callback=self._elicit,
                message_handler=self._notified,
            )
        )
        self.phase = "waiting for the initialize answer"
        init = dump(await session.initialize())
        capabilities = init.get("capabilities") or {}
        if "logging" in capabilities:
            with contextlib.suppress(Exception), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated in the newest protocol only
                await session.set_logging_level(LOG_LEVEL)
        self.phase = "listing what it offers"
        offer = Offer(
            tools=await self.listed("tools", capabilities),
            resources=await self.listed("resources", capabilities),
            templates=await self.listed("resourceTemplates", capabilities),
            prompts=await self.listed("prompts", capabilities),
            instructions=str(init.get("instructions") or ""),
            capabilities=capabilities,
        )
        self.phase = "running"
        self.ready = True
        return offer

    async def ended(self) -> str:
        """Returns, saying why, once the connection ends by itself (a stdio server exits);
        a remote one's end shows as an error in the calls and the transport instead."""
        if self.process is None:
            await _forever()
        assert self.process is not None
        await self.process.exited()
        await self.process.settle()
        return self.process.why_it_ended() + self._stderr_note()

    async def roots_changed(self) -> None:
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # deprecated in the newest protocol only
            await self.session.send_roots_list_changed()

    async def _transport(self, stack: contextlib.AsyncExitStack) -> tuple[Any, Any]:
        sdk, spec = self.sdk, self.spec
        if self.transport == "http":
            self.phase = "connecting"
            client = await stack.enter_async_context(
                self._http_client(
                    spec.headers, sdk.http.Timeout(HTTP_TIMEOUT, read=STREAM_TIMEOUT), self.auth
                )
            )
            read, write = await stack.enter_async_context(
                sdk.streamable_http_client(spec.url, http_client=client)
            )
            return read, write
        if self.transport == "sse":
            self.phase = "connecting (HTTP+SSE)"
            read, write = await stack.enter_async_context(
                sdk.sse_client(
                    spec.url,
                    headers=spec.headers,
                    timeout=HTTP_TIMEOUT,
                    sse_read_timeout=STREAM_TIMEOUT,
                    auth=self.auth,
                    httpx_client_factory=self._http_client,
                )
            )
            return read, write
        self.phase = "starting the process"
        self.process = ServerProcess(spec, self.stderr)
        read, write = await stack.enter_async_context(self.process.running())
        return read, write

    def _http_client(
        self, headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
    ) -> Any:
        """The SDK's HTTP client for this server (its proxies and TLS settings are httpx2's,
        from the environment), noting the first HTTP error status while it starts."""

        async def note_http_error(response: Any) -> None:
            if response.status_code >= 400 and self.http_status is None and not self.ready:
                self.http_status = response.status_code
            if response.status_code in (400, 404) and SESSION_HEADER in response.request.headers:
                self.session_refused = True

        return self.sdk.http.AsyncClient(
            headers=headers, timeout=timeout, auth=auth, event_hooks={"response": [note_http_error]}
        )

    async def listed(self, kind: str, capabilities: dict[str, Any]) -> list[dict[str, Any]]:
        """Everything of `kind` it offers ("tools", "resources", "resourceTemplates",
        "prompts"), every page; nothing if it does not offer that kind."""
        if _CAPABILITY[kind] not in capabilities:
            return []
        list_page = getattr(self.session, _LISTER[kind])
        listed: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(PAGES):
            params = (
                None if cursor is None else self.sdk.types.PaginatedRequestParams(cursor=cursor)
            )
            page = dump(await list_page(params=params))
            listed.extend(item for item in page.get(kind) or [] if isinstance(item, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return listed

    async def _list_roots(self, context: Any) -> Any:
        types = self.sdk.types
        return types.ListRootsResult(
            roots=[
                types.Root(uri=root.as_uri(), name=root.name or str(root))
                for root in self.side.roots()
            ]
        )

    async def _sample(self, context: Any, params: Any) -> Any:
        with held():  # the model's time, or a person's: not the asking tool's
            return await answer_sampling(self.side.requests, self.spec.name, self.sdk, params)

    async def _elicit(self, context: Any, params: Any) -> Any:
        with held():  # a person's time: not the asking tool's
            return await answer_elicitation(self.side.requests, self.spec.name, self.sdk, params)

    async def _notified(self, message: Any) -> None:
        kind = _CHANGED.get(type(message).__name__)
        if kind is not None:
            self.side.changed(kind)

    async def _log(self, params: Any) -> None:
        data = (
            params.data
            if isinstance(params.data, str)
            else json.dumps(params.data, ensure_ascii=False, default=str)
        )
        source = f"{params.logger}: " if params.logger else ""
        self.side.log(visible(f"{params.level}: {source}{data}"[:300]))

    async def settle(self) -> None:
        """After a failure: let a dying process finish its last stderr line."""
        if self.process is not None and self.process.returncode is not None:
            await self.process.settle()

    def forgot_session(self, exc: BaseException) -> bool:
        """Whether `exc`, a request's failure, says the remote server no longer knows the
        session (it restarted), so the request never ran: it said so, or answered a 400 or
        404 to a request carrying the session (some servers say 400, the spec 404) that
        was not about the request itself."""
        refused, self.session_refused = self.session_refused, False
        if session_lost(exc):
            return True
        code = getattr(getattr(first_error(exc), "error", None), "code", None)
        return refused and code not in REQUEST_ERRORS

    def describe(self, exc: BaseException) -> str:
        """Why the connection failed, in one line: visible, secrets of the spec blanked."""
        return visible(self.spec.redact(self._why(exc)))

    def needs_login(self, exc: BaseException) -> bool:
        """Whether `exc`, the connection's failure, was for want of an OAuth login (none,
        or one that no longer works)."""
        leaf = first_error(exc)
        return isinstance(leaf, LoginNeeded) or self._unauthorized(leaf)

    def _unauthorized(self, leaf: BaseException) -> bool:
        """A 401 from a server whose entry does not carry its own authorization."""
        return self._status_of(leaf) == 401 and not has_own_authorization(self.spec)

    def _status_of(self, leaf: BaseException) -> int | None:
        """The HTTP status the failure carries, or the first seen while starting."""
        status = getattr(getattr(leaf, "response", None), "status_code", None)
        if status is None and not self.ready:
            return self.http_status
        return status if isinstance(status, int) else None

    def _why(self, exc: BaseException) -> str:
        leaf = first_error(exc)
        if isinstance(leaf, CommandNotFound | LoginNeeded | ToolnexusError):
            return str(leaf)  # ours, said for a person already
        status = self._status_of(leaf)
        text = " ".join(str(leaf).split())[:WHY_LIMIT]
        if self._unauthorized(leaf):
            why = LOGIN_HINT.format(name=self.spec.name)
        elif status is not None:
            why = f"HTTP {status} {_phrase(status)} from {self.spec.url}"
        elif type(leaf).__module__.startswith("mcp.client.auth"):
            why = f"OAuth with {self.spec.url} failed: {text}"
        elif self.process is not None and self.process.returncode is not None:
            why = self.process.why_it_ended()
            if not self.ready:
                why += f" while {self.phase}"
            why += self._stderr_note()
        elif closed_connection(leaf):
            why = "the server closed the connection"
            if not self.ready:
                why += f" while {self.phase}"
        elif type(leaf).__name__ in CONNECTION_ERRORS:
            why = f"cannot connect to {self.spec.url}: {text or type(leaf).__name__}"
        else:
            why = f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__
        return why

    def _stderr_note(self) -> str:
        tail = self.stderr.last_line()
        return f" (stderr: {tail})" if tail else ""  # why it died, most likely


def closed_connection(exc: BaseException) -> bool:
    return "connection closed" in str(first_error(exc)).lower()


def connection_failed(exc: BaseException) -> bool:
    """The connection under a request is gone (closed, or a remote server cannot be
    reached): a new one is needed."""
    return closed_connection(exc) or type(first_error(exc)).__name__ in CONNECTION_ERRORS


def session_lost(exc: BaseException) -> bool:
    """A remote server no longer knows the session (it restarted): a new one is needed,
    and the request never ran."""
    text = str(first_error(exc)).lower()
    return "session terminated" in text or "session not found" in text


def dump(model: Any) -> dict[str, Any]:
    """An SDK model in its wire shape (camelCase keys), whatever the SDK's attribute names."""
    if isinstance(model, dict):
        return model
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def first_error(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


async def _forever() -> None:
    await asyncio.Event().wait()


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("toolnexus")
    except Exception:
        return "0"
