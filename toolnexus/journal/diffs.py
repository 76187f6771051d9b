"""A change to a file as a unified diff, for a person to read (the chat's /diff, the review
of a command's changes before they apply), or as the lines it added and removed (`+3 -1`, what
a command's panel says of each file). Binary or large contents are named, not shown."""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolnexus.journal._blobs import Blobs
    from toolnexus.journal.changes import FileChange, FileState

__all__ = [
    "diff_lines",
    "line_counts",
]

MAX_BYTES = 256 * 1024  # a content bigger than this is named, not shown
MAX_MATCHED = 500  # changed lines of each side matched line by line; more: all replaced


def diff_lines(path: str, before: bytes | None, after: bytes | None) -> list[str]:
    """`before` and `after` (None: the file is not there) as unified diff lines, no line
    ends; one line saying so when either cannot be shown."""
    old, new = _text(before), _text(after)
    if old is None or new is None:
        return [f"{path}: changed (binary or over {MAX_BYTES // 1024} KiB: not shown)"]
    lines = difflib.unified_diff(
        old.splitlines(),
        new.splitlines(),
        f"a/{path}" if before is not None else "/dev/null",
        f"b/{path}" if after is not None else "/dev/null",
        lineterm="",
    )
    return list(lines)


def _text(data: bytes | None) -> str | None:
    if data is None:
        return ""
    if len(data) > MAX_BYTES or b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", "replace")


def line_counts(blobs: Blobs, change: FileChange) -> str:
    """`+A -R`, the lines `change` added and removed; "binary" for a binary file; "" when
    it cannot be said at once: a side's content was not kept, is over MAX_BYTES or is a
    link."""
    before, after = (_kept(blobs, state) for state in (change.before, change.after))
    if before is None or after is None:
        return ""
    if b"\0" in before[:8192] or b"\0" in after[:8192]:
        return "binary"
    old = before.decode("utf-8", "replace").splitlines()
    new = after.decode("utf-8", "replace").splitlines()
    added, removed = _counted(old, new)
    return f"+{added} -{removed}"


def _kept(blobs: Blobs, state: FileState) -> bytes | None:
    """A side's content (empty when there is no file), None when it is not at hand."""
    if state.kind == "absent":
        return b""
    if state.kind != "file" or state.size > MAX_BYTES or not blobs.has(state.digest):
        return None
    return blobs.read(state.digest)


def _counted(old: list[str], new: list[str]) -> tuple[int, int]:
    """Lines added and removed, in bounded time: the lines both sides start and end with
    are set aside, and a changed middle over MAX_MATCHED lines counts as all replaced
    (matching line by line takes time quadratic in the lines)."""
    shortest = min(len(old), len(new))
    start = next((i for i in range(shortest) if old[i] != new[i]), shortest)
    end = next((i for i in range(shortest - start) if old[-1 - i] != new[-1 - i]), shortest - start)
    old, new = old[start : len(old) - end], new[start : len(new) - end]
    if max(len(old), len(new)) > MAX_MATCHED:
        return len(new), len(old)
    added = removed = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, False).get_opcodes():
        if tag != "equal":
            removed, added = removed + i2 - i1, added + j2 - j1
    return added, removed
