"""What a command changed where no overlay sees its writes (the sandbox's fallback without
namespaces, or a command a person let run outside the sandbox): the workspace's files are
looked at before and after, and compared.

Before the command every file is stat'ed and its content kept (once: a file whose inode,
size, mode and mtime are as last seen is not read again), within bounds (MAX_FILES,
MAX_SECONDS); a workspace past them is seen in part, and the change set says it is not
complete. After it, the files are stat'ed again: what differs is hashed and kept. The trees
tools regenerate (node_modules, .venv...) are not looked into.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from .changes import ABSENT, REGENERATED, ChangeSet, FileChange, FileState, state_of

MAX_FILES = 20_000
MAX_SECONDS = 2.0


class Seen(NamedTuple):
    """A path's stat: enough to tell it changed without reading it."""

    dir: bool
    mode: int
    size: int
    mtime_ns: int
    ino: int


Keep = Callable[[Path, FileState], None]


class Before(NamedTuple):
    """The workspace before a command: each path's stat and state (its content kept)."""

    seen: dict[str, Seen]
    states: dict[str, FileState]
    complete: bool


class Snapshots:
    """Before and after pictures of one workspace; what earlier pictures read is reused."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._known: dict[str, tuple[Seen, FileState]] = {}

    def before(self, keep: Keep) -> Before:
        seen, complete = _scan(self.root)
        states = {path: self._state(path, s, keep) for path, s in seen.items()}
        return Before(seen, states, complete)

    def changes(self, before: Before, source: str, keep: Keep, *, outside: bool) -> ChangeSet:
        """What differs now from `before`."""
        now, complete = _scan(self.root)
        changes = []
        for path in sorted(set(before.seen) | set(now)):
            was, is_ = before.seen.get(path), now.get(path)
            if was == is_:
                continue
            old = before.states.get(path, ABSENT)
            new = self._state(path, is_, keep) if is_ is not None else ABSENT
            # a folder's time moves when an entry is made or removed in it: a rewind puts
            # it back, so it counts here (a file's time alone does not)
            if not new.same_as(old) or (new.kind == old.kind == "dir" and new != old):
                changes.append(FileChange(path, old, new))
        return ChangeSet(
            tuple(changes), source, outside=outside, complete=before.complete and complete
        )

    def _state(self, path: str, seen: Seen, keep: Keep) -> FileState:
        known = self._known.get(path)
        if known is not None and known[0] == seen:
            return known[1]
        state = state_of(self.root / path)
        keep(self.root / path, state)
        self._known[path] = (seen, state)
        return state


def _scan(root: Path) -> tuple[dict[str, Seen], bool]:
    """Every path under `root` (not following links) with its stat, within the bounds;
    whether it got to the end."""
    found: dict[str, Seen] = {}
    deadline = time.monotonic() + MAX_SECONDS
    pending = [""]
    while pending:
        relative = pending.pop()
        try:
            entries = list(os.scandir(root / relative if relative else root))
        except OSError:
            continue
        for entry in entries:
            if len(found) >= MAX_FILES or time.monotonic() > deadline:
                return found, False
            path = f"{relative}/{entry.name}" if relative else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            folder = stat.S_ISDIR(st.st_mode)
            if folder and entry.name in REGENERATED:
                continue
            if not (folder or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                continue  # a socket, a FIFO: nothing to keep
            found[path] = Seen(
                folder, stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ino
            )
            if folder:
                pending.append(path)
    return found, True
