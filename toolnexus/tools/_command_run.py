"""Running one command for a tool: in a process group of its own that is killed whole when
the command ends, times out or the run is cancelled, keeping the first HEAD_BYTES and the
last TAIL_BYTES of its output (stdout and stderr together; what lies between is counted,
not kept), all of it passed on as it comes to whoever shows (or keeps) it while the
command runs. How it ended is what the
launcher (_sandbox_exec.py) tells through a pipe of its own, where it runs: its exit code or
the signal that killed it, and what the sandbox's network saw of it."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import os
import re
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

# What the model reads of a command's output: its beginning and its end, together under
# the toolkit's default cap on a result (DEFAULT_MAX_OUTPUT characters), so neither the end
# nor the note on what was cut is lost to that cap.
HEAD_BYTES = 40_000
TAIL_BYTES = 40_000
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))  # of a UTF-8 character, after its first
# What a command prints when the system refused it something: in a sandbox, maybe the
# sandbox (Landlock answers EACCES, or EXDEV for a link or move across what it allows).
_REFUSED = re.compile(
    r"permission denied|operation not permitted|read-only file system|"
    r"invalid cross-device link",
    re.I,
)


class Ended(NamedTuple):
    """How a command ended, for its tool's result: its exit code, or the name of the
    signal that killed it; neither when it was killed at its timeout."""

    exit_code: int | None
    signal: str | None
    timed_out: bool


@dataclass
class Ran:
    """How a command ended: its exit code (None if it did not exit: killed by `signal`,
    or at its timeout), what it printed (its beginning and end, with a note where the
    middle was cut) and how many bytes were cut. `network_failed`: the sandbox's own
    network namespace saw it try a connection that network cannot carry (to the host or
    beyond, or to a loopback port nothing listens on)."""

    code: int | None
    output: str
    cut: int = 0
    signal: int | None = None
    network_failed: bool = False

    @property
    def timed_out(self) -> bool:
        return self.code is None and self.signal is None

    @property
    def signal_name(self) -> str | None:
        if self.signal is None:
            return None
        try:
            return signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    @property
    def ended(self) -> Ended:
        return Ended(self.code, self.signal_name, self.timed_out)

    @property
    def refused_something(self) -> bool:
        """Whether it printed that the system refused it something (a pipeline may still
        have ended well)."""
        return bool(_REFUSED.search(self.output))

    def report(self, timeout: float) -> str:
        """What the model reads."""
        if self.timed_out:
            return f"killed after {timeout:g} s (timeout)\n{self.output}".rstrip("\n")
        if self.signal is not None:
            return f"killed by {self.signal_name}\n{self.output}".rstrip("\n")
        return f"exit code {self.code}\n{self.output}"


async def run_command(
    command: Callable[[int], list[str]],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    on_output: Callable[[str], None] | None = None,
) -> Ran:
    """Run the command line `command` makes given the file descriptor its launcher tells
    how it ended through (Sandbox.command's and reaped's `tell`); `on_output` gets each
    piece of its output, decoded, as it comes."""
    told, tell = os.pipe()
    os.set_blocking(told, False)
    try:
        argv = command(tell)
        return await _run(argv, tell, told, cwd=cwd, env=env, timeout=timeout, on_output=on_output)
    finally:
        os.close(told)
        os.close(tell)


async def _run(
    argv: list[str],
    tell: int,
    told: int,
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    on_output: Callable[[str], None] | None,
) -> Ran:
    starting = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
            pass_fds=(tell,),
        )
    )
    try:
        process = await asyncio.shield(starting)
    except asyncio.CancelledError:
        # Cancelled while it was being started: the command may be running already.
        with contextlib.suppress(Exception):
            started = await starting
            kill_group(started.pid)
            await started.wait()
        raise
    kept = OutputEnds()
    try:
        assert process.stdout is not None
        await asyncio.wait_for(_read(process.stdout, kept, on_output), timeout)
        code: int | None = await process.wait()
    except TimeoutError:
        code = None
    finally:
        kill_group(process.pid)
        await process.wait()
    ran = Ran(code, kept.text(), kept.cut)
    if code is not None:
        _take_what_was_told(ran, _read_told(told))
    return ran


def _read_told(told: int) -> dict[str, Any]:
    """What the launcher wrote before it exited (nothing where none ran, or it died)."""
    data = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(told, 4096):
            data += chunk
    try:
        found = json.loads(data)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _take_what_was_told(ran: Ran, told: dict[str, Any]) -> None:
    if isinstance(told.get("signal"), int):
        ran.code, ran.signal = None, told["signal"]
    elif isinstance(told.get("exit"), int):
        ran.code = told["exit"]
    elif ran.code is not None and ran.code < 0:  # no launcher: the process's own status
        ran.signal, ran.code = -ran.code, None
    network = told.get("network")
    if isinstance(network, dict):
        ran.network_failed = any(isinstance(n, int) and n > 0 for n in network.values())


async def _read(
    stream: asyncio.StreamReader,
    kept: OutputEnds,
    on_output: Callable[[str], None] | None,
) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a character split by a read
    while chunk := await stream.read(65536):
        kept.add(chunk)
        if on_output is not None:
            on_output(decoder.decode(chunk))
    if on_output is not None:
        on_output(decoder.decode(b"", final=True))


class OutputEnds:
    """The first HEAD_BYTES and the last TAIL_BYTES of a command's output, and how much it
    printed in all: a command that prints gigabytes is held in no more memory than that."""

    def __init__(self) -> None:
        self.head = bytearray()
        self._tail = bytearray()  # the end so far; trimmed once it is twice TAIL_BYTES
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        if len(self._tail) > 2 * TAIL_BYTES:
            del self._tail[:-TAIL_BYTES]

    @property
    def tail(self) -> bytes:
        return bytes(self._tail[-TAIL_BYTES:])

    @property
    def cut(self) -> int:
        """Bytes between the beginning and the end kept, counted but not kept."""
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        """The output, or its beginning and end with a note in the middle saying what was
        cut there and how to see more."""
        if not self.cut:
            return (self.head + self.tail).decode("utf-8", "replace")
        # a character the cut split in two is left out, not shown as a replacement mark
        head = codecs.getincrementaldecoder("utf-8")("replace").decode(bytes(self.head))
        tail = self.tail.lstrip(_CONTINUATION_BYTES).decode("utf-8", "replace")
        return (
            f"{head}\n[{self.cut:,} bytes cut here: the command printed {self.total:,} bytes, "
            f"of which the first {len(self.head):,} and the last {len(self.tail):,} are shown. "
            "To see more, run it again narrowed (grep, head, tail, sed -n), or with its "
            "output written to a file in the workspace, and read that file in parts.]\n"
            f"{tail}"
        )


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # gone (EPERM: only zombies are left)
        pass
