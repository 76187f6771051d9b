"""What tool calls print, as the chat shows and keeps it: the last lines of a running call
(`OutputTail`, drawn in its live panel) and the whole output of the chat's recent calls
(`KeptOutputs`, for `/last` and Ctrl-O).

Everything here arrives redacted (session.py's EventRedactor) and is made `visible` on the
way in: the kept files are safe to hand to a pager or print as they are. They are 0600, in
a 0700 folder of the system's temporary folder made when the first call is kept, removed
with everything in it when the chat ends. The chat holds its folder locked while it runs:
a folder nobody holds is what a killed chat left, removed when the next chat starts."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from toolnexus.app_support import visible

TAIL_LINES = 8  # of a running call's output, in its live panel
MAX_LINE_CHARS = 1000  # of a line in the tail (the panel cuts it to the terminal's width)
KEPT_CALLS = 8  # calls whose output is kept; an older one's file is removed
MAX_KEPT_CHARS = 8 * 1024 * 1024  # of one call's output; the rest is counted
SHOWN_BY = " (Ctrl-O or /last shows it all)"
FOLDER_PREFIX = "toolnexus-output-"  # in the system's temporary folder
_MAKING_PREFIX = "toolnexus-making-"  # a folder not locked yet: never taken for a leftover


class OutputTail:
    """The last TAIL_LINES lines of what a call printed, as a terminal would leave them: a
    carriage return starts its line over (a progress bar redrawing itself)."""

    def __init__(self) -> None:
        self._done: deque[str] = deque(maxlen=TAIL_LINES)
        self._open = ""  # the last line, not ended yet
        # read by the live region's thread while the event loop's adds: replaced whole
        self.lines: tuple[str, ...] = ()

    def add(self, text: str) -> None:
        *ended, self._open = (self._open + text).split("\n")
        for line in ended[-TAIL_LINES:]:
            self._done.append(_as_shown(line))
        self._open = self._open[-4 * MAX_LINE_CHARS :]  # a line that never ends
        last = _as_shown(self._open)
        self.lines = tuple([*self._done, last][-TAIL_LINES:] if last else self._done)


def _as_shown(line: str) -> str:
    """A line of output as a terminal shows it: what follows its last carriage return
    (not the one of a CRLF), tabs expanded, made visible, cut short."""
    line = line.removesuffix("\r")
    line = line[line.rfind("\r") + 1 :]
    return visible(line.expandtabs())[:MAX_LINE_CHARS]


@dataclass
class Kept:
    """One call's output in its file."""

    name: str  # the tool's, as shown
    path: Path
    chars: int = 0  # kept in the file
    more: int = 0  # not kept (past MAX_KEPT_CHARS)

    def text(self) -> str:
        return self.path.read_text(encoding="utf-8", errors="replace")


class KeptOutputs:
    """The whole output of the chat's last KEPT_CALLS tool calls: what each printed as it
    ran or, for a call that printed nothing as it ran, its result."""

    def __init__(self) -> None:
        remove_leftovers()
        self._folder: Path | None = None
        self._lock: int | None = None  # the folder, open and locked while the chat runs
        self._calls: dict[str, Kept] = {}  # by call id, in the order the calls came
        self._count = 0  # files made (each gets the next number)

    def begin(self, call_id: str, name: str) -> None:
        if self._folder is None:
            self._folder, self._lock = _locked_folder()
        self._count += 1
        path = self._folder / f"{self._count}.txt"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
        self._calls[call_id] = Kept(visible(name), path)
        while len(self._calls) > KEPT_CALLS:
            oldest = next(iter(self._calls))
            self._calls.pop(oldest).path.unlink(missing_ok=True)

    def add(self, call_id: str, text: str) -> None:
        """The next piece of what a running call prints."""
        kept = self._calls.get(call_id)
        if kept is None:
            return
        room = max(0, MAX_KEPT_CHARS - kept.chars)
        _append(kept.path, visible(text[:room]))
        kept.chars += min(room, len(text))
        kept.more += len(text) - min(room, len(text))

    def end(self, call_id: str, output: str) -> str:
        """The call's result came: it is what is kept when nothing was printed as it ran.
        What the person is told /last shows of it."""
        kept = self._calls.get(call_id)
        if kept is None:
            return SHOWN_BY
        if kept.chars == 0:
            self.add(call_id, output)
        if not kept.more:
            return SHOWN_BY
        _append(kept.path, f"\n[... {kept.more:,} more characters not kept]\n")
        return f" (Ctrl-O or /last shows its first {kept.chars:,} characters)"

    def last(self) -> Kept | None:
        """The last call's, if any call came."""
        return next(reversed(self._calls.values()), None)

    def close(self) -> None:
        """Remove every file kept (the chat ends)."""
        self._calls.clear()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def _locked_folder() -> tuple[Path, int]:
    """A new 0700 folder, and its descriptor holding it locked; named as kept output only
    once locked."""
    making = Path(tempfile.mkdtemp(prefix=_MAKING_PREFIX))
    lock = os.open(making, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    fcntl.flock(lock, fcntl.LOCK_EX)
    folder = making.with_name(FOLDER_PREFIX + making.name.removeprefix(_MAKING_PREFIX))
    making.rename(folder)
    return folder, lock


def remove_leftovers() -> None:
    """Remove the kept output a chat left when it was killed: its folder, which no running
    chat holds locked any more (only this user's own folders, never through a link)."""
    for folder in Path(tempfile.gettempdir()).glob(FOLDER_PREFIX + "*"):
        try:
            lock = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if os.fstat(lock).st_uid == os.getuid():
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:  # held: its chat runs
            pass
        finally:
            os.close(lock)


def _append(path: Path, text: str) -> None:
    if text:
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text)
