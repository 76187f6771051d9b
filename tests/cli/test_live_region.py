"""The live region on a captured Console, its output fed to a terminal that re-flows its lines
on a resize (tests/support/reflow_screen.py) or one that cuts them off (xterm), resized between two
refreshes."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pyte
import pytest
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment

from tests.support.reflow_screen import ReflowScreen
from toolnexus_cli.render.chat_markdown import ChatMarkdown
from toolnexus_cli.render.live_region import LiveRegion, rows_taken, terminal_reflows

ROWS = 20
NEVER = 1e-6  # refreshes a second: the ticker never ticks, the test refreshes


class Shown:
    """A view showing `markup` as Markdown (its lines padded to the width, as Rich pads)."""

    def __init__(self) -> None:
        self.markup = ""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield ChatMarkdown(self.markup)


class Terminal:
    """A console whose output goes to a re-flowing screen, both `columns` wide."""

    def __init__(self, columns: int, reflows: bool = True) -> None:
        self.out = io.StringIO()
        self.console = Console(
            file=self.out, width=columns, height=ROWS, force_terminal=True, color_system=None
        )
        self.screen = ReflowScreen(columns, ROWS, history=1000, reflows=reflows)
        self.feed = pyte.Stream(self.screen)
        self.written = 0

    def update(self) -> str:
        """What the console wrote since the last update, shown on the screen."""
        new = self.out.getvalue()[self.written :]
        self.written += len(new)
        self.feed.feed(new.replace("\n", "\r\n"))  # a pty's output translation
        return new

    def resize(self, columns: int) -> None:
        self.screen.resize(ROWS, columns)
        self.console.width = columns

    def rows(self) -> list[str]:
        rows = self.screen.rows()
        while rows and not rows[-1]:
            rows.pop()
        return rows


@pytest.fixture(params=[True, False], ids=["re-flowing terminal", "xterm"])
def shown(request) -> Iterator[tuple[Terminal, Shown, LiveRegion]]:
    terminal, view = Terminal(60, reflows=request.param), Shown()
    region = LiveRegion(terminal.console, view, refresh_per_second=NEVER, reflows=request.param)
    terminal.console.print("printed before")
    region.start()
    yield terminal, view, region
    region.stop()


LONG = [f"line {n}: wider than thirty columns, not sixty" for n in range(1, 6)]


def test_after_a_narrowing_the_next_frame_replaces_the_whole_last_one(shown):
    terminal, view, region = shown
    view.markup = "\n".join(["short", *LONG])
    region.refresh()
    terminal.update()
    terminal.resize(30)  # each long line now takes two rows, or is cut off (xterm)
    view.markup += "\nline 6"
    region.refresh()
    terminal.update()
    rows = terminal.rows()
    assert rows[0] == "printed before", rows
    assert [row for row in rows if row.startswith("line 1:")] == ["line 1: wider than thirty"]
    assert rows.count("short") == 1 and rows[-1] == "line 6", rows


def test_stopping_after_a_narrowing_leaves_nothing_and_loses_nothing(shown):
    terminal, view, region = shown
    view.markup = "\n".join(LONG)
    region.refresh()
    terminal.update()
    terminal.resize(30)
    region.stop()
    terminal.console.print("printed after")
    terminal.update()
    assert terminal.rows() == ["printed before", "printed after"]


def test_a_frame_is_written_again_only_when_it_changes(shown):
    terminal, view, region = shown
    view.markup = "one line"
    region.refresh()
    assert "one line" in terminal.update()
    region.refresh()
    assert terminal.update() == ""  # nothing changed: nothing written
    terminal.resize(40)
    region.refresh()
    assert terminal.update() == ""  # still fits: nothing to redraw
    view.markup = "two lines"
    region.refresh()
    assert "two lines" in terminal.update()


def test_a_wide_character_that_does_not_fit_at_the_end_of_a_row_starts_the_next():
    assert rows_taken([Segment("a" * 30)], 30) == 1
    assert rows_taken([Segment("a" * 31)], 30) == 2
    assert rows_taken([Segment("中中中")], 3) == 3  # six cells, but a row holds one


def test_which_terminals_are_taken_to_reflow():
    assert terminal_reflows({"TERM": "xterm-256color"})  # VTE, kitty, iTerm2, ... say xterm
    assert not terminal_reflows({"TERM": "xterm-256color", "XTERM_VERSION": "XTerm(390)"})
    assert not terminal_reflows({"TERM": "linux"}) and not terminal_reflows({"TERM": "st-256color"})
    assert terminal_reflows(
        {"TERM": "tmux-256color", "TMUX": "/tmp/tmux-0/default,1,0", "XTERM_VERSION": "XTerm(390)"}
    )  # tmux re-flows inside xterm
