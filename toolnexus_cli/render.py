"""Turning loop events into output: Rich on a terminal, exact text in a pipe.

Only the answer on a piped stdout is the endpoint's exact text. Everything else (the
terminal, and the side channel on stderr) is made `visible` first: no control sequence
from the endpoint, a tool or a server acts on the terminal.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

from toolnexus import RunResult
from toolnexus.visible import visible

RESULT_PREVIEW_LINES = 8


def retry_note(event: dict[str, Any]) -> str:
    return f"{event['reason']}, retrying in {event['delay']:.0f} s (attempt {event['attempt']})"


def unfinished_note(result: RunResult) -> str | None:
    """What to tell the user when a run ended without a final answer."""
    if result.status == "incomplete":
        return (f"note: stopped after {result.turns} model calls without a final answer "
                "(the tools kept being called); ask again to let it go on")
    if result.status == "pending":
        return "note: a tool is waiting for an answer nobody gave; the run stopped there"
    return None


def footer_text(result: RunResult, seconds: float, thread: str | None) -> str:
    usage = result.usage
    completion = usage.get("completion_tokens", 0)
    parts = [result.model, f"{usage.get('total_tokens', 0)} tokens", f"{seconds:.1f} s"]
    if completion and seconds > 0:
        parts.append(f"{completion / seconds:.0f} tok/s")
    if thread:
        parts.append(f"thread {thread}")
    return " · ".join(parts)


def format_args(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def preview(output: str, lines: int = RESULT_PREVIEW_LINES) -> str:
    output = output.rstrip()
    rows = output.splitlines()
    if len(rows) <= lines:
        return output
    return "\n".join(rows[:lines]) + f"\n... {len(rows) - lines} more lines"


class PlainRenderer:
    """For pipes and files: exactly the answer's text on stdout, as it arrives; the rest
    (reasoning, tools, retries) on stderr, and only when verbose."""

    def __init__(self, out: TextIO = sys.stdout, err: TextIO = sys.stderr,
                 verbose: bool = False) -> None:
        self.out, self.err, self.verbose = out, err, verbose
        self.ended_with_newline = True
        self.err_at_line_start = True
        self.wrote = False
        self.started = time.monotonic()

    def event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "text":
            delta = event["delta"]
            self.out.write(delta)
            self.out.flush()
            self.wrote = True
            self.ended_with_newline = delta.endswith("\n")
        elif self.verbose:
            self._side(event)

    def _side(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind == "reasoning":
            self.err.write(visible(event["delta"]))
            self.err_at_line_start = event["delta"].endswith("\n")
        elif kind == "tool_call":
            self._err_line(f"[tool] {event['name']}({format_args(event['args'])})")
        elif kind == "tool_result":
            mark = "error" if event["is_error"] else "result"
            self._err_line(f"[{mark}] {preview(event['output'])}")
        elif kind == "retry":
            self._err_line(f"[retry] {retry_note(event)}")
        self.err.flush()

    def _err_line(self, line: str) -> None:
        """One line on stderr, starting a new line if reasoning left one open."""
        if not self.err_at_line_start:
            self.err.write("\n")
        self.err.write(visible(line) + "\n")
        self.err_at_line_start = True

    def end_answer(self) -> None:
        if self.wrote and not self.ended_with_newline:
            self.out.write("\n")
            self.out.flush()
        self.ended_with_newline = True
        if not self.err_at_line_start:  # reasoning left a line open on stderr
            self.err.write("\n")
            self.err.flush()
            self.err_at_line_start = True

    def finish(self, result: RunResult, thread: str | None) -> None:
        self.end_answer()
        if self.verbose:
            seconds = time.monotonic() - self.started
            self._err_line(footer_text(result, seconds, thread))
            self.err.flush()


class TerminalRenderer:
    """For a terminal: live Markdown, dimmed reasoning, tool panels, a footer."""

    def __init__(self, console: Any, ui: dict[str, Any]) -> None:
        self.console = console
        self.ui = ui
        self.stream: Any = None
        self.started = time.monotonic()

    def _live(self) -> Any:
        if self.stream is None:
            from .markdown_stream import MarkdownStream

            self.started = time.monotonic()
            self.stream = MarkdownStream(self.console, code_theme=self.ui["code_theme"],
                                         show_reasoning=self.ui["show_reasoning"])
        return self.stream

    def start(self) -> None:
        self._live()

    def event(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        stream = self._live()
        if kind == "text":
            stream.text(event["delta"])
        elif kind == "reasoning":
            stream.think(event["delta"])
        elif kind == "tool_call":
            stream.print(self._panel(format_args(event["args"]), f"⚙ {event['name']}", "cyan"))
            stream.note(f"running {event['name']}…")
        elif kind == "tool_result":
            style = "red" if event["is_error"] else "green"
            title = f"{'✗' if event['is_error'] else '✓'} {event['name']}"
            stream.print(self._panel(preview(event["output"]) or "(no output)", title, style))
            stream.note("")
        elif kind == "retry":
            stream.note(retry_note(event))

    def _panel(self, body: str, title: str, style: str) -> Any:
        from rich.panel import Panel
        from rich.text import Text

        return Panel(Text(visible(body)), title=Text(visible(title)), title_align="left",
                     border_style=style, expand=False)

    def end_answer(self) -> None:
        if self.stream is not None:
            self.stream.finish()
            self.stream = None

    def finish(self, result: RunResult, thread: str | None) -> None:
        self.end_answer()
        if self.ui["footer"]:
            from rich.text import Text

            seconds = time.monotonic() - self.started
            footer = footer_text(result, seconds, thread)
            self.console.print(Text(visible(footer), style="dim"))
