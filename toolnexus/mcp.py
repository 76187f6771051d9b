"""MCP servers as a tool source: local servers over stdio, remote ones over streamable HTTP.

    statuses = await add_mcp_servers(toolkit, "mcp.json")   # or an already-parsed dict
    ...
    await toolkit.close()                                    # ends every server

The config is the common `mcp.json` shape: a top-level `mcpServers`, `servers` or `mcp`
object of servers by name; each has `command` + `args` + `env` (stdio) or `url` + `headers`
(streamable HTTP), and may say `disabled: true`. `${VAR}` (or `${VAR:-default}`) in the
command, args, env, cwd, url and headers is replaced from the environment; the values never
appear in a status, an error or a log line.

Built on the official `mcp` SDK, an optional extra (`pip install 'toolnexus[mcp]'`) imported
only when `add_mcp_servers` runs. The SDK's context managers must be entered and exited in
one task, so each server lives in a background task of its own: it connects, signals ready,
waits for the toolkit to close, then disconnects. A server that fails or is too slow to start
is isolated: its status says why and the other servers keep working.

A stdio server runs in a process group of its own (the SDK starts a new session) under a
tiny supervisor, the group's leader: when the server exits, or the toolkit's process dies
however it dies (Linux tells the supervisor), the supervisor kills the whole group, so
servers started through `sh -c`, `npx` or `uvx` leave no grandchild behind. Only the last
STDERR_TAIL bytes of a server's stderr are kept, and what is shown of them is `visible`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from types import SimpleNamespace
from typing import IO, Any

from .content import Attachment
from .errors import ToolnexusError
from .toolkit import Toolkit
from .tools import Tool, ToolResult
from .visible import visible

__all__ = ["ServerStatus", "add_mcp_servers"]

log = logging.getLogger("toolnexus.mcp")

INSTALL_HINT = "MCP servers need the mcp package: pip install 'toolnexus[mcp]'"
SERVER_KEYS = ("mcpServers", "servers", "mcp")
CLOSE_TIMEOUT = 10.0  # the SDK's own stdio shutdown is bounded at about 6.5 s
HTTP_TYPES = {"http", "streamable-http", "streamable_http", "streamablehttp", "remote"}
STDIO_TYPES = {"stdio", "local"}
NAME_LIMIT = 64
STDERR_TAIL = 64 * 1024  # bytes of a server's stderr kept for its status
STDERR_SETTLE = 1.0  # seconds to wait for a dying server's last stderr line
MIN_SECRET = 4  # shorter values are not redacted (they would blank out ordinary words)

# The supervisor a stdio server runs under, as the leader of its process group. argv:
# <parent pid> <command> <args...>. It runs the command as its child and waits; when the
# child exits, or its own parent dies (PR_SET_PDEATHSIG sends SIGHUP; checking the parent
# after prctl closes the race where it died first), it SIGKILLs the group, itself included.
# A signal the SDK sends the group (SIGTERM at shutdown) reaches every member by itself.
SUPERVISOR = """\
import os, signal, sys
def end_group(*_):
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGHUP, end_group)
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGHUP, 0, 0, 0)
except Exception:
    pass
if os.getppid() != int(sys.argv[1]):
    end_group()
child = os.fork()
if child == 0:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        sys.stderr.write(f"cannot run {sys.argv[2]!r}: {exc.strerror or exc}\\n")
    os._exit(127)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
while True:
    try:
        os.waitpid(child, 0)
        break
    except InterruptedError:
        continue
    except ChildProcessError:
        break
end_group()
"""


class _StderrTail(asyncio.Protocol):
    """The read end of a server's stderr pipe: keeps the last STDERR_TAIL bytes."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        self.data += data
        del self.data[:-STDERR_TAIL]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()

    def last_line(self) -> str:
        lines = [line.strip() for line in self.data.decode("utf-8", "replace").splitlines()]
        shown = [line for line in lines if line]
        return visible(shown[-1][:300]) if shown else ""


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


