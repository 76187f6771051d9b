"""The chat's /last command (Ctrl-O at the prompt does the same): the whole output of the
last tool call in a pager, `$PAGER` or `less -R`; printed where there is no pager or no
terminal. The kept output was made visible as it was kept (tool_output.py).

While the pager runs, Ctrl-C is the pager's (less stops a search with it): the terminal
sends SIGINT to the chat too, which then does nothing."""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from ..render.tool_output import KeptOutputs

COMMANDS = {
    "/last": "the whole output of the last tool call, in a pager (Ctrl-O at the prompt too)",
}
DEFAULT_PAGER = ["less", "-R"]


class OutputCommands:
    """Mixed into Commands, which gives `kept`, `console` and `say`."""

    kept: KeptOutputs
    console: Console
    say: Callable[..., None]

    async def last(self, arg: str) -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, lambda: None)  # the pager's
        try:
            await asyncio.to_thread(show_last, self.kept, self.console)
        finally:
            loop.remove_signal_handler(signal.SIGINT)


def show_last(outputs: KeptOutputs, console: Console) -> None:
    """The last call's output in the pager, or printed under a line saying whose it is."""
    kept = outputs.last()
    if kept is None:
        console.print(Text("no tool call yet in this chat", style="dim"))
        return
    command = _pager()
    if command and sys.stdin.isatty() and sys.stdout.isatty():
        try:
            with kept.path.open("rb") as text:
                subprocess.run(command, stdin=text, check=False)
            return
        except OSError:  # no such program: printed instead
            pass
    console.print(Text(f"the whole output of {kept.name}:", style="dim"))
    console.print(Text(kept.text().rstrip("\n") or "(no output)"))


def _pager() -> list[str] | None:
    """$PAGER as a command line (None when it cannot be read), else `less -R`."""
    setting = os.environ.get("PAGER", "").strip()
    if not setting:
        return DEFAULT_PAGER
    try:
        return shlex.split(setting) or None
    except ValueError:
        return None
