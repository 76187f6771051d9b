"""How a stdio MCP server's process runs: under a supervisor that leads its process group,
with only a bounded tail of its stderr kept.

A stdio server runs in a process group of its own (the SDK starts a new session) under a
tiny supervisor, the group's leader: when the server exits, or this process dies however it
dies (Linux tells the supervisor), the supervisor kills the whole group, so servers started
through `sh -c`, `npx` or `uvx` leave no grandchild behind. Only the last STDERR_TAIL bytes of
a server's stderr are kept, and what is shown of them is `visible`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
from typing import IO

from ..visible import visible
from .config import ServerSpec

STDERR_TAIL = 64 * 1024  # bytes of a server's stderr kept for its status
STDERR_SETTLE = 1.0  # seconds to wait for a dying server's last stderr line

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


class CommandNotFound(Exception):
    """The server's command is not on its PATH; the message is fit for its status."""


def supervised_command(spec: ServerSpec) -> tuple[str, list[str]]:
    """The command and args that run `spec`'s server under the supervisor (as given where
    there are no process groups). Raises CommandNotFound before anything is started."""
    path = spec.env.get("PATH", os.environ.get("PATH", os.defpath))
    relative = os.sep in spec.command and not os.path.isabs(spec.command)
    if not (spec.cwd and relative) and shutil.which(spec.command, path=path) is None:
        raise CommandNotFound(f"command not found: {spec.command!r}")
    if os.name != "posix":
        return spec.command, spec.args
    supervisor = ["-I", "-S", "-c", SUPERVISOR, str(os.getpid())]
    return sys.executable, [*supervisor, spec.command, *spec.args]


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