async def add_mcp_servers(
    toolkit: Toolkit, config: str | os.PathLike[str] | Mapping[str, Any], *, timeout: float = 30.0
) -> list[ServerStatus]:
    """Start the configured MCP servers concurrently and register their tools on `toolkit`.

    Returns one status per configured server, in config order. Raises ToolnexusError only
    for a config that cannot be read at all (or a missing `mcp` package); a problem with one
    server is its status. `await toolkit.close()` stops every server that was started.
    """
    sdk = _import_sdk()
    servers = _load_servers(config)
    specs = [_parse_server(str(name), entry) for name, entry in servers.items()]
    statuses: list[ServerStatus] = []
    runners: list[_Server] = []
    for spec in specs:
        if spec.disabled:
            status = ServerStatus(spec.name, spec.transport, "disabled")
        elif spec.error:
            status = ServerStatus(spec.name, spec.transport, f"failed: {spec.redact(spec.error)}")
        else:
            status = ServerStatus(spec.name, spec.transport, "starting")
            runners.append(_Server(spec, status, sdk))
        statuses.append(status)
    if not runners:
        return statuses

    async def close_servers() -> None:
        await _stop_all(runners)

    toolkit.on_close(close_servers)
    try:
        await asyncio.gather(*(runner.start(timeout) for runner in runners))
    except BaseException:  # cancelled (Ctrl-C) while starting: leave nothing running
        await _stop_all(runners)
        raise

    taken = {tool.name for tool in toolkit.tools()}
    for runner in runners:
        if runner.status.ok:
            tools = runner.make_tools(taken)
            toolkit.register(*tools)
            runner.status.tools = [tool.name for tool in tools]
    for status in statuses:
        log.info("MCP server %s (%s): %s", status.name, status.transport, status.status)
    return statuses


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


# ----------------------------------------------------------------------------- config


def _load_servers(config: str | os.PathLike[str] | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(config, str | os.PathLike):
        path = Path(config).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            why = exc.strerror or exc
            raise ToolnexusError(f"cannot read the MCP config {path}: {why}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ToolnexusError(
                f"{path}:{exc.lineno}:{exc.colno}: the MCP config is not valid JSON: {exc.msg}"
            ) from None
        where = str(path)
    elif isinstance(config, Mapping):
        data, where = config, "the MCP config"
    else:
        raise TypeError(f"config must be a path or a dict, not {type(config).__name__}")
    if not isinstance(data, Mapping):
        raise ToolnexusError(f"{where}: expected a JSON object with 'mcpServers' in it")
    for key in SERVER_KEYS:
        if key in data:
            servers = data[key]
            if not isinstance(servers, Mapping):
                raise ToolnexusError(f"{where}: '{key}' must be an object of servers by name")
            return servers
    raise ToolnexusError(
        f"{where}: no servers found: expected a top-level 'mcpServers', 'servers' or 'mcp' object"
    )


@dataclass
class _Spec:
    name: str
    transport: str
    command: str = ""
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    disabled: bool = False
    error: str | None = None
    secrets: set[str] = field(default_factory=set)

    def redact(self, text: str) -> str:
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, "***")
        return text


_SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASS|AUTH|CREDENTIAL|COOKIE|SESSION", re.I)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _ConfigError(Exception):
    pass


def _expand(value: Any, where: str, secrets: set[str]) -> str:
    """`${VAR}` / `${VAR:-default}` from the environment; every substituted value is a secret."""
    if not isinstance(value, str):
        if isinstance(value, bool | int | float):
            return json.dumps(value)
        raise _ConfigError(f"{where} must be a string")

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is None or (found == "" and default is not None):
            if default is None:
                raise _ConfigError(f"{where} uses ${{{name}}}, which is not set")
            found = default
        if len(found) >= MIN_SECRET:
            secrets.add(found)
        return found

    return _VAR.sub(substitute, value)


