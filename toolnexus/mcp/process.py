"""How a stdio MCP server's process runs: so that nothing it starts outlives it, with only a
bounded tail of its stderr kept.

A stdio server runs under the launcher every command of a tool runs under (sandbox.reaped:
a PID namespace, else a subreaper), in a process group of its own (the SDK starts a new
session): when the server exits, or this process dies however it dies, everything it
started goes with it, also what `sh -c`, `npx` or `uvx` started and what called setsid. It
is not confined by the sandbox: a server is a program the user chose to trust. Only the
last STDERR_TAIL bytes of a server's stderr are kept, and what is shown of them is
`visible`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from typing import IO

from ..sandbox import reaped
from ..visible import visible
from .config import ServerSpec

STDERR_TAIL = 64 * 1024  # bytes of a server's stderr kept for its status
STDERR_SETTLE = 1.0  # seconds to wait for a dying server's last stderr line


class CommandNotFound(Exception):
    """The server's command is not on its PATH; the message is fit for its status."""


def supervised_command(spec: ServerSpec) -> tuple[str, list[str]]:
    """The command and args that run `spec`'s server so that nothing it starts outlives
    it. Raises CommandNotFound before anything is started."""
    path = spec.env.get("PATH", os.environ.get("PATH", os.defpath))
    relative = os.sep in spec.command and not os.path.isabs(spec.command)
    if not (spec.cwd and relative) and shutil.which(spec.command, path=path) is None:
        raise CommandNotFound(f"command not found: {spec.command!r}")
    command, *args = reaped([spec.command, *spec.args])
    return command, args


class StderrTail(asyncio.Protocol):
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


class StderrPipe:
    """A pipe for one server's stderr: the SDK hands the write end to the process, the
    event loop reads the other into a StderrTail."""

    def __init__(self) -> None:
        self.tail = StderrTail()
        self._write_end: IO[str] | None = None
        self._handed_over = False

    async def open(self) -> IO[str]:
        read_end, write_end = os.pipe()
        self._write_end = os.fdopen(write_end, "w")
        await asyncio.get_running_loop().connect_read_pipe(
            lambda: self.tail, os.fdopen(read_end, "rb", buffering=0))
        return self._write_end

    def close_write_end(self) -> None:
        """Once the server has its own copy (EOF then comes when it is gone), or at the end."""
        if self._write_end is not None:
            self._write_end.close()
            self._write_end = None
            self._handed_over = True

    async def settle(self) -> None:
        """Give a server that just died a moment to finish its last stderr line."""
        if self._handed_over:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STDERR_SETTLE):
                    await self.tail.closed.wait()

    def last_line(self) -> str:
        return self.tail.last_line()
