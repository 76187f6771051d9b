"""One MCP server's lifecycle, and its tools as toolnexus Tools.

Built on the official `mcp` SDK, an optional extra (`pip install 'toolnexus[mcp]'`) imported
only when servers are opened. The SDK's context managers must be entered and exited in one
task, so each server lives in a background task of its own, its supervisor: it connects,
offers the server's tools while the connection lasts, and when the connection ends by
itself (a stdio server exits, a remote one forgets the session or drops) connects again
after a pause that grows with each failure in a row, up to len(BACKOFF) tries (a remote
server longer: REMOTE_BACKOFF, as it may be away while it is redeployed). A server
that cannot start the first time is not retried: its status says why, and the others keep
working. While a server is down its tools are not offered, and a call to one says why.

How a server is doing (`ServerStatus.state`, an `McpServerState`) is one of "starting" (its
first start, or after `restart`/`enable`), "ok", "restarting" (with why it went down),
"failed" (with why, and whether for want of an OAuth login), "disabled" and, once closed,
"stopped".
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

from ..errors import ToolnexusError
from ..tools.tool import SHOWN_KEY, Tool, ToolContext, ToolResult
from ._connection import (
    ClientSide,
    Connection,
    Offer,
    closed_connection,
    connection_failed,
    dump,
)
from ._process import StderrTail
from .auth import ServerTokens, TokenFile, has_own_authorization, oauth
from .config import STARTUP_TIMEOUT, McpTransport, ServerSpec
from .content import convert_content, person_text

__all__ = [
    "McpServer",
    "ServerStatus",
]

log = logging.getLogger("toolnexus.mcp")

INSTALL_HINT = "MCP servers need the mcp package: pip install 'toolnexus[mcp]'"
BACKOFF = (0.5, 1.0, 2.0, 4.0, 8.0)  # seconds before each restart of a failing run
# a remote server being redeployed is away longer than a local one takes to fail for good
REMOTE_BACKOFF = (*BACKOFF, 15.0, 30.0, 30.0, 30.0, 30.0)
STABLE_S = 60.0  # a run this long resets the count of failures in a row
PING_TIMEOUT = 10.0  # seconds a remote server may take to answer a ping
FORGOT = "it forgot the session (it restarted?)"
STOP_WAIT = 0.3  # seconds a stopping server may take to say goodbye before it is cut off
LOG_LINES = 50  # log messages of a server kept for /mcp
NAME_LIMIT = 64
CONTEXT_PARAM = "toolnexus_context"  # how an MCP tool's function gets its ToolContext


McpState = Literal["starting", "ok", "restarting", "failed", "disabled", "stopped"]


@dataclass(frozen=True, slots=True)
class McpServerState:
    """Where a server is in its lifecycle (see the module), `reason`: why it is restarting
    or failed, and `needs_login`: it failed for want of an OAuth login (`toolnexus mcp login
    NAME`). `str()` of it is the sentence a person reads: "failed: <why>"."""

    state: McpState
    reason: str | None = None
    needs_login: bool = False

    def __str__(self) -> str:
        return self.state if self.reason is None else f"{self.state}: {self.reason}"


@dataclass
class ServerStatus:
    """How one configured server is doing (it changes as the server starts, goes down and
    comes back): its `state`, and `tools`, the names its tools are offered under while it
    runs. `transport` is what it speaks: an "http" server found to be an older one, "sse"."""

    name: str
    transport: McpTransport
    state: McpServerState
    tools: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.state.state == "ok"

    @property
    def needs_login(self) -> bool:
        return self.state.needs_login


def sdk_installed() -> None:
    """Raise ToolnexusError when the `mcp` package is missing, without importing it (the
    import takes a second or two: it happens when the first server starts)."""
    from importlib.util import find_spec

    if find_spec("mcp") is None:
        raise ToolnexusError(INSTALL_HINT)


@functools.cache
def import_sdk() -> SimpleNamespace:
    try:
        import mcp
    except ImportError as exc:
        if exc.name == "mcp":
            raise ToolnexusError(INSTALL_HINT) from None
        raise ToolnexusError(f"the mcp package failed to import: {exc}") from exc
    try:
        import anyio
        import httpx2  # the HTTP client mcp 2.x is built on (a dependency of it)
        from mcp.client.sse import sse_client
        from mcp.client.streamable_http import streamable_http_client
    except ImportError as exc:
        raise ToolnexusError(
            f"the installed mcp package cannot be used ({exc}): pip install -U 'toolnexus[mcp]'"
        ) from exc
    return SimpleNamespace(
        anyio=anyio,
        ClientSession=mcp.ClientSession,
        Implementation=mcp.Implementation,
        streamable_http_client=streamable_http_client,
        sse_client=sse_client,
        http=httpx2,
        types=mcp.types,
    )


class ToolNames:
    """The names tools are offered under: `<server>_<tool>`, unique, and the same for a
    server's tool each time the server comes back."""

    def __init__(self, taken: list[str]) -> None:
        self._taken = set(taken)
        self._given: dict[tuple[str, str], str] = {}

    def name(self, server: str, tool: str) -> str:
        if (server, tool) not in self._given:
            name = _unique(_tool_name(server, tool), self._taken)
            self._taken.add(name)
            self._given[server, tool] = name
        return self._given[server, tool]


