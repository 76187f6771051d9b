"""Turning loop events into output: Rich on a terminal, exact text in a pipe.

Only the answer on a piped stdout is the endpoint's exact text. Everything else (the
terminal, and the side channel on stderr) is made `visible` first: no control sequence
from the endpoint, a tool or a server acts on the terminal.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from toolnexus import RunResult, Usage
from toolnexus.app_support import unmistakable, visible
from toolnexus.events import CONTEXT_FULL, CUT_OFF, FILTERED, MAX_TOKENS, REFUSED

from .result_status import result_status
from .speed import NO_SPEED, RunClock, Speed, speed_of
from .tool_panels import call_body, call_title, measured_text, title_says_all
from .words import counted

if TYPE_CHECKING:
    from toolnexus.context.pricing import Price
    from toolnexus.types import (
        Event,
        RetryEvent,
        ToolCallEvent,
        ToolProgressEvent,
        ToolResultEvent,
        WaitingEvent,
    )

    from ..config.settings import UiSettings
    from ..tools.toolbox import ChangeView
    from .tool_output import KeptOutputs

RESULT_PREVIEW_LINES = 8


def retry_note(event: RetryEvent) -> str:
    """Why a model call is tried again, which retry of how many, and when: "the server
    sent nothing for 60 s: retry 2 of 3 in 1.5 s"."""
    return f"{event['reason']}: {retry_count(event)} in {round(event['delay'], 1):g} s"


def retry_count(event: RetryEvent) -> str:
    """ "retry 2 of 3": which retry of a model call this is, of how many at most."""
    return f"retry {event['attempt']} of {event['max_attempts']}"


def waiting_note(event: WaitingEvent) -> str:
    names = ", ".join(event["sources"])
    limit = event["limit"]
    most = "" if limit is None else f" (at most {limit:g} s)"
    return (
        f"waiting for MCP server{'s' if len(event['sources']) > 1 else ''} {names} to start{most}"
    )


def late_note(event: WaitingEvent) -> str | None:
    """When a model call stopped waiting for MCP servers still starting: which it went
    without (None: it went without none)."""
    late = event["late"]
    if not late:
        return None
    plural = "s" if len(late) > 1 else ""
    return f"asked without MCP server{plural} {', '.join(late)} (still starting)"


def progress_note(event: ToolProgressEvent) -> str:
    done = event["progress"]
    counted = (
        ""
        if done is None
        else (f"{done:g}/{event['total']:g} " if event["total"] else f"{done:g} ")
    )
    return f"{event['name']}: {counted}{event['message']}".rstrip()


# What the footer says of an answer that is not whole, by its incomplete reason.
_STOPPED = {
    MAX_TOKENS: "cut off at max_tokens",
    CONTEXT_FULL: "cut off: the context is full",
    FILTERED: "stopped by the content filter",
    REFUSED: "refused",
    CUT_OFF: "stopped early",
}


def unfinished_note(result: RunResult) -> str | None:
    """What to tell the user when a run ended without a (whole) final answer."""
    said = f"(finish reason {str(result.finish_reason)[:60]!r})"
    why = result.incomplete_reason
    if why == MAX_TOKENS:
        return (
            f"note: the answer was cut off at max_tokens {said}; ask it to go on, or raise "
            "max_tokens in the model's request_params"
        )
    if why == CONTEXT_FULL:
        return (
            f"note: the answer was cut off when the model's context window filled up "
            f"{said}; compact the thread or start a new one"
        )
    if why == FILTERED:
        return f"note: the provider's content filter stopped the answer {said}"
    if why == REFUSED:
        return (
            "note: the model refused; the exchange stays in the thread but is not sent "
            "with the next prompt"
        )
    if why == CUT_OFF:
        return f"note: the provider stopped the answer before its end {said}"
    if result.status == "incomplete":
        return (
            f"note: stopped after {result.turns} model calls without a final answer "
            "(the tools kept being called); ask again to let it go on"
        )
    if result.status == "pending":
        return "note: a tool is waiting for an answer nobody gave; the run stopped there"
    return None


