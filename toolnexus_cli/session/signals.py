"""SIGTERM and SIGHUP end a run the way Ctrl-C does, so its clean-up runs.

Killed by default, the CLI would leave behind what its tools started (a `bash` command's
process group, MCP servers). Under `Interrupts`, SIGTERM (`kill`) and SIGHUP (a closed
terminal) stop the turn that is running, as Ctrl-C does, or else cancel the whole command;
either way every resource is closed on the way out, and the exit code is 128 + the signal.
"""

from __future__ import annotations

import asyncio
import signal

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Interrupts:
    """Entered inside the command's main task. `turn` is the cancel event of the turn
    running now (None between turns)."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.turn: asyncio.Event | None = None
        self._task: asyncio.Task[object] | None = None

    def __enter__(self) -> Interrupts:
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for signum in ENDING_SIGNALS:
            loop.add_signal_handler(signum, self._on_signal, signum)
        return self

    def __exit__(self, *exc: object) -> None:
        loop = asyncio.get_running_loop()
        for signum in ENDING_SIGNALS:
            loop.remove_signal_handler(signum)

    def _on_signal(self, signum: int) -> None:
        first = self.received is None
        self.received = self.received or signum
        if self.turn is not None and not self.turn.is_set():
            self.turn.set()
        elif first and self._task is not None:
            self._task.cancel()

    def exit_code(self, default: int) -> int:
        return 128 + self.received if self.received else default
