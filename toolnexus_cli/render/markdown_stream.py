"""Live Markdown for a streaming answer, in constant work per delta.

Finished blocks (text up to a blank line outside a code fence) are printed once into the
scrollback; only the unfinished block is live, cropped to its last lines so an answer
taller than the terminal never hides the newest text, and the live region is transient,
so nothing is printed twice. A refresh renders only as many of the block's last source
lines as fill the screen, so its cost is bounded by the screen, not by the block. The
text comes from the endpoint: it is made `visible` on the way in, so no control sequence
in it reaches the terminal.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from toolnexus.app_support import visible

from .chat_markdown import ChatMarkdown
from .live_region import LiveRegion
from .running import RunningTools

if TYPE_CHECKING:
    from rich.console import RenderableType

WAITING = "waiting for the model"
NEXT_TOKEN = "waiting for the next token"  # the answer began, then paused
STALL_SHOWN_AFTER_S = 3.0  # a pause this long in a live answer gets the waiting line


class Wait(NamedTuple):
    """What the live line waits for, since when, and when (if ever) it turns into
    waiting for the model again, as `then` says, counted from that moment."""

    label: str
    since: float
    until: float | None = None
    then: str = WAITING


def waited_for(wait: Wait, last_token: float | None, now: float) -> tuple[str, float]:
    """What is waited for at `now`, and since when. Once the answer has begun, waiting
    for the model is counted from its last token (a stall in the middle of an answer),
    not from the question."""
    label, since = wait.label, wait.since
    if wait.until is not None and now >= wait.until:
        label, since = wait.then, wait.until
    if label == WAITING and last_token is not None and last_token >= since:
        return NEXT_TOKEN, last_token
    return label, since


class MarkdownStream:
    def __init__(
        self,
        console: Console,
        *,
        code_theme: str = "monokai",
        show_reasoning: bool = True,
        markdown: bool = True,
        refresh_per_second: float = 12,
    ) -> None:
        self.console = console
        self.code_theme = code_theme
        self.markdown = markdown  # False: answers show as the plain text they are
        self.show_reasoning = show_reasoning
        self.tail = ""  # the unfinished block, shown live
        self.reasoning = ""
        self.hint_line = ""  # dim lines under everything (what is typed meanwhile)
        self._wait = Wait(WAITING, time.monotonic())
        self.last_token: float | None = None  # when the answer (or reasoning shown) last grew
        self.waiting_shown = False  # a wait was set after the last text: shown under it
        self.running: RunningTools | None = None  # the tool calls running, shown live
        self.spinner = Spinner("dots")  # one spinner, so that it turns
        self._scan = 0  # where the first line not yet examined starts in `tail`
        self._in_fence = False
        self._fences: list[int] = []  # where each fence line examined so far starts in `tail`
        self._gap = False  # a blank line goes before the next block (one printed before it)
        self.view = _LiveView(self)  # what the live region shows
        self._region = LiveRegion(console, self.view, refresh_per_second)
        self._region.start()

    # -- feeding ----------------------------------------------------------------------
    def text(self, delta: str) -> None:
        if self.reasoning:
            self._flush_reasoning()
        self.last_token = time.monotonic()
        if self.waiting_shown or self._wait.label != WAITING:
            self._wait, self.waiting_shown = Wait(WAITING, self.last_token), False
        delta = visible(delta)
        self.tail += delta
        if "\n" in delta:
            self._split_finished_blocks()

    def think(self, delta: str) -> None:
        if self.show_reasoning:  # hidden, the wait goes on counting from the question
            self.last_token = time.monotonic()
        self.reasoning += visible(delta)

    def wait(self, label: str = WAITING, seconds: float | None = None, then: str = WAITING) -> None:
        """Say on the live line what is waited for now (a tool, a retry, a compaction),
        counting the seconds: the same label again goes on counting. After `seconds`, if
        given, it is the model that is waited for again (as `then` says), counted from
        then."""
        now = time.monotonic()
        label = visible(label)
        current, since = self.waiting(now)
        self._wait = Wait(
            label,
            since if label == current else now,
            None if seconds is None else now + seconds,
            visible(then),
        )
        self.waiting_shown = True

    def waiting(self, now: float) -> tuple[str, float]:
        """What is waited for at `now`, and since when."""
        return waited_for(self._wait, self.last_token, now)

    def stalled(self, now: float) -> bool:
        """The answer has begun and nothing more came for a while."""
        return self.last_token is not None and now - self.last_token >= STALL_SHOWN_AFTER_S

    def hint(self, text: str) -> None:
        """Dim lines at the bottom of the live region, until another hint ("" for none)."""
        self.hint_line = visible(text)

    def print(self, renderable: object) -> None:
        """Print above the live region, after whatever part of the answer came before."""
        self._flush_reasoning()
        with self._region.lock:
            tail, self.tail, self._scan, self._in_fence = self.tail, "", 0, False
            self._fences = []
            if tail.strip():
                self._print_markdown(tail)
            self.console.print(renderable)
            self._gap = False

    def finish(self) -> None:
        self._flush_reasoning()
        self._region.stop()
        if self.tail.strip():
            self._print_markdown(self.tail)
        self.tail = ""

    # -- internals ----------------------------------------------------------------------
    def _split_finished_blocks(self) -> None:
        tail, pos, cut = self.tail, self._scan, 0
        while True:
            end = tail.find("\n", pos)
            if end < 0:
                break
            line = tail[pos:end].strip()
            if line.startswith(("```", "~~~")):
                self._in_fence = not self._in_fence
                self._fences.append(pos)
            elif not line and not self._in_fence and tail[cut:pos].strip():
                cut = end + 1
            pos = end + 1
        if cut:
            # Move the text out of the live tail before printing it above, under the
            # refresh lock, so no refresh can show it in both places.
            with self._region.lock:
                self.tail = tail[cut:]
                self._scan = pos - cut
                self._fences = [start - cut for start in self._fences if start >= cut]
                self._print_markdown(tail[:cut])
        else:
            self._scan = pos

    def _print_markdown(self, text: str) -> None:
        # not cropped: a code line wider than the terminal stays one line (see ChatMarkdown)
        self.console.print(self._block(text.strip("\n")), crop=False)
        self._gap = True

    def _block(self, text: str) -> _Block:
        if not self.markdown:
            return _Block(Text(text), self._gap)
        return _Block(ChatMarkdown(text, code_theme=self.code_theme), self._gap)

    def _tail_from(self, start: int) -> str:
        """The tail from `start` (a line start) on, as Markdown that renders those lines as
        the whole tail does: cut inside a code fence, it keeps the fence's opening line."""
        fences_before = bisect_left(self._fences, start)
        if fences_before % 2 == 0:
            return self.tail[start:]
        opener = self._fences[fences_before - 1]
        return self.tail[opener : self.tail.index("\n", opener) + 1] + self.tail[start:]

    def _flush_reasoning(self) -> None:
        if self.reasoning:
            with self._region.lock:
                reasoning, self.reasoning = self.reasoning, ""
                if self.show_reasoning:
                    self.console.print(Text(reasoning.strip(), style="dim italic"))
                    self._gap = True


