"""Counts in words, so that one is never "1 lines": `counted(1, "more line")`."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and `noun`, made plural unless the count is one: "1 code block", "0 code
    blocks", "3 more lines"; `plural` for a noun that does not just take an s."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