def result_json(result: RunResult, thread: str, price: Price | None = None) -> dict[str, Any]:
    """The one JSON object `ask --json` prints for a finished run; with the model's price,
    `cost` is what the run cost in USD."""
    body: dict[str, Any] = {
        "text": result.text,
        "thread": thread,
        "model": result.model,
        "status": result.status,
        "finish_reason": result.finish_reason,
        "usage": result.usage,
        "tool_calls": result.tool_calls,
    }
    if price is not None:
        from toolnexus.context.pricing import turn_cost

        body["cost"] = turn_cost(result, price)
    if result.incomplete_reason:
        body["incomplete_reason"] = result.incomplete_reason
    if result.data is not None:  # asked for with a schema
        body["data"] = result.data
    return body


@dataclass(frozen=True, slots=True)
class FooterFacts:
    """What the footer shows beyond the run's own numbers, from whoever knows them."""

    window: int | None = None  # the model's context window in tokens, when known
    fill: int | None = None  # what the context holds (None: the last call's prompt tokens)
    fill_estimated: bool = False  # part of `fill` is an estimate (shown with "~")
    price: Price | None = None  # the model's, when the config gives one
    thread_usage: Usage | None = None  # the thread's usage summed over its turns, this one in
    approvals_off: bool = False  # --yes: tool calls that would ask run without a question
    budget: tuple[float, float] | None = None  # USD spent and the limit, under --max-cost


NO_FACTS = FooterFacts()


@dataclass(frozen=True, slots=True)
class Figures:
    """What the footer says of one run, from the usage snapshots the loop sent (each is
    the run's running total, one after each model call)."""

    model: str
    context_tokens: int  # the last call's prompt: what the context holds now
    completion_tokens: int  # summed over every call of the run
    seconds: float
    speed: Speed = NO_SPEED  # generation apart from prompt reading
    stopped: str | None = None  # how the answer was stopped short, when it was
    thread: str | None = None
    window: int | None = None
    fill_estimated: bool = False  # context_tokens is an estimate
    turn_cost: float | None = None  # USD; None when no price is known
    thread_cost: float | None = None
    approvals_off: bool = False
    budget: tuple[float, float] | None = None  # USD spent in the session and its limit


def run_figures(
    result: RunResult,
    snapshots: list[Usage],
    *,
    seconds: float,
    speed: Speed = NO_SPEED,
    thread: str | None,
    facts: FooterFacts = NO_FACTS,
) -> Figures:
    """The footer's figures. The prompt tokens of every call are NOT summed: each call
    sends the whole context again, so the sum counts it once per tool round."""
    totals = [0, *(snapshot.get("prompt_tokens", 0) for snapshot in snapshots)]
    per_call = [after - before for before, after in zip(totals, totals[1:], strict=False)]
    reported = [tokens for tokens in per_call if tokens > 0]  # a call may report none
    context = reported[-1] if reported else result.usage.get("prompt_tokens", 0)
    turn_cost = thread_cost = None
    if facts.price is not None:
        from toolnexus.context import pricing

        turn_cost = pricing.turn_cost(result, facts.price)
        if facts.thread_usage is not None:
            thread_cost = pricing.thread_cost(facts.thread_usage, facts.price)
    return Figures(
        model=result.model,
        context_tokens=context if facts.fill is None else facts.fill,
        completion_tokens=result.usage.get("completion_tokens", 0),
        seconds=seconds,
        speed=speed,
        stopped=None
        if result.incomplete_reason is None
        else _STOPPED.get(result.incomplete_reason),
        thread=thread,
        window=facts.window,
        fill_estimated=facts.fill is not None and facts.fill_estimated,
        turn_cost=turn_cost,
        thread_cost=thread_cost,
        approvals_off=facts.approvals_off,
        budget=facts.budget,
    )


def footer_text(figures: Figures) -> str:
    parts = [
        figures.model,
        fill_text(figures.context_tokens, figures.window, estimated=figures.fill_estimated),
        counted(figures.completion_tokens, "completion token"),
        f"{figures.seconds:.1f} s",
    ]
    speed = figures.speed
    if speed.reading_dominates:
        tokens = f"{compact(speed.read)} tokens" if speed.read else "the prompt"
        parts.append(f"read {tokens} in {seconds_text(speed.reading)}")
    rate = speed.tokens_per_second
    if rate is not None:
        parts.append(f"{rate:.0f} tok/s")
    if figures.turn_cost is not None:
        parts.append(money(figures.turn_cost))
    thread = " ".join(
        part
        for part in (
            figures.thread,
            money(figures.thread_cost) if figures.thread_cost is not None else None,
        )
        if part
    )
    if thread:
        parts.append(f"thread {thread}")
    if figures.budget is not None:
        spent, limit = figures.budget
        parts.append(f"{money(spent)} of {money(limit)} budget")
    if figures.stopped:
        parts.append(figures.stopped)
    if figures.approvals_off:
        parts.append("approvals off (--yes)")
    return " · ".join(parts)