def _parse_server(name: str, entry: Any) -> _Spec:
    if not isinstance(entry, Mapping):
        return _Spec(name, "stdio", error="the server entry must be an object")
    kind = str(entry.get("type") or entry.get("transport") or "").lower()
    url = entry.get("url") or entry.get("serverUrl")
    command = entry.get("command")
    remote = kind in HTTP_TYPES or kind == "sse" or (url and not command and not kind)
    transport = "http" if remote else "stdio"
    spec = _Spec(name, transport)
    if entry.get("disabled") is True or entry.get("enabled") is False:
        spec.disabled = True
        return spec
    try:
        if kind and kind not in HTTP_TYPES | STDIO_TYPES:
            if kind == "sse":
                raise _ConfigError("the SSE transport is not supported: give a streamable HTTP url")
            raise _ConfigError(f"unknown transport type {kind!r} (use 'stdio' or 'http')")
        if transport == "http":
            _parse_http(spec, entry, url)
        else:
            _parse_stdio(spec, entry, command)
    except _ConfigError as exc:
        spec.error = str(exc)
    return spec


def _parse_http(spec: _Spec, entry: Mapping[str, Any], url: Any) -> None:
    if not url:
        raise _ConfigError("a remote server needs a 'url'")
    spec.url = _expand(url, "url", spec.secrets)
    if not spec.url.startswith(("http://", "https://")):
        raise _ConfigError("the url must start with http:// or https://")
    headers = entry.get("headers") or {}
    if not isinstance(headers, Mapping):
        raise _ConfigError("'headers' must be an object")
    for key, value in headers.items():
        spec.headers[str(key)] = expanded = _expand(value, f"headers.{key}", spec.secrets)
        if len(expanded) >= MIN_SECRET:  # a literal token in the file is a secret too
            spec.secrets.add(expanded)


def _parse_stdio(spec: _Spec, entry: Mapping[str, Any], command: Any) -> None:
    args = entry.get("args") or []
    if isinstance(command, list) and command:  # the `mcp` style: command: [cmd, *args]
        command, args = command[0], [*command[1:], *args]
    if not command:
        raise _ConfigError("a local server needs a 'command' (or a 'url' for a remote one)")
    if not isinstance(args, list):
        raise _ConfigError("'args' must be a list")
    env = entry.get("env") or entry.get("environment") or {}
    if not isinstance(env, Mapping):
        raise _ConfigError("'env' must be an object")
    for key, value in env.items():
        spec.env[str(key)] = expanded = _expand(value, f"env.{key}", spec.secrets)
        if _SECRET_NAME.search(str(key)) and len(expanded) >= MIN_SECRET:
            spec.secrets.add(expanded)  # a literal token in the file is a secret too
    spec.command = _expand(command, "command", spec.secrets)
    spec.args = [_expand(arg, f"args[{i}]", spec.secrets) for i, arg in enumerate(args)]
    if entry.get("cwd"):
        spec.cwd = str(Path(_expand(entry["cwd"], "cwd", spec.secrets)).expanduser())


# ----------------------------------------------------------------------------- one server


