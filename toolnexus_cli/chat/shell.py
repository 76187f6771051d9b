"""`!command` in the chat: a shell command the user typed, run here (no model, no approval:
the user asked for it), its output shown (the chat asks whether to add it to the next
message).

The command runs in its own process group, so Ctrl-C kills it and whatever it started,
not the chat. Its output is shown `visible` (it is data, like anything a tool prints).
"""

from __future__ import annotations

import asyncio
import codecs
import os
import re
import signal
from dataclasses import dataclass
from typing import Any

from toolnexus.app_support import visible

MAX_KEPT_CHARS = 100_000  # of the output added to a message (all of it is shown)


@dataclass
class ShellRun:
    command: str
    output: str  # at most MAX_KEPT_CHARS of it
    exit_code: int | None  # None: killed by Ctrl-C
    cut: bool = False

    def as_message(self) -> str:
        """The run as a fenced block headed by the command, for the next prompt."""
        longest = max((len(run) for run in re.findall("`+", self.output)), default=0)
        fence = "`" * max(3, longest + 1)
        body = (
            self.output if self.output.endswith("\n") or not self.output else (self.output + "\n")
        )
        lines = [f"{fence}console\n$ {self.command}\n{body}{fence}"]
        if self.cut:
            lines.append(f"(output cut at {MAX_KEPT_CHARS} characters)")
        if self.exit_code is None:
            lines.append("(interrupted)")
        elif self.exit_code:
            lines.append(f"(exit code {self.exit_code})")
        return "\n".join(lines)


async def run_shell(command: str, terminal: Any) -> ShellRun:
    """Run `command` with the user's shell, its output (stdout and stderr) written to
    `terminal` as it comes; Ctrl-C kills its process group."""
    shell = os.environ.get("SHELL") or "/bin/sh"
    process = await asyncio.create_subprocess_exec(
        shell,
        "-c",
        command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()

    def interrupt() -> None:
        interrupted.set()
        _kill_group(process.pid)

    loop.add_signal_handler(signal.SIGINT, interrupt)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    kept: list[str] = []
    size, ends_line = 0, True
    try:
        assert process.stdout is not None
        while chunk := await process.stdout.read(65536):
            text = decoder.decode(chunk)
            terminal.write(visible(text))
            terminal.flush()
            ends_line = text.endswith("\n") if text else ends_line
            kept.append(text[: max(0, MAX_KEPT_CHARS - size)])
            size += len(text)
        await process.wait()
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        _kill_group(process.pid)  # what it left running in the background
    if not ends_line:
        terminal.write("\n")
    return ShellRun(
        command,
        "".join(kept),
        None if interrupted.is_set() else process.returncode,
        cut=size > MAX_KEPT_CHARS,
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # gone (EPERM: only zombies are left)
        pass
