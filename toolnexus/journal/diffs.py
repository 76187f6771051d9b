"""A change to a file as a unified diff, for a person to read (the chat's /diff, the review
of a command's changes before they apply). Binary or large contents are named, not shown."""

from __future__ import annotations

import difflib

__all__ = [
    "diff_lines",
]

MAX_BYTES = 256 * 1024  # a content bigger than this is named, not shown


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
