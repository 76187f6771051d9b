"""Running MCP servers: each one's lifecycle, and its tools as toolnexus Tools.

Built on the official `mcp` SDK, an optional extra (`pip install 'toolnexus[mcp]'`) imported
only when servers are opened. The SDK's context managers must be entered and exited in one
task, so each server lives in a background task of its own: it connects, signals ready,
waits to be stopped, then disconnects. A server that fails or is too slow to start is
isolated: its status says why and the other servers keep working.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from http import HTTPStatus
from types import SimpleNamespace
from typing import Any, NamedTuple

from ..errors import ToolnexusError
from ..tools import Tool, ToolResult
from .config import McpConfig, ServerSpec, read_specs
from .content import convert_content
from .process import CommandNotFound, StderrPipe, supervised_command

log = logging.getLogger("toolnexus.mcp")

INSTALL_HINT = "MCP servers need the mcp package: pip install 'toolnexus[mcp]'"
CLOSE_TIMEOUT = 10.0  # the SDK's own stdio shutdown is bounded at about 6.5 s
NAME_LIMIT = 64


@dataclass
class ServerStatus:
    """How one configured server fared. `status` is "ok", "disabled" or "failed: <why>"
    (a server that crashes later turns "failed" then); `tools` are the names its tools
    were registered under."""

    name: str
    transport: str  # "stdio" or "http"
    status: str
    tools: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


class McpServers(NamedTuple):
    """What `open_mcp_servers` opened: the servers' tools, one status per configured
    server (in config order), and the coroutine function that stops them all."""

    tools: list[Tool]
    statuses: list[ServerStatus]
    close: Callable[[], Awaitable[None]]


async def open_mcp_servers(
    config: McpConfig, *, timeout: float = 30.0, taken: Iterable[str] = ()
) -> McpServers:
    """Start the configured MCP servers concurrently; return their tools, statuses and close.

    Tool names are `<server>_<tool>`, made unique against each other and against `taken`
    (the names already in use). Raises ToolnexusError only for a config that cannot be read
    at all (or a missing `mcp` package); a problem with one server is its status. Until
    `close` is awaited, the servers that started keep running.
    """
    sdk = _import_sdk()
    statuses: list[ServerStatus] = []
    runners: list[_Server] = []
    for spec in read_specs(config):
        if spec.disabled:
            status = ServerStatus(spec.name, spec.transport, "disabled")
        elif spec.error:
            status = ServerStatus(spec.name, spec.transport, f"failed: {spec.redact(spec.error)}")
        else:
            status = ServerStatus(spec.name, spec.transport, "starting")
            runners.append(_Server(spec, status, sdk))
        statuses.append(status)

    async def close() -> None:
        await _stop_all(runners)

    try:
        await asyncio.gather(*(runner.start(timeout) for runner in runners))
    except BaseException:  # cancelled (Ctrl-C) while starting: leave nothing running
        await close()
        raise

    tools: list[Tool] = []
    names = set(taken)
    for runner in runners:
        if runner.status.ok:
            offered = runner.make_tools(names)
            tools.extend(offered)
            runner.status.tools = [tool.name for tool in offered]
    for status in statuses:
        log.info("MCP server %s (%s): %s", status.name, status.transport, status.status)
    return McpServers(tools, statuses, close)


# ----------------------------------------------------------------------------- the SDK


def _import_sdk() -> SimpleNamespace:
    try:
        import mcp
    except ImportError as exc:
        if exc.name == "mcp":
            raise ToolnexusError(INSTALL_HINT) from None
        raise ToolnexusError(f"the mcp package failed to import: {exc}") from exc
    try:
        import anyio
        import httpx2  # the HTTP client mcp 2.x is built on (a dependency of it)
        from mcp.client.streamable_http import streamable_http_client
    except ImportError as exc:
        raise ToolnexusError(
            f"the installed mcp package cannot be used ({exc}): pip install -U 'toolnexus[mcp]'"
        ) from exc
    return SimpleNamespace(
        anyio=anyio,
        ClientSession=mcp.ClientSession,
        Implementation=mcp.Implementation,
        StdioServerParameters=mcp.StdioServerParameters,
        stdio_client=mcp.stdio_client,
        streamable_http_client=streamable_http_client,
        http=httpx2,
        types=mcp.types,
    )


# ----------------------------------------------------------------------------- one server


class _Server:
    """One server's background task: enter the SDK contexts, serve, exit them, all in it."""

    def __init__(self, spec: ServerSpec, status: ServerStatus, sdk: SimpleNamespace) -> None:
        self.spec = spec
        self.name = spec.name
        self.status = status
        self.sdk = sdk
        self.session: Any = None
        self.listed: list[dict[str, Any]] = []
        self.phase = "starting"
        self.ready = asyncio.Event()
        self.stop = asyncio.Event()
        self.scope = sdk.anyio.CancelScope()
        self.task: asyncio.Task[None] | None = None
        self.stderr = StderrPipe()
        self.http_error: str | None = None  # the first HTTP error status seen while starting

    async def start(self, timeout: float) -> None:
        self.task = asyncio.create_task(self._run(), name=f"mcp server {self.name}")
        try:
            async with asyncio.timeout(timeout):
                await self.ready.wait()
        except TimeoutError:
            if not self.ready.is_set():
                self._fail(f"timed out after {timeout:g} s {self.phase}")
                self.scope.cancel()  # it finishes cleaning up in the background; close() waits

    def request_stop(self) -> None:
        self.stop.set()
        if not self.ready.is_set() or self.session is None:
            self.scope.cancel()

    async def _run(self) -> None:
        try:
            with self.scope:
                async with contextlib.AsyncExitStack() as stack:
                    streams = await self._connect(stack)
                    me = self.sdk.Implementation(name="toolnexus", version=_version())
                    session = await stack.enter_async_context(
                        self.sdk.ClientSession(streams[0], streams[1], client_info=me)
                    )
                    try:
                        self.phase = "waiting for the initialize answer"
                        init = await session.initialize()
                        self.phase = "listing its tools"
                        self.listed = await self._list_tools(session, init)
                    except Exception as exc:
                        await self.stderr.settle()
                        self._fail(self._describe(exc))
                        raise
                    self.session = session
                    self.phase = "running"
                    if self.status.status == "starting":
                        self.status.status = "ok"
                    self.ready.set()
                    await self.stop.wait()
        except Exception as exc:
            await self.stderr.settle()
            self._fail(self._describe(exc))
        finally:
            self.session = None
            if self.status.status == "starting":
                self._fail("stopped before it was ready")
            self.ready.set()
            self.stderr.close_write_end()

    async def _connect(self, stack: contextlib.AsyncExitStack) -> Any:
        sdk, spec = self.sdk, self.spec
        if spec.transport == "http":
            self.phase = "connecting"

            async def note_http_error(response: Any) -> None:
                if response.status_code >= 400 and self.http_error is None:
                    self.http_error = f"HTTP {response.status_code} {_phrase(response.status_code)}"

            client = await stack.enter_async_context(
                sdk.http.AsyncClient(
                    headers=spec.headers,
                    timeout=sdk.http.Timeout(30.0, read=300.0),
                    event_hooks={"response": [note_http_error]},
                )
            )
            return await stack.enter_async_context(
                sdk.streamable_http_client(spec.url, http_client=client)
            )
        self.phase = "starting the process"
        command, args = supervised_command(spec)
        params = sdk.StdioServerParameters(
            command=command, args=args, env=spec.env or None, cwd=spec.cwd
        )
        errlog = await self.stderr.open()
        streams = await stack.enter_async_context(sdk.stdio_client(params, errlog=errlog))
        self.stderr.close_write_end()
        return streams

    async def _list_tools(self, session: Any, init: Any) -> list[dict[str, Any]]:
        capabilities = _dump(init).get("capabilities") or {}
        if "tools" not in capabilities:
            return []
        listed: list[dict[str, Any]] = []
        cursor = None
        for _ in range(100):  # a server that pages forever is not our problem to follow
            if cursor is None:
                page = _dump(await session.list_tools())
            else:
                params = self.sdk.types.PaginatedRequestParams(cursor=cursor)
                page = _dump(await session.list_tools(params=params))
            listed.extend(t for t in page.get("tools") or [] if isinstance(t, dict))
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return listed

    def make_tools(self, taken: set[str]) -> list[Tool]:
        tools = []
        for listed in self.listed:
            original = str(listed.get("name") or "")
            if not original:
                continue
            name = _unique(_tool_name(self.name, original), taken)
            taken.add(name)
            schema = listed.get("inputSchema")
            schema = dict(schema) if isinstance(schema, dict) else {}
            schema.setdefault("type", "object")
            if schema["type"] == "object":
                schema.setdefault("properties", {})
            description = listed.get("description") or listed.get("title") or original
            tools.append(Tool(
                name=name,
                description=str(description),
                input_schema=schema,
                fn=self._caller(original),
                source=f"mcp:{self.name}",
            ))
        return tools

    def _caller(self, original: str) -> Any:
        async def call_mcp_tool(**arguments: Any) -> ToolResult:
            session = self.session
            meta = {"mcp_server": self.name, "mcp_tool": original}
            if session is None:
                return ToolResult(f"error: MCP server {self.name!r} is not running", True, meta)
            try:
                result = await session.call_tool(original, arguments)
            except Exception as exc:
                if self.closed_connection(exc):
                    await self.stderr.settle()
                why = self._describe(exc)
                if self.closed_connection(exc) and not self.stop.is_set():
                    # it crashed: say so in its status too
                    self._fail(why)
                return ToolResult(f"error: MCP server {self.name!r}: {why}", True, meta)
            dumped = _dump(result)
            text, attachments = convert_content(dumped)
            return ToolResult(text, bool(dumped.get("isError")), meta, attachments)

        return call_mcp_tool

    def _fail(self, why: str) -> None:
        if not self.status.status.startswith("failed"):
            self.status.status = f"failed: {self.spec.redact(why)}"

    @staticmethod
    def closed_connection(exc: BaseException) -> bool:
        return "connection closed" in str(_leaf(exc)).lower()

    def _describe(self, exc: BaseException) -> str:
        leaf = _leaf(exc)
        if isinstance(leaf, CommandNotFound):
            return self.spec.redact(str(leaf))
        status = getattr(getattr(leaf, "response", None), "status_code", None)
        text = str(leaf).strip()
        if status is not None:
            why = f"HTTP {status} {_phrase(status)} from {self.spec.url}"
        elif self.http_error and not self.ready.is_set():
            why = f"{self.http_error} from {self.spec.url}"
        elif self.closed_connection(leaf):
            why = "the server closed the connection"
            if self.phase != "running":
                why += f" while {self.phase}"
        elif type(leaf).__name__ in ("ConnectError", "ConnectTimeout"):
            why = f"cannot connect to {self.spec.url}: {text or type(leaf).__name__}"
        else:
            why = f"{type(leaf).__name__}: {text}" if text else type(leaf).__name__
        tail = self.stderr.last_line()
        if tail and (self.phase != "running" or self.closed_connection(leaf)):
            why = f"{why} (stderr: {tail})"  # why it died, most likely
        return self.spec.redact(why)


async def _stop_all(runners: list[_Server]) -> None:
    for runner in runners:
        runner.request_stop()
    tasks = [r.task for r in runners if r.task is not None and not r.task.done()]
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=CLOSE_TIMEOUT)
    for task in pending:  # the SDK's shutdown is bounded: this is a last resort
        log.warning("MCP server task %s did not stop in time; cancelling it", task.get_name())
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=2.0)


# ----------------------------------------------------------------------------- helpers


def _dump(model: Any) -> dict[str, Any]:
    """An SDK model in its wire shape (camelCase keys), whatever the SDK's attribute names."""
    if isinstance(model, dict):
        return model
    dumped: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, asyncio.CancelledError)]
        exc = (inner or list(exc.exceptions))[0]
    return exc


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