class _Server:
    """One server's background task: enter the SDK contexts, serve, exit them, all in it."""

    def __init__(self, spec: _Spec, status: ServerStatus, sdk: SimpleNamespace) -> None:
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
        self.errlog: IO[str] | None = None  # the write end of the stderr pipe, until spawned
        self.stderr = _StderrTail()
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
                        await self._settle_stderr()
                        self._fail(self._describe(exc))
                        raise
                    self.session = session
                    self.phase = "running"
                    if self.status.status == "starting":
                        self.status.status = "ok"
                    self.ready.set()
                    await self.stop.wait()
        except Exception as exc:
            await self._settle_stderr()
            self._fail(self._describe(exc))
        finally:
            self.session = None
            if self.status.status == "starting":
                self._fail("stopped before it was ready")
            self.ready.set()
            self._close_errlog()

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
        path = spec.env.get("PATH", os.environ.get("PATH", os.defpath))
        relative = os.sep in spec.command and not os.path.isabs(spec.command)
        if not (spec.cwd and relative) and shutil.which(spec.command, path=path) is None:
            raise _StartError(f"command not found: {spec.command!r}")
        command, args = spec.command, spec.args
        if os.name == "posix":
            supervisor = ["-I", "-S", "-c", SUPERVISOR, str(os.getpid())]
            command, args = sys.executable, [*supervisor, command, *args]
        params = sdk.StdioServerParameters(
            command=command, args=args, env=spec.env or None, cwd=spec.cwd
        )
        read_end, write_end = os.pipe()
        self.errlog = os.fdopen(write_end, "w")
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: self.stderr, os.fdopen(read_end, "rb", buffering=0))
        streams = await stack.enter_async_context(sdk.stdio_client(params, errlog=self.errlog))
        self._close_errlog()  # the server has its own copy; EOF comes when it is gone
        return streams

    def _close_errlog(self) -> None:
        if self.errlog is not None:
            self.errlog.close()
            self.errlog = None

    async def _settle_stderr(self) -> None:
        """Give a server that just died a moment to finish its last stderr line."""
        if self.spec.transport == "stdio" and self.errlog is None:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STDERR_SETTLE):
                    await self.stderr.closed.wait()

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
                    await self._settle_stderr()
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
        if isinstance(leaf, _StartError):
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
        tail = self._stderr_tail()
        if tail and (self.phase != "running" or self.closed_connection(leaf)):
            why = f"{why} (stderr: {tail})"  # why it died, most likely
        return self.spec.redact(why)

    def _stderr_tail(self) -> str:
        return self.stderr.last_line()


class _StartError(Exception):
    """A server that cannot start, with a message fit for its status."""


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


def convert_content(result: Mapping[str, Any]) -> tuple[str, list[Attachment]]:
    """A tools/call result (wire shape) as text and attachments: text parts joined, other
    parts summarized; images, audio and binary image/audio/PDF resources also attached."""
    parts: list[str] = []
    attachments: list[Attachment] = []
    for block in result.get("content") or []:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind in ("image", "audio"):
            label = f"[{kind}: {block.get('mimeType') or 'unknown type'}]"
            parts.append(_attach(label, block.get("data"), kind, attachments))
        elif kind == "resource_link":
            label = f" ({block['name']})" if block.get("name") else ""
            parts.append(f"[resource link: {block.get('uri', '')}{label}]")
        elif kind == "resource":
            resource = block.get("resource") or {}
            uri = resource.get("uri", "")
            if isinstance(resource.get("text"), str):
                parts.append(f"[resource: {uri}]\n{resource['text']}")
            else:
                mime = str(resource.get("mimeType") or "binary")
                label = f"[resource: {uri} ({mime})]"
                if mime.startswith(("image/", "audio/", "application/pdf")):
                    label = _attach(label, resource.get("blob"), uri.rsplit("/")[-1],
                                    attachments)
                parts.append(label)
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return "\n".join(parts), attachments


def _attach(label: str, data: Any, name: str, attachments: list[Attachment]) -> str:
    """Attach base64 `data` (the bytes say what it is); the label says so when it cannot."""
    try:
        raw = base64.b64decode(str(data), validate=True)
    except (binascii.Error, ValueError):
        return f"{label[:-1]}, not attached: the data is not base64]"
    try:
        attachment = Attachment.from_bytes(raw, name=name or "attachment")
    except ToolnexusError as exc:
        return f"{label[:-1]}, not attached: {exc}]"
    if attachment.kind == "text":
        return f"{label[:-1]}, not attached: the data is not an image, audio or PDF]"
    attachments.append(attachment)
    return label


def _dump(model: Any) -> dict[str, Any]:
    """An SDK model in its wire shape (camelCase keys), whatever the SDK's attribute names."""
    if isinstance(model, dict):
        return model
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


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
