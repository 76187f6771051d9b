"""A pyte screen that re-flows its lines when its width changes, as most terminals do (VTE,
kitty, iTerm2, WezTerm, Windows Terminal, tmux; xterm does not).

pyte keeps the rows as they are on a resize: a narrower screen cuts them off. A re-flowing
terminal remembers which rows it wrapped itself (text ran past the right edge: a soft
wrap) and, at a new width, joins each run of soft-wrapped rows back into its line and wraps
that line again, the cursor kept at its place in its line; the rows that no longer fit on
the screen go into the scrollback. A line's trailing blanks are not part of it. Cells are
taken one by one, so a wide character at the new edge is not moved on whole (the tests'
text is ASCII).
"""

from __future__ import annotations

from typing import Any

import pyte
from pyte.screens import Char, StaticDefaultDict

Row = StaticDefaultDict[int, Char]


class ReflowScreen(pyte.HistoryScreen):
    def __init__(
        self, columns: int, lines: int, history: int = 100, *, reflows: bool = True
    ) -> None:
        super().__init__(columns, lines, history=history)
        self.reflows = reflows  # False: cut rows off on a narrowing, as xterm and pyte do
        self._drawing = False

    def scrollback(self) -> list[str]:
        """The text of each row of the scrollback."""
        return [
            "".join(row[x].data for x in range(self.columns)).rstrip() for row in self.history.top
        ]

    def rows(self) -> list[str]:
        """The text of every row: the scrollback's, then the screen's."""
        return self.scrollback() + [line.rstrip() for line in self.display]

    # -- which rows are soft-wrapped: marked when drawing text runs past the edge ----------
    def draw(self, data: str) -> None:
        self._drawing = True
        try:
            super().draw(data)
        finally:
            self._drawing = False

    def linefeed(self) -> None:
        if self._drawing:  # pyte's draw wraps a line with a carriage return and a line feed
            self.buffer[self.cursor.y].wrapped = True  # type: ignore[attr-defined]
        super().linefeed()

    def erase_in_line(self, how: int = 0, private: bool = False) -> None:
        super().erase_in_line(how, private)
        if how != 1:  # the row no longer reaches the edge
            self.buffer[self.cursor.y].wrapped = False  # type: ignore[attr-defined]

    def erase_in_display(self, how: int = 0, *args: Any, **kwargs: Any) -> None:
        super().erase_in_display(how, *args, **kwargs)  # the cursor's row: erase_in_line
        erased = {0: range(self.cursor.y + 1, self.lines), 1: range(self.cursor.y)}
        for y in erased.get(how, range(self.lines)):
            self.buffer[y].wrapped = False  # type: ignore[attr-defined]

    # -- the re-flow --------------------------------------------------------------------
    def resize(self, lines: int | None = None, columns: int | None = None) -> None:
        lines, columns = lines or self.lines, columns or self.columns
        if columns != self.columns and self.reflows:
            self._reflow(lines, columns)
        super().resize(lines, columns)

    def _reflow(self, lines: int, columns: int) -> None:
        logical, (cursor_line, cursor_offset) = self._logical_lines()
        rows: list[Row] = []
        cursor = (0, 0)
        for number, cells in enumerate(logical):
            first = len(rows)
            for start in range(0, max(1, len(cells)), columns):
                rows.append(self._row(cells[start : start + columns], wrapped=True))
            rows[-1].wrapped = False  # type: ignore[attr-defined]
            if number == cursor_line:
                y, x = divmod(cursor_offset, columns)
                if y and not x and cursor_offset >= len(cells):  # just past a full row
                    y, x = y - 1, columns
                while len(rows) <= first + y:
                    rows.append(self._row([], wrapped=False))
                cursor = (first + y, x)
        top = min(max(0, len(rows) - lines), cursor[0])
        self.history.top.clear()
        self.history.top.extend(rows[:top])
        self.buffer.clear()
        for y, row in enumerate(rows[top : top + lines]):
            self.buffer[y] = row
        self.cursor.y, self.cursor.x = cursor[0] - top, cursor[1]
        self.lines, self.columns = lines, columns
        self.dirty.update(range(lines))

    def _logical_lines(self) -> tuple[list[list[Char]], tuple[int, int]]:
        """The lines of the scrollback and the screen, each the cells of its soft-wrapped
        rows joined, and where the cursor is: (its line, its offset in that line)."""
        rows = [*self.history.top, *(self.buffer[y] for y in range(self.lines))]
        cursor_row = len(self.history.top) + self.cursor.y
        logical: list[list[Char]] = []
        cells: list[Char] = []
        cursor = (0, 0)
        for index, row in enumerate(rows):
            if index == cursor_row:
                cursor = (len(logical), len(cells) + self.cursor.x)
            cells += [row[x] for x in range(self.columns)]
            if not getattr(row, "wrapped", False):
                while cells and cells[-1].data == " ":
                    cells.pop()
                logical.append(cells)
                cells = []
        if cells:
            logical.append(cells)
        while len(logical) > cursor[0] + 1 and not logical[-1]:
            logical.pop()  # empty lines under the cursor are no content
        return logical, cursor

    def _row(self, cells: list[Char], wrapped: bool) -> Row:
        row: Row = StaticDefaultDict(self.default_char)
        row.update(enumerate(cells))
        row.wrapped = wrapped  # type: ignore[attr-defined]
        return row
