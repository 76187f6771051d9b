"""The test terminal re-flows on a resize as most terminals do (tests/support/reflow_screen.py)."""

from __future__ import annotations

import pyte

from tests.support.reflow_screen import ReflowScreen


def screen_with(text: str, columns: int = 20, lines: int = 5) -> ReflowScreen:
    screen = ReflowScreen(columns, lines, history=100)
    pyte.Stream(screen).feed(text.replace("\n", "\r\n"))
    return screen


def test_narrowing_wraps_each_line_again_and_keeps_the_cursor_after_its_text():
    screen = screen_with("short\n" + "a" * 15 + "\nlast", columns=20, lines=3)
    screen.resize(3, 10)
    assert screen.rows() == ["short", "a" * 10, "a" * 5, "last"]  # "short" went to the history
    assert (screen.cursor.y, screen.cursor.x) == (2, 4)


def test_widening_joins_what_the_terminal_wrapped_but_not_lines_the_program_ended():
    screen = screen_with("b" * 25 + "\n" + "c" * 8 + "\n" + "d" * 8, columns=10, lines=6)
    assert screen.rows()[:5] == ["b" * 10, "b" * 10, "b" * 5, "c" * 8, "d" * 8]
    screen.resize(6, 30)
    assert screen.rows() == ["b" * 25, "c" * 8, "d" * 8, "", "", ""]
    assert (screen.cursor.y, screen.cursor.x) == (2, 8)


def test_an_erased_row_is_no_longer_a_wrapped_one():
    screen = screen_with("e" * 15, columns=10)
    pyte.Stream(screen).feed("\r\x1b[1A\x1b[J" + "f" * 3)  # erase both rows, write anew
    screen.resize(5, 20)
    assert screen.rows()[:2] == ["fff", ""]
