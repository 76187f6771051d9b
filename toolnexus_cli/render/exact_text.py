"""Text a person checks character by character before saying yes (a command, a tool call's
arguments, a question a tool asks), shown so that nothing in it can hide.

Every character that is not shown as itself is escaped (`unmistakable`: `\\u3164`); a tab
is a dim `\\t`, a run of tabs and a long run of spaces one dim count, and a run of blank
lines one dim line that counts them, so no run of them can push a part of the text off the
screen. Fitted to a height, a line too long is cut in its middle and, when the lines still
take too many rows, the middle lines are: the text's first and last lines always show, and
a dim line says how many lines were left out. Rows are counted as the terminal wraps them.
"""

from __future__ import annotations

import functools
import io
import re

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from toolnexus.app_support import unmistakable

from .words import counted

LONG_SPACES = 16  # a longer run of spaces is shown as their count
DIM = "dim"
_BLANKS = re.compile(f"\\t+| {{{LONG_SPACES + 1},}}")

# A line of the text: its characters, or (an int) a run of that many blank lines.
_Entry = str | int
# A line as pieces: (the characters, as shown, in which style): characters as they are
# shown (style ""), or a tab or a run of blanks as one dim piece.
_Piece = tuple[str, str, str]


def exact_text(text: str, rows: int | None = None, width: int = 80) -> Text:
    """`text` as Rich Text (see the module's doc); with `rows`, fitted to take at most that
    many rows of `width` columns (as many as the first and last lines need, at least)."""
    entries = _entries(text)
    if rows is None:
        return _joined([_shown(entry, None) for entry in entries])
    return _joined(_fitted(entries, rows, width))


def rows_of(text: Text, width: int) -> int:
    """How many rows of `width` columns `text` takes, wrapped as the terminal wraps it."""
    return sum(
        1 if line.cell_len <= width else len(line.wrap(_console(width), width))
        for line in text.split("\n", allow_blank=True)
    )


def line_count(text: str) -> str:
    """How many lines `text` has: "1 line", "12 lines" (a last line end ends a line)."""
    count = text.count("\n") + (0 if text.endswith("\n") else 1)
    return counted(count, "line")


@functools.cache
def _console(width: int) -> Console:
    return Console(width=width, file=io.StringIO(), color_system=None)


def _joined(lines: list[Text]) -> Text:
    return Text("\n").join(lines)


def _entries(text: str) -> list[_Entry]:
    """The lines of `text`, each run of two or more blank ones as their count."""
    entries: list[_Entry] = []
    blank = 0
    for line in text.split("\n"):
        if not line.strip(" \t\r"):
            blank += 1
            continue
        entries += _blanks(blank)
        blank = 0
        entries.append(line)
    return entries + _blanks(blank)


def _blanks(count: int) -> list[_Entry]:
    return [""] * count if count < 2 else [count]


def _lines_in(entry: _Entry) -> int:
    return entry if isinstance(entry, int) else 1


def _shown(entry: _Entry, room: tuple[int, int] | None) -> Text:
    """One entry as shown; a line taking more than `room` (rows, columns), its middle cut."""
    if isinstance(entry, int):
        return Text(f"({entry} blank lines)", style=DIM)
    pieces = _pieces(entry)
    if room is None:
        return _text(pieces)
    rows, width = room
    cells = sum(cell_len(shown) for _, shown, _ in pieces)
    budget = rows * width
    while True:
        shown = _text(pieces if cells <= budget else _cut(pieces, len(entry), budget))
        taken = rows_of(shown, width)  # wrapped at words, it may take more than cells say
        if taken <= rows or budget <= 2:
            return shown
        budget = min(budget - 1, budget * rows // taken)


def _fitted(entries: list[_Entry], rows: int, width: int) -> list[Text]:
    """The entries as shown in at most `rows` rows of `width` columns: those in the middle
    left out (counted) if need be; as many of the first as fit in half of the rows, of the
    last in the rest. A line takes at most half of the rows."""
    room = (max(1, (rows - 1) // 2), width)
    if len(entries) <= rows:
        whole = [_shown(entry, room) for entry in entries]
        if sum(rows_of(line, width) for line in whole) <= rows:
            return whole
    space = max(2, rows - 1)
    head: list[Text] = []
    used = 0  # rows
    for entry in entries:
        line = _shown(entry, room)
        used += rows_of(line, width)
        if used > space // 2:
            break
        head.append(line)
    tail: list[Text] = []
    used = 0
    for entry in reversed(entries[len(head) :]):
        line = _shown(entry, room)
        used += rows_of(line, width)
        if used > space - space // 2:
            break
        tail.append(line)
    left_out = sum(_lines_in(entry) for entry in entries[len(head) : len(entries) - len(tail)])
    return [*head, Text(f"... {counted(left_out, 'line')} ...", style=DIM), *tail[::-1]]


def _pieces(line: str) -> list[_Piece]:
    pieces: list[_Piece] = []
    pos = 0
    for run in _BLANKS.finditer(line):
        if run.start() > pos:
            pieces.append(_chars(line[pos : run.start()]))
        blanks = run.group()
        if blanks == "\t":
            pieces.append((blanks, "\\t", DIM))
        else:
            noun = "tabs" if blanks[0] == "\t" else "spaces"
            pieces.append((blanks, f"({len(blanks)} {noun})", DIM))
        pos = run.end()
    if pos < len(line):
        pieces.append(_chars(line[pos:]))
    return pieces


def _chars(text: str) -> _Piece:
    return (text, unmistakable(text), "")


def _text(pieces: list[_Piece]) -> Text:
    shown = Text()
    for _, text, style in pieces:
        shown.append(text, style=style)
    return shown


def _cut(pieces: list[_Piece], length: int, cells: int) -> list[_Piece]:
    """The pieces of a line `length` characters long, cut in the middle to take `cells`
    (the count of what is left out included)."""
    room = max(2, cells - cell_len(_cut_marker(length)))
    head = _taken(pieces, room // 2)
    tail = _taken(pieces[::-1], room - room // 2, from_end=True)[::-1]
    kept = sum(len(chars) for chars, _, _ in head + tail)
    return [*head, ("", _cut_marker(length - kept), DIM), *tail]


def _cut_marker(count: int) -> str:
    return f" … {counted(count, 'character')} … "


def _taken(pieces: list[_Piece], cells: int, *, from_end: bool = False) -> list[_Piece]:
    """The first pieces of a line (or the last, `from_end`, given last first) that take at
    most `cells`: a piece of characters may be cut between two of them, a count is not."""
    taken: list[_Piece] = []
    for chars, shown, style in pieces:
        width = cell_len(shown)
        if width <= cells:
            taken.append((chars, shown, style))
            cells -= width
            continue
        if not style:  # characters: as many as fit
            part: list[tuple[str, str]] = []
            for char in reversed(chars) if from_end else chars:
                one = unmistakable(char)
                if cell_len(one) > cells:
                    break
                part.append((char, one))
                cells -= cell_len(one)
            if from_end:
                part.reverse()
            taken.append(("".join(c for c, _ in part), "".join(s for _, s in part), style))
        break
    return taken