def fill_text(tokens: int, window: int | None, *, estimated: bool = False) -> str:
    """How full the context is: "3.1k / 4.1k tokens, 76%", or "3.1k prompt tokens" with
    no window known; "~" marks an estimate."""
    shown = ("~" if estimated else "") + compact(tokens)
    if not window:
        return f"{shown} prompt tokens"
    return f"{shown} / {compact(window)} tokens, {round(100 * tokens / window)}%"


def compact(tokens: int) -> str:
    """999 -> "999", 3100 -> "3.1k", 200000 -> "200k", 1048576 -> "1M"."""
    if tokens < 1000:
        return str(tokens)
    size, unit = (1000, "k") if tokens < 999_950 else (1_000_000, "M")  # never "1000.0k"
    return f"{tokens / size:.1f}".removesuffix(".0") + unit


def seconds_text(seconds: float) -> str:
    """ "2.5 s" under ten seconds, "90 s" from there on."""
    return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"


def money(usd: float) -> str:
    """ "$0.0123" below a dime, "$0.41" above; never a misleading "$0.0000"."""
    if usd == 0:
        return "$0"
    if usd < 0.0001:
        return "<$0.0001"
    return f"${usd:.4f}" if usd < 0.1 else f"${usd:.2f}"


class Meter:
    """Clocks and usage snapshots of one run, as its events pass, for the footer."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.clock = RunClock(now)
        self.snapshots: list[Usage] = []
        self.saw_reasoning = False  # reasoning text was shown (or could have been)

    def see(self, event: Event) -> None:
        self.clock.see(event)
        if event["type"] == "reasoning" and event["delta"]:
            self.saw_reasoning = True
        elif event["type"] == "usage":
            self.snapshots.append(event["usage"])

    def footer(self, result: RunResult, thread: str | None, facts: FooterFacts = NO_FACTS) -> str:
        return footer_text(
            run_figures(
                result,
                self.snapshots,
                seconds=self.clock.now() - self.clock.started,
                speed=speed_of(self.clock.calls, self.snapshots),
                thread=thread,
                facts=facts,
            )
        )


def reasoned_note(result: RunResult, saw_reasoning: bool) -> str | None:
    """ "reasoned for N tokens" when the model thought without showing its thoughts."""
    tokens = result.usage.get("reasoning_tokens", 0)
    if not tokens or saw_reasoning:
        return None
    return f"reasoned for {counted(tokens, 'token')}"


def attachment_labels(event: ToolResultEvent) -> list[str]:
    """What a tool returned besides text, one "[image 512x512 png]" each."""
    return [f"[{label}]" for label in event.get("attachments", [])]


def format_args(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def preview(output: str, lines: int = RESULT_PREVIEW_LINES, shown_by: str = "") -> str:
    """The first `lines` lines of `output`; `shown_by` follows the count of the rest."""
    output = output.rstrip()
    rows = output.splitlines()
    if len(rows) <= lines:
        return output
    return "\n".join(rows[:lines]) + f"\n... {counted(len(rows) - lines, 'more line')}{shown_by}"


class PlainRenderer:
    """For pipes and files: exactly the answer's text on stdout, as it arrives; the rest
    (reasoning, tools, retries) on stderr, and only when verbose."""

    def __init__(
        self, out: TextIO = sys.stdout, err: TextIO = sys.stderr, verbose: bool = False
    ) -> None:
        self.out, self.err, self.verbose = out, err, verbose
        self.ended_with_newline = True
        self.err_at_line_start = True
        self.wrote = False
        self.meter = Meter()

    def event(self, event: Event) -> None:
        self.meter.see(event)
        if event["type"] == "text":
            delta = event["delta"]
            self.out.write(delta)
            self.out.flush()
            self.wrote = True
            self.ended_with_newline = delta.endswith("\n")
        elif self.verbose:
            self._side(event)

    def _side(self, event: Event) -> None:
        if event["type"] == "reasoning":
            self.err.write(visible(event["delta"]))
            self.err_at_line_start = event["delta"].endswith("\n")
        elif event["type"] == "tool_call":
            self._err_line(f"[tool] {event['name']}({format_args(event['args'])})")
        elif event["type"] == "tool_result":
            self._err_line(f"{result_status(event).tag()} {preview(person_output(event))}")
            for label in attachment_labels(event):
                self._err_line(label)
        elif event["type"] == "retry":
            self._err_line(f"[retry] {retry_note(event)}")
        elif event["type"] == "waiting" and event["sources"]:
            self._err_line(f"[waiting] {waiting_note(event)}")
        elif event["type"] == "tool_progress":
            self._err_line(f"[progress] {progress_note(event)}")
        elif event["type"] == "mcp_log":
            self._err_line(f"[log] {event['server']}: {event['message']}")
        self.err.flush()

    def _err_line(self, line: str) -> None:
        """One line on stderr, starting a new line if reasoning left one open."""
        if not self.err_at_line_start:
            self.err.write("\n")
        self.err.write(visible(line) + "\n")
        self.err_at_line_start = True

    def resume(self, tool: str) -> None:
        pass  # nothing is live here

    def end_answer(self) -> None:
        if self.wrote and not self.ended_with_newline:
            self.out.write("\n")
            self.out.flush()
        self.ended_with_newline = True
        if not self.err_at_line_start:  # reasoning left a line open on stderr
            self.err.write("\n")
            self.err.flush()
            self.err_at_line_start = True

    def finish(self, result: RunResult, thread: str | None, facts: FooterFacts = NO_FACTS) -> None:
        self.end_answer()
        if self.verbose:
            note = reasoned_note(result, self.meter.saw_reasoning)
            if note:
                self._err_line(note)
            self._err_line(self.meter.footer(result, thread, facts))
            self.err.flush()


class TerminalRenderer:
    """For a terminal: live Markdown, dimmed reasoning, tool panels, a footer. With `keys`
    (a terminal.TypeAhead), what is typed while the answer streams shows under it; with
    `kept`, the whole output of each tool call is kept for /last."""

    def __init__(
        self,
        console: Any,
        ui: UiSettings,
        keys: Any = None,
        changes: ChangeView | None = None,
        asks_first: Callable[[str, Any], bool] | None = None,
        kept: KeptOutputs | None = None,
    ) -> None:
        """`changes`: what a file tool's call would change, made before it runs to be
        shown with its result (whether a question showed it or not); `asks_first`: whether
        a question will show a call in full before it runs."""
        from .running import RunningTools

        self.console = console
        self.changes = changes
        self.asks_first = asks_first
        self.calls: dict[str, tuple[str, Any]] = {}  # the title and change of each call
        self.ui = ui
        self.stream: Any = None
        self.meter = Meter()
        self.keys = keys
        self.running = RunningTools()
        self.kept = kept

    def _live(self) -> Any:
        if self.stream is None:
            from .markdown_stream import MarkdownStream

            if self.keys is not None:  # before the live region draws: it writes too
                self.keys.arm(self._typed)
            self.stream = MarkdownStream(
                self.console,
                code_theme=self.ui.code_theme or "monokai",
                show_reasoning=self.ui.show_reasoning,
                markdown=self.ui.markdown,
            )
            self.stream.running = self.running
            if self.keys is not None:  # what was typed before a question, say
                self.stream.hint(self.keys.shown())
        return self.stream

    def _typed(self, shown: str) -> None:
        if self.stream is not None:
            self.stream.hint(shown)

    def start(self) -> None:
        self._live()

    def event(self, event: Event) -> None:
        self.meter.see(event)
        stream = self._live()
        if event["type"] == "text":
            stream.text(event["delta"])
        elif event["type"] == "reasoning":
            stream.think(event["delta"])
        elif event["type"] == "tool_call":
            stream.print(self._call(event))
            self.running.start(event["id"], event["name"])
            if self.kept is not None:
                self.kept.begin(event["id"], event["name"])
        elif event["type"] == "tool_output":
            self.running.output(event["id"], event["text"])
            if self.kept is not None:
                self.kept.add(event["id"], event["text"])
        elif event["type"] == "tool_progress":
            self.running.report(event["id"], event["message"], event["progress"], event["total"])
        elif event["type"] == "mcp_log":
            self.running.log(event["server"], event["message"])
        elif event["type"] == "tool_result":
            self.running.finish(event["id"])
            status = result_status(event)
            called, change = self.calls.pop(event["id"], (event["name"], None))
            style, title = status.style, status.title(called)
            labels = attachment_labels(event)
            body = "\n".join([self._preview(event), *labels]).strip() or "(no output)"
            # what a file tool changed says more than its "wrote 13 bytes to ..."
            shown = change if change is not None and not event["is_error"] else measured_text(body)
            stream.print(self._panel(shown, title, style))
            stream.wait()
        elif event["type"] == "waiting":
            if event["sources"]:
                stream.wait(waiting_note(event))
            else:
                stream.wait()
        elif event["type"] == "retry":
            stream.wait(
                retry_note(event),
                seconds=event["delay"],
                then=f"waiting for the model, {retry_count(event)}",
            )
        elif event["type"] == "compacting":
            from .context_view import compacting_note

            stream.wait(compacting_note(event))
        elif event["type"] == "compaction":
            from rich.text import Text

            from .context_view import compaction_note

            stream.print(Text(compaction_note(event), style="dim"))
            stream.wait()

    def _call(self, event: ToolCallEvent) -> Any:
        """A call about to run: as its title alone when that says it all, when a question
        will show it in full, or for a file tool (its change shows in the question, if one
        is asked, and with its result); any other as its arguments, in full."""
        from rich.text import Text

        name, args = event["name"], event["args"]
        change = self.changes(name, args) if self.changes is not None else None
        title = call_title(name, args)
        self.calls[event["id"]] = (title, change)
        asked = self.asks_first is not None and self.asks_first(name, args)
        if change is not None or asked or title_says_all(args):
            return Text(f"⚙ {title}", style="cyan")
        return self._panel(call_body(name, args), f"⚙ {name}", "cyan", exact=True)

    def _preview(self, event: ToolResultEvent) -> str:
        """A result's first lines; with its whole output kept, how to see it all."""
        output = person_output(event)
        if self.kept is None:
            return preview(output)
        return preview(output, shown_by=self.kept.end(event["id"], output))

    def show_cut(self) -> None:
        """The turn was stopped: each call it cut that printed something shows its last
        lines, and that the model gets what it printed."""
        from rich.text import Text

        shown_by = " (Ctrl-O or /last shows all of it)" if self.kept is not None else ""
        for panel in self.running.cut():
            self.console.print(panel)
            self.console.print(
                Text(f"cut by Ctrl-C: the model gets what it printed until then{shown_by}", "dim")
            )

    def _panel(self, body: Any, title: str, style: str, *, exact: bool = False) -> Any:
        """`exact`: a tool call's arguments, shown as `exact_text`; else `body` is Rich
        Text made safe already."""
        from rich.panel import Panel
        from rich.text import Text

        from .exact_text import exact_text

        return Panel(
            exact_text(body) if exact else body,
            title=Text(unmistakable(title) if exact else visible(title)),
            title_align="left",
            border_style=style,
            expand=False,
        )

    def resume(self, tool: str) -> None:
        """Live output again after a question about `tool` was answered yes: it runs now."""
        self.running.restart_clock(tool)
        self._live()

    def end_answer(self) -> None:
        if self.keys is not None:
            self.keys.disarm()
        if self.stream is not None:
            self.stream.finish()
            self.stream = None

    def finish(self, result: RunResult, thread: str | None, facts: FooterFacts = NO_FACTS) -> None:
        self.end_answer()
        note = reasoned_note(result, self.meter.saw_reasoning)
        if note:
            from rich.text import Text

            self.console.print(Text(note, style="dim italic"))
        if self.ui.footer:
            from rich.text import Text

            footer = self.meter.footer(result, thread, facts)
            self.console.print(Text(visible(footer), style="dim"))


def person_output(event: ToolResultEvent) -> str:
    """A result's output as the person sees it: an MCP result's content annotated for the
    person alone is shown, what is for the model alone is not (`shown`, when they differ)."""
    return event.get("shown", event["output"])