class _Block:
    """One block of an answer, spaced as Rich spaces the blocks of one whole document:
    exactly one blank line between two blocks. (Rendered alone, a paragraph has no blank
    line before it and a list or quote has one.)"""

    def __init__(self, markdown: ChatMarkdown | Text, gap: bool) -> None:
        self.markdown, self.gap = markdown, gap

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        segments = iter(console.render(self.markdown, options))
        for segment in segments:
            if segment.text != "\n" or segment.style or segment.control:
                if self.gap:
                    yield Segment.line()
                yield segment
                break
        yield from segments


class _LiveView:
    """What the live region shows: the unfinished block (its last lines only), or the
    reasoning so far; under it the tools running, or a spinner with what is waited for and
    the seconds waited."""

    def __init__(self, stream: MarkdownStream) -> None:
        self.stream = stream

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        stream = self.stream
        rows = max(1, (options.height or console.height) - 1)
        options = options.update(height=None)

        def rendered(renderable: RenderableType) -> list[list[Segment]]:
            return console.render_lines(renderable, options, pad=False)

        lines: list[list[Segment]] = []
        budget = 4 * rows * options.max_width  # characters: more than the screen can show
        if stream.tail.strip():
            lines = _bottom(
                stream.tail,
                rows,
                budget,
                lambda start: rendered(stream._block(stream._tail_from(start))),
            )
        elif stream.reasoning and stream.show_reasoning:
            reasoning = stream.reasoning
            lines = _bottom(
                reasoning,
                rows,
                budget,
                lambda start: rendered(Text(reasoning[start:], style="dim italic")),
            )
        below: list[RenderableType] = []
        now = time.monotonic()
        if stream.running:
            below.append(stream.running)
        elif stream.waiting_shown or not lines or stream.stalled(now):
            label, since = stream.waiting(now)
            stream.spinner.update(text=Text(f"{label}… {now - since:.0f}s", style="dim"))
            below.append(stream.spinner)
        if stream.hint_line:
            below.append(Text(stream.hint_line, style="dim"))
        if below:
            lines += rendered(Group(*below))
        for index, line in enumerate(lines[-rows:]):
            if index:
                yield Segment.line()
            yield from line


def _bottom(
    text: str, rows: int, budget: int, render_from: Callable[[int], list[list[Segment]]]
) -> list[list[Segment]]:
    """The rendered lines of `text` from a line start on (`render_from(start)`), starting
    late enough to be cheap and early enough to fill `rows` rows: from the last `rows`
    source lines, with twice as many while they fall short (a fence line shows no row).
    A line longer than `budget` characters (reasoning often has no line breaks) is cut at
    a word `budget` characters from the end, which still wraps into more than `rows` rows."""
    count = rows
    while True:
        start = _start_of_last_lines(text, count)
        if len(text) - start > budget:
            start = text.find(" ", len(text) - budget) + 1 or len(text) - budget
        lines = render_from(start)
        if start == 0 or len(lines) >= rows:
            return lines
        count *= 2


def _start_of_last_lines(text: str, count: int) -> int:
    start = len(text)
    for _ in range(count):
        start = text.rfind("\n", 0, start)
        if start < 0:
            return 0
    return start + 1
