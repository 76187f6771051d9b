"""Running one command for a tool: in a process group of its own that is killed whole when
the command ends, times out or the run is cancelled, reading at most MAX_OUTPUT_BYTES of
its output (stdout and stderr together; the rest is counted, not kept). All of it is passed
on as it comes, to whoever shows it while the command runs."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import re
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

MAX_OUTPUT_BYTES = 1024 * 1024
# What a command prints when the system refused it something: in a sandbox, maybe the
# sandbox (Landlock answers EACCES, or EXDEV for a link or move across what it allows).
_REFUSED = re.compile(
    r"permission denied|operation not permitted|read-only file system|"
    r"invalid cross-device link",
    re.I,
)


@dataclass
class Ran:
    """How a command ended: its exit code (None: killed at its timeout), what it printed
    (up to MAX_OUTPUT_BYTES) and how many bytes more it printed."""

    code: int | None
    output: str
    more: int = 0

    @property
    def refused_something(self) -> bool:
        """Whether it printed that the system refused it something (a pipeline may still
        have ended well)."""
        return bool(_REFUSED.search(self.output))

    def report(self, timeout: float) -> str:
        """What the model reads."""
        cut = f"\n[output cut: {self.more} more bytes]" if self.more else ""
        if self.code is None:
            return f"killed after {timeout:g} s (timeout)\n{self.output}{cut}".rstrip("\n")
        return f"exit code {self.code}\n{self.output}{cut}"


async def run_command(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    on_output: Callable[[str], None] | None = None,
) -> Ran:
    """Run `argv`; `on_output` gets each piece of its output, decoded, as it comes."""
    starting = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            stdin=asyncio.subprocess.DEVNULL,
            start_new_session=True,
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
    kept, more = bytearray(), [0]
    try:
        assert process.stdout is not None
        await asyncio.wait_for(_read(process.stdout, kept, more, on_output), timeout)
        code: int | None = await process.wait()
    except TimeoutError:
        code = None
    finally:
        kill_group(process.pid)
        await process.wait()
    return Ran(code, kept.decode("utf-8", "replace"), more[0])


async def _read(
    stream: asyncio.StreamReader,
    kept: bytearray,
    more: list[int],
    on_output: Callable[[str], None] | None,
) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")("replace")  # a character split by a read
    while chunk := await stream.read(65536):
        room = MAX_OUTPUT_BYTES - len(kept)
        kept += chunk[:room]
        more[0] += max(0, len(chunk) - room)
        if on_output is not None:
            on_output(decoder.decode(chunk))
    if on_output is not None:
        on_output(decoder.decode(b"", final=True))


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # gone (EPERM: only zombies are left)
        pass
