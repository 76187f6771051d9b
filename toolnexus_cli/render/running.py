"""The tool calls of a turn that are running, as the live region shows them: a spinner
line with the seconds they have run, what a tool reported (its progress, its messages) and
the last lines it printed in a panel of its own, and the last log messages of an MCP server
in a panel under the server's name, each line cut to the terminal's width. What a tool
reports comes from it, or from an MCP server: it is made `visible` on the way in."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.panel import Panel
from rich.spinner import Spinner
from rich.text import Text

from toolnexus.app_support import visible

from .tool_output import OutputTail

MESSAGES_SHOWN = 3  # a tool's last messages in its panel


@dataclass
class _Call:
    name: str
    started: float
    progress: str = ""  # "3/10", or "3" when the total is unknown
    messages: deque[str] = field(default_factory=lambda: deque(maxlen=MESSAGES_SHOWN))
    printed: OutputTail = field(default_factory=OutputTail)


class RunningTools:
    """Fed by the renderer (start, report, finish); renders while any call runs."""

    def __init__(self) -> None:
        self.calls: dict[str, _Call] = {}
        self.logs: dict[str, deque[str]] = {}  # an MCP server's last log messages, by server
        self.spinner = Spinner("dots")  # one spinner, so that it turns

    def __bool__(self) -> bool:
        return bool(self.calls)

    def start(self, call_id: str, name: str) -> None:
        self.calls[call_id] = _Call(visible(name), time.monotonic())

    def report(
        self, call_id: str, message: str, progress: float | None, total: float | None
    ) -> None:
        call = self.calls.get(call_id)
        if call is None:
            return
        if progress is not None:
            call.progress = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        shown = visible(" ".join(message.split()))[:200]
        if shown and (not call.messages or call.messages[-1] != shown):
            call.messages.append(shown)

    def log(self, server: str, message: str) -> None:
        """A log message of an MCP server while its call runs."""
        shown = visible(" ".join(message.split()))[:200]
        if shown:
            logs = self.logs.setdefault(visible(server), deque(maxlen=MESSAGES_SHOWN))
            logs.append(shown)

    def output(self, call_id: str, text: str) -> None:
        """The next piece of what a call prints."""
        call = self.calls.get(call_id)
        if call is not None:
            call.printed.add(text)

    def finish(self, call_id: str) -> None:
        self.calls.pop(call_id, None)
        if not self.calls:
            self.logs.clear()

    def cut(self) -> list[Panel]:
        """The turn was stopped: the calls running then are no more; of each that printed
        something, a panel with the last lines it printed, titled as cut."""
        calls, self.calls = self.calls, {}
        self.logs.clear()
        return [
            Panel(
                tail_text(call.printed.lines),
                title=Text(f"✗ {call.name} · cut"),
                title_align="left",
                border_style="red",
                expand=False,
            )
            for call in calls.values()
            if call.printed.lines
        ]

    def restart_clock(self, name: str) -> None:
        """A call asked about (approved just now) begins to run only now."""
        for call in self.calls.values():
            if call.name == visible(name) and not (call.progress or call.messages):
                call.started = time.monotonic()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        now = time.monotonic()
        for call in self.calls.values():
            lines = call.printed.lines
            if call.progress or call.messages or lines:
                body = "\n".join(line for line in (call.progress, *call.messages) if line)
                yield Panel(
                    Group(
                        *([Text(body)] if body else []),
                        *([tail_text(lines)] if lines else []),
                    ),
                    title=Text(f"⚙ {call.name} · {now - call.started:.0f}s"),
                    title_align="left",
                    border_style="cyan",
                    expand=False,
                )
        for server, logs in self.logs.items():
            yield Panel(
                Text("\n".join(logs), style="dim"),
                title=Text(f"{server} · log"),
                title_align="left",
                border_style="dim",
                expand=False,
            )
        first = min(self.calls.values(), key=lambda call: call.started)
        names = ", ".join(call.name for call in self.calls.values())
        self.spinner.update(text=Text(f"running {names}… {now - first.started:.0f}s", style="dim"))
        yield self.spinner


def tail_text(lines: tuple[str, ...]) -> Text:
    """The last lines a call printed, each cut to the width it is drawn in."""
    return Text("\n".join(lines), no_wrap=True, overflow="ellipsis")
