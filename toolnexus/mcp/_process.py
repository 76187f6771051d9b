"""How a stdio MCP server's process runs: so that nothing it starts outlives it, its
messages read and written line by line, a bounded tail of its stderr kept, and a quick end.

A stdio server runs under the launcher every command of a tool runs under (sandbox.reaped:
a PID namespace, else a subreaper), in a process group of its own: when the server exits,
or this process dies however it dies, everything it started goes with it, also what
`sh -c`, `npx` or `uvx` started and what called setsid. It is not confined by the sandbox:
a server is a program the user chose to trust. It gets the few environment variables the
SDK passes on (HOME, PATH, ...) and its own `env`, never the rest (API keys stay here).

The process is ours, not the SDK's stdio transport's, for two reasons: its exit is seen the
moment it happens (a server that dies is restarted, see server.py), and it ends within
STOP_GRACE twice over (stdin closed, then SIGTERM, then SIGKILL), where the SDK's shutdown
waits seconds, so that toolnexus exits at once after its last answer. Only the last
STDERR_TAIL bytes of stderr are kept; what is shown of them is `visible`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from collections.abc import AsyncIterator
from typing import Any

from .._visible import visible
from ..tools.sandbox import reaped
from .config import ServerSpec

STDERR_TAIL = 64 * 1024  # bytes of a server's stderr kept for its status
MAX_MESSAGE = 64 * 1024 * 1024  # bytes in one message (a line); a longer one ends the server
STOP_GRACE = 0.15  # seconds to exit after stdin closes, and again after SIGTERM
EXIT_POLL = 0.02  # seconds between looks at whether the process ended
STDERR_SETTLE = 1.0  # seconds to wait for a dying server's last stderr line
KILLED_WAIT = 10.0  # seconds at most for a killed server's processes to be gone


class CommandNotFound(Exception):
    """The server's command is not on its PATH; the message is fit for its status."""


def supervised_command(spec: ServerSpec) -> list[str]:
    """The command line that runs `spec`'s server so that nothing it starts outlives it.
    Raises CommandNotFound before anything is started."""
    path = spec.env.get("PATH", os.environ.get("PATH", os.defpath))
    relative = os.sep in spec.command and not os.path.isabs(spec.command)
    if not (spec.cwd and relative) and shutil.which(spec.command, path=path) is None:
        raise CommandNotFound(f"command not found: {spec.command!r}")
    return reaped([spec.command, *spec.args])


class StderrTail:
    """The last STDERR_TAIL bytes a server wrote to stderr."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.closed = asyncio.Event()  # the process and all it started are gone

    def add(self, data: bytes) -> None:
        self.data += data
        del self.data[:-STDERR_TAIL]

    def lines(self, count: int) -> list[str]:
        """The last `count` lines that are not blank, made visible, each cut at 300."""
        text = self.data.decode("utf-8", "replace")
        shown = [line.strip() for line in text.splitlines() if line.strip()]
        return [visible(line[:300]) for line in shown[-count:]]

    def last_line(self) -> str:
        found = self.lines(1)
        return found[0] if found else ""


class ServerProcess:
    """One run of a stdio server: `async with process.running() as (read, write)` starts
    it and gives the SDK its message streams; leaving ends it. `exited` resolves when it
    ends by itself."""

    def __init__(self, spec: ServerSpec, stderr: StderrTail) -> None:
        self.spec = spec
        self.stderr = stderr
        self.problem: str | None = None  # why we ended it (a message too long)
        self._proc: asyncio.subprocess.Process | None = None

    @property
    def returncode(self) -> int | None:
        return None if self._proc is None else self._proc.returncode

    def why_it_ended(self) -> str:
        """Its exit, in words: "it exited with status 1", "it was killed by SIGKILL"."""
        if self.problem:
            return self.problem
        code = self.returncode
        if code is None:
            return "it stopped answering"
        # the launcher reports a signal its command died of as 128 + the signal, as a shell
        died_of = -code if code < 0 else code - 128 if 128 < code < 160 else None
        if died_of is None:
            return f"it exited with status {code}"
        try:
            return f"it was killed by {signal.Signals(died_of).name}"
        except ValueError:
            return f"it was killed by signal {died_of}"

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[tuple[Any, Any]]:
        import anyio
        from mcp.client.stdio import get_default_environment

        command, *args = supervised_command(self.spec)
        self._proc = await asyncio.create_subprocess_exec(
            command,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=get_default_environment() | self.spec.env,
            cwd=self.spec.cwd,
            start_new_session=True,
            limit=MAX_MESSAGE,
        )
        to_session, read_stream = anyio.create_memory_object_stream[Any](0)
        write_stream, from_session = anyio.create_memory_object_stream[Any](0)
        try:
            async with anyio.create_task_group() as pumps:
                pumps.start_soon(self._read_stdout, to_session)
                pumps.start_soon(self._write_stdin, from_session)
                pumps.start_soon(self._read_stderr)
                try:
                    yield read_stream, write_stream
                finally:
                    pumps.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.stop()
            for stream in (to_session, read_stream, write_stream, from_session):
                stream.close()
            # Closed now: left to the garbage collector, the pipes' transport may be closed
            # after the event loop is, which fails loudly on the way out (asyncio keeps the
            # transport private; the SDK's stdio transport does the same).
            transport = getattr(self._proc, "_transport", None)
            if transport is not None:
                transport.close()

    async def exited(self) -> None:
        """Returns once the process has ended (by itself, or killed)."""
        # polled: asyncio's wait() also waits for every holder of its pipes to close them
        while self.returncode is None:
            await asyncio.sleep(EXIT_POLL)

    async def stop(self) -> None:
        """End it: stdin closed, then SIGTERM to its process group, then SIGKILL, each
        after STOP_GRACE; the launcher takes everything the server started with it. It
        returns once the server has ended, however long that takes on a busy machine."""
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if await self._ends_within(STOP_GRACE):
                return
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, sig)
        # SIGKILL ends the launcher at once, but what it started dies a moment later (the
        # kernel empties its PID namespace after it): wait until the last holder of the
        # server's stdout and stderr is gone, which is when the server is. Bounded, so that
        # something that escaped the kill and keeps the pipes open cannot hold toolnexus.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(KILLED_WAIT):
                await proc.wait()
        await self.exited()

    async def _ends_within(self, seconds: float) -> bool:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self.exited()
        return self.returncode is not None

    async def _read_stdout(self, to_session: Any) -> None:
        from mcp.shared.message import SessionMessage
        from mcp.types import jsonrpc_message_adapter

        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        async with to_session:
            while True:
                try:
                    line = await stdout.readline()
                except ValueError:  # no line end within MAX_MESSAGE bytes
                    self.problem = f"it sent a message over {MAX_MESSAGE // 2**20} MiB"
                    self._proc.kill()
                    return
                if not line:
                    return
                if not line.strip():
                    continue
                try:
                    message: Any = SessionMessage(
                        jsonrpc_message_adapter.validate_json(line, by_name=False)
                    )
                except ValueError as exc:  # not JSON-RPC: the session hears of it
                    message = exc
                await to_session.send(message)

    async def _write_stdin(self, from_session: Any) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        stdin = self._proc.stdin
        async with from_session:
            async for message in from_session:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
                except (ConnectionError, OSError):  # it is gone: its exit says why
                    return

    async def settle(self) -> None:
        """Give a server that just died a moment to finish its last stderr line."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(STDERR_SETTLE):
                await self.stderr.closed.wait()

    async def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        self.stderr.closed.clear()
        while chunk := await self._proc.stderr.read(65536):
            self.stderr.add(chunk)
        self.stderr.closed.set()