class McpServer:
    """One configured server. `start()` runs its supervisor in the background; `status`
    says how it is doing, `tools()` what it offers now. `on_change` is called whenever
    its status changes. `tokens`: where OAuth logins are kept (None: OAuth is not used)."""

    def __init__(
        self,
        spec: ServerSpec,
        names: ToolNames,
        roots: Callable[[], list[Path]],
        on_change: Callable[[McpServer], None],
        *,
        startup_timeout: float = STARTUP_TIMEOUT,
        tokens: TokenFile | None = None,
    ) -> None:
        self.spec = spec
        self.tokens = tokens
        self.name = spec.name
        self.names = names
        self.on_change = on_change
        self.startup_timeout = spec.startup_timeout or startup_timeout
        self.status = ServerStatus(spec.name, spec.transport, _first_state(spec))
        self.stderr = StderrTail()
        self.logs: deque[str] = deque(maxlen=LOG_LINES)
        self.offer = Offer()  # what it offered when it last ran
        self.side = ClientSide(roots=roots, log=self._log, changed=self._list_changed)
        self.task_only: list[str] = []  # its tools that run only as tasks: not offered
        self._tools: list[Tool] = []
        self._connection: Connection | None = None
        self._calls: list[ToolContext] = []  # running now: log messages go to them
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._lost = asyncio.Event()  # a call found that a new connection is needed
        self._lost_why = ""  # and why
        self._settled = asyncio.Event()  # ready, or failed, after it began to start
        self._next_run: list[asyncio.Future[bool]] = []  # calls waiting for a new connection
        self._scope: Any = None
        self._relisting: set[asyncio.Task[None]] = set()

    # -- what it offers ------------------------------------------------------------------

    @property
    def sdk(self) -> SimpleNamespace:
        return import_sdk()

    @property
    def runnable(self) -> bool:
        return self.spec.error is None

    def tools(self) -> list[Tool]:
        return self._tools if self._connection is not None else []

    @property
    def session(self) -> Any:
        """The SDK session of its connection now; None while it is not running."""
        return None if self._connection is None else self._connection.session

    def roots(self) -> list[Path]:
        """The folders it is told are its roots."""
        return self.side.roots()

    def owns(self, tool_name: str) -> bool:
        return tool_name in self.status.tools

    def why_not_running(self) -> str:
        state = self.status.state
        return {
            "starting": "is still starting",
            "disabled": "is disabled",
            "stopped": "is stopped",
        }.get(state.state, f"is not running ({state})")

    # -- its lifecycle -------------------------------------------------------------------

    def start(self) -> None:
        """Begin to start it (in the background); its status is "starting" until it runs.
        The SDK is imported here, on the caller's thread, if it was not yet."""
        if not self.runnable or (self._task is not None and not self._task.done()):
            return
        try:
            import_sdk()
        except ToolnexusError as exc:
            self._set(McpServerState("failed", str(exc)))
            self._settled.set()
            return
        self._stopping.clear()
        self._settled.clear()
        self._set(McpServerState("starting"))
        self._task = asyncio.create_task(self._supervise(), name=f"mcp server {self.name}")

    async def stop(self) -> None:
        """End it and wait until it has ended; it says goodbye within STOP_WAIT, or is cut
        off (a stdio server's process is ended at once either way, see _process.py)."""
        task = self._task
        if task is None or task.done():
            return
        self._stopping.set()
        if self._connection is None:
            self._cut_off(task)  # still starting: nothing to say goodbye to
        done, _ = await asyncio.wait({task}, timeout=STOP_WAIT)
        if not done:
            self._cut_off(task)
            await asyncio.wait({task})

    def _cut_off(self, task: asyncio.Task[None]) -> None:
        if self._scope is not None:
            self._scope.cancel()
        else:  # not yet in its cancel scope
            task.cancel()

    async def close(self) -> None:
        await self.stop()
        if self.status.state.state in ("ok", "starting", "restarting"):
            self._set(McpServerState("stopped"))

    async def restart(self) -> None:
        await self.stop()
        self.start()

    async def disable(self) -> None:
        await self.stop()
        self._set(McpServerState("disabled"))

    def enable(self) -> None:
        """Start it, if it is not running (disabled, failed or stopped)."""
        if not self.runnable:
            raise ToolnexusError(
                f"{self.name} cannot start: {self.spec.redact(self.spec.error or '')}"
            )
        self.start()

    async def wait_settled(self, deadline: float | None) -> None:
        """Until it runs or has failed, or the event loop's time `deadline` passes."""
        timeout = None if deadline is None else deadline - asyncio.get_running_loop().time()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._settled.wait()

    async def roots_changed(self) -> None:
        if self._connection is not None:
            await self._connection.roots_changed()

    async def _supervise(self) -> None:
        try:
            await self._keep_running()
        finally:
            self._settled.set()
            self._wake_callers(False)

    async def _keep_running(self) -> None:
        backoff = BACKOFF if self.spec.transport == "stdio" else REMOTE_BACKOFF
        failures = 0
        while True:
            began = asyncio.get_running_loop().time()
            ended = await self._run_once()
            if ended is None:  # stopped on purpose
                return
            if self.status.state.state == "starting":  # it never ran since start()
                self._set(ended)
                return
            ran = asyncio.get_running_loop().time() - began
            failures = 1 if ran >= STABLE_S else failures + 1
            if failures > len(backoff):
                self._set(
                    replace(
                        ended,
                        reason=f"{ended.reason}; it failed {failures} times in a row, so it "
                        "is not started again unless it is restarted",
                    )
                )
                return
            self._set(McpServerState("restarting", ended.reason))
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(backoff[failures - 1]):
                    await self._stopping.wait()
            if self._stopping.is_set():
                return

    async def _run_once(self) -> McpServerState | None:
        """One connection from start to end: None when it was stopped on purpose, else how
        it ended (or could not start), as its state if it is not started again."""
        if self._stopping.is_set():
            return None
        connection = Connection(
            self.spec,
            self.sdk,
            self.side,
            self.stderr,
            transport=self.status.transport,
            auth=self._auth(),
        )
        self._lost.clear()
        ended: McpServerState | None = None
        try:
            with self.sdk.anyio.CancelScope() as self._scope:
                async with contextlib.AsyncExitStack() as stack:
                    try:
                        async with asyncio.timeout(self.startup_timeout):
                            offer = await connection.open(stack)
                    except TimeoutError:
                        timed_out = f"timed out after {self.startup_timeout:g} s {connection.phase}"
                        return McpServerState("failed", timed_out)
                    self._ready(connection, offer)
                    why = await self._until_it_ends(connection)
                    ended = None if why is None else McpServerState("failed", why)
        except Exception as exc:
            await connection.settle()
            ended = McpServerState(
                "failed", connection.describe(exc), needs_login=connection.needs_login(exc)
            )
        finally:
            self._scope = None
            self._connection = None
        return None if self._stopping.is_set() else ended

    def _auth(self) -> Any:
        """OAuth for a remote server that has a login (else None: a 401 says to log in)."""
        spec, tokens = self.spec, self.tokens
        if tokens is None or spec.transport == "stdio" or has_own_authorization(spec):
            return None
        server_tokens = ServerTokens(tokens, spec)
        return oauth(spec, server_tokens) if server_tokens.logged_in() else None

    def _ready(self, connection: Connection, offer: Offer) -> None:
        self.offer = offer
        self.status.transport = connection.transport  # an older server speaks "sse"
        self._tools = self._make_tools(offer.tools)
        self._connection = connection
        self.status.tools = [tool.name for tool in self._tools]
        self._set(McpServerState("ok"))
        self._settled.set()
        self._wake_callers(True)

    def _wake_callers(self, connected: bool) -> None:
        waiting, self._next_run = self._next_run, []
        for waiter in waiting:
            if not waiter.done():
                waiter.set_result(connected)

    async def _until_it_ends(self, connection: Connection) -> str | None:
        ended = asyncio.ensure_future(connection.ended())
        waits = [
            ended,
            asyncio.ensure_future(self._stopping.wait()),
            asyncio.ensure_future(self._lost.wait()),
        ]
        if connection.process is None and self.spec.ping_interval > 0:
            waits.append(asyncio.ensure_future(self._ping_while_idle(connection)))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for wait in waits:
                wait.cancel()
        if ended.done() and not ended.cancelled():
            return ended.result()
        return None if self._stopping.is_set() else self._lost_why

    async def _ping_while_idle(self, connection: Connection) -> None:
        """A remote server is pinged every `ping_interval` seconds while no call of it runs:
        one gone, or that forgot the session, is noticed before a call needs it, and
        connected again (see _keep_running)."""
        while True:
            await asyncio.sleep(self.spec.ping_interval)
            if self._calls:
                continue
            try:
                async with asyncio.timeout(PING_TIMEOUT):
                    await connection.session.send_ping()
            except TimeoutError:
                self._reconnect(f"it did not answer a ping within {PING_TIMEOUT:g} s")
                return
            except Exception as exc:
                forgot = connection.forgot_session(exc)
                self._reconnect(FORGOT if forgot else connection.describe(exc))
                return

    def _set(self, state: McpServerState) -> None:
        if state.reason is not None:
            state = replace(state, reason=self.spec.redact(state.reason))
        if state != self.status.state:
            self.status.state = state
            log.info("MCP server %s (%s): %s", self.name, self.spec.transport, state)
            self.on_change(self)

    def _log(self, text: str) -> None:
        """Kept (for /mcp), and passed on as this server's log while one of its calls
        runs (once, however many run)."""
        self.logs.append(text)
        if self._calls:
            self._calls[0].log(self.name, text)

    # -- its tools -----------------------------------------------------------------------

    def _list_changed(self, kind: str) -> None:
        """The server said a listing changed: read it again (tools are offered anew
        before the next model call, see `relisted`)."""
        task = asyncio.create_task(self._relist(kind), name=f"mcp relist {self.name}")
        self._relisting.add(task)
        task.add_done_callback(self._relisting.discard)

    async def relisted(self) -> None:
        """Returns once the listings the server said changed are read again (or the time
        to start one has passed)."""
        if self._relisting:
            await asyncio.wait(set(self._relisting), timeout=self.startup_timeout)

    async def _relist(self, kind: str) -> None:
        connection = self._connection
        if connection is None:
            return
        try:
            listed = await connection.listed(kind, self.offer.capabilities)
        except Exception as exc:
            self._log(f"reading its {kind} again failed: {connection.describe(exc)}")
            return
        if connection is not self._connection:
            return
        setattr(self.offer, "templates" if kind == "resourceTemplates" else kind, listed)
        if kind == "tools":
            self._tools = self._make_tools(listed)
            self.status.tools = [tool.name for tool in self._tools]
        self.on_change(self)

    def _make_tools(self, listed: list[dict[str, Any]]) -> list[Tool]:
        tools = []
        self.task_only = []
        for entry in listed:
            original = str(entry.get("name") or "")
            if not original:
                continue
            if _task_only(entry):
                self.task_only.append(original)
                continue
            schema = entry.get("inputSchema")
            schema = dict(schema) if isinstance(schema, dict) else {}
            schema.setdefault("type", "object")
            if schema["type"] == "object":
                schema.setdefault("properties", {})
            annotations = entry.get("annotations")
            annotations = annotations if isinstance(annotations, dict) else {}
            title = entry.get("title") or annotations.get("title") or ""
            description = entry.get("description") or title or original
            tools.append(
                Tool(
                    name=self.names.name(self.name, original),
                    description=str(description),
                    input_schema=schema,
                    fn=self._caller(original),
                    source=f"mcp:{self.name}",
                    context_param=CONTEXT_PARAM,
                    title=str(title)[: NAME_LIMIT * 2],
                    annotations=annotations,
                )
            )
        return tools

    def _caller(self, original: str) -> Callable[..., Any]:
        async def call_mcp_tool(toolnexus_context: ToolContext, **arguments: Any) -> ToolResult:
            meta = {"mcp_server": self.name, "mcp_tool": original}
            self._calls.append(toolnexus_context)
            try:
                return await self._call(original, arguments, toolnexus_context, meta)
            finally:
                self._calls.remove(toolnexus_context)

        return call_mcp_tool

    async def _call(
        self,
        original: str,
        arguments: dict[str, Any],
        context: ToolContext,
        meta: dict[str, str],
        *,
        again: bool = True,
    ) -> ToolResult:
        connection = self._connection
        if connection is None:
            return ToolResult(
                f"error: MCP server {self.name!r} {self.why_not_running()}", True, meta
            )

        async def progress(done: float, total: float | None, message: str | None) -> None:
            context.report(message or "", done, total)

        try:
            result = await connection.session.call_tool(
                original, arguments, progress_callback=progress
            )
        except Exception as exc:
            if again and connection.forgot_session(exc) and await self._connected_again():
                return await self._call(original, arguments, context, meta, again=False)
            return ToolResult(
                f"error: MCP server {self.name!r}: {await self._call_failure(connection, exc)}",
                True,
                meta,
            )
        dumped = dump(result)
        text, attachments = convert_content(dumped)
        shown = person_text(dumped)
        metadata: dict[str, Any] = meta if shown is None else {**meta, SHOWN_KEY: shown}
        return ToolResult(text, bool(dumped.get("isError")), metadata, attachments)

    async def _connected_again(self) -> bool:
        """After a remote server forgot the session (so the call never ran): a new
        connection, if one comes within the start-up timeout."""
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._next_run.append(waiter)
        self._reconnect(FORGOT)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(BACKOFF[0] + self.startup_timeout):
                return await waiter
        return False

    def _reconnect(self, why: str) -> None:
        """A call found the connection to a remote server unusable: the supervisor ends it
        and makes a new one (see _keep_running)."""
        self._lost_why = why
        self._lost.set()

    async def _call_failure(self, connection: Connection, exc: Exception) -> str:
        if connection.process is None and connection_failed(exc) and not self._stopping.is_set():
            why = connection.describe(exc)
            self._reconnect(why)
            return f"{why}; it is reconnected"
        if not (closed_connection(exc) and connection.process is not None):
            return connection.describe(exc)
        # the process ended under the call: its exit (seen in a moment) says why
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):
                await connection.process.exited()
        if self._stopping.is_set():
            return "it was stopped during the call"
        return f"{connection.describe(exc)}; it is restarted"


def _task_only(entry: dict[str, Any]) -> bool:
    """A tool that runs only through the tasks API, which toolnexus does not drive: every
    plain call of it fails, so it is not offered."""
    execution = entry.get("execution")
    return isinstance(execution, dict) and execution.get("taskSupport") == "required"


def _first_state(spec: ServerSpec) -> McpServerState:
    if spec.disabled:
        return McpServerState("disabled")
    if spec.error:
        return McpServerState("failed", spec.redact(spec.error))
    return McpServerState("starting")


_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def _tool_name(server: str, tool: str) -> str:
    """`<server>_<tool>` fit for every provider: [a-zA-Z0-9_-]{1,64}."""
    name = _UNSAFE.sub("_", f"{server}_{tool}")[:NAME_LIMIT]
    return name or "mcp_tool"


def _unique(name: str, taken: set[str]) -> str:
    candidate, n = name, 1
    while candidate in taken:
        n += 1
        suffix = f"_{n}"
        candidate = name[: NAME_LIMIT - len(suffix)] + suffix
    return candidate
