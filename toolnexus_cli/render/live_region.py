"""A transient region under the output, redrawn in place: whatever is printed meanwhile goes
above it, and when it stops it leaves nothing behind.

Rich's Live does this too, but clears its last frame by moving up as many rows as the frame
took when it was drawn. A terminal that narrows re-wraps each line wider than its new width
into more rows (most terminals re-flow so), so that clear stops short and the frame's top
rows stay on the screen, a second copy of lines that are printed again later. Here a clear
counts the rows the last frame's lines take at the terminal's width now, on a terminal that
re-flows; on one that cuts lines off instead (xterm, st, the Linux console) at the width
they were drawn at, as Rich does, since there the rows stay as they were. The cursor waits
at the start of the row under the frame (each frame line ends with a line end), never at
the end of a line the terminal might re-wrap, and the lines are kept without trailing
blanks, so only a line whose text is wider than the terminal takes more than one row. A
frame is written only when it differs from the one on the screen, so a terminal resized
while nothing changes is redrawn once, at its new size.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

from rich.cells import cell_len, get_character_cell_size
from rich.console import Console, ConsoleOptions, ConsoleRenderable, RenderHook, RenderResult
from rich.control import Control
from rich.segment import ControlType, Segment

Line = list[Segment]


class LiveRegion(RenderHook):
    def __init__(
        self,
        console: Console,
        view: ConsoleRenderable,
        refresh_per_second: float,
        *,
        reflows: bool | None = None,
    ) -> None:
        self.console, self.view = console, view
        self.reflows = terminal_reflows(os.environ) if reflows is None else reflows
        self._drawn_width = console.width  # the width the frame on the screen was drawn at
        self.lock = threading.RLock()  # held to change what the view shows
        self._frame: list[Line] = []  # the lines on the screen now
        self._rendered: list[Line] = []  # the frame refresh() found new, for its print
        self._period = 1 / refresh_per_second
        self._stopping = threading.Event()
        self._ticker = threading.Thread(target=self._tick, name="live region", daemon=True)
        self._started = False

    def start(self) -> None:
        if not self.console.is_interactive:  # a file or a dumb terminal: nothing moves
            return
        self._started = True
        self.console.show_cursor(False)
        self.console.push_render_hook(self)
        self._ticker.start()

    def stop(self) -> None:
        """Erase the region; the cursor is left where it began."""
        if not self._started:
            return
        self._started = False
        self._stopping.set()
        self._ticker.join()
        with self.lock:
            self.console.pop_render_hook()
            self.console.control(self._clear())
            self._frame = []
            self.console.show_cursor(True)

    def refresh(self) -> None:
        """Draw the view again if it changed."""
        with self.lock:
            frame = self._render()
            if frame != self._frame:
                self._rendered = frame
                self.console.print(Control())  # drawn by process_renderables

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        """Every print while the region shows: the frame is erased, what is printed goes
        where it began, and the frame is drawn again under it."""
        with self.lock:
            frame, self._rendered = self._rendered or self._render(), []
            clear, self._frame = self._clear(), frame
            self._drawn_width = self.console.width
            return [clear, *renderables, _Frame(frame)]

    def _tick(self) -> None:
        while not self._stopping.wait(self._period):
            self.refresh()

    def _render(self) -> list[Line]:
        lines = self.console.render_lines(self.view, self.console.options, pad=False)
        return [_without_trailing_blanks(line) for line in lines]

    def _clear(self) -> Control:
        """Back to the start of the last frame, erasing every row it takes now."""
        if not self._frame:
            return Control()
        width = self.console.width if self.reflows else self._drawn_width
        rows = sum(rows_taken(line, width) for line in self._frame)
        return Control(
            ControlType.CARRIAGE_RETURN,
            (ControlType.ERASE_IN_LINE, 2),
            *[(ControlType.CURSOR_UP, 1), (ControlType.ERASE_IN_LINE, 2)] * rows,
        )


class _Frame:
    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines:
            yield from line
            yield Segment.line()


def terminal_reflows(environ: Mapping[str, str]) -> bool:
    """Whether the terminal re-wraps its lines when it narrows. No escape sequence asks it,
    so this goes by the terminals known not to: xterm (it sets XTERM_VERSION), st and the
    Linux console. tmux re-flows, whatever terminal it runs in."""
    if environ.get("TMUX"):
        return True
    term = environ.get("TERM", "")
    return not (environ.get("XTERM_VERSION") or term == "linux" or term.split("-")[0] == "st")


def rows_taken(line: Line, width: int) -> int:
    """The rows `line` takes on a terminal `width` columns wide that wraps it (a character
    that does not fit at the end of a row goes whole to the next)."""
    text = "".join(segment.text for segment in line if not segment.control)
    if cell_len(text) <= width:
        return 1
    rows, column = 1, 0
    for char in text:
        size = get_character_cell_size(char)
        if column + size > width:
            rows, column = rows + 1, 0
        column += size
    return rows


def _without_trailing_blanks(line: Line) -> Line:
    line = list(line)
    while line and not line[-1].control and not line[-1].text.rstrip(" "):
        line.pop()
    if line and not line[-1].control:
        last = line[-1]
        line[-1] = Segment(last.text.rstrip(" "), last.style, last.control)
    return line
