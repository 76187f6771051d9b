"""What every thread store shares besides the save planner (`_planner.py`): titles,
searchable text, usage sums and JSON encoding. Pure Python, no database here.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Sequence
from typing import Any

from ..types import Message, calls_of
from .base import SNIPPET_MARK, StoreError

TITLE_MAX = 80
SNIPPET_WORDS = 12


# ---------------------------------------------------------------- message text, titles


def message_text(message: Message) -> str:
    """The searchable text of one message: its content (a string or text parts) and the
    names and arguments of its tool calls."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        found: Sequence[object] = content  # as stored: it may hold anything
        for part in found:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(text := part.get("text"), str):
                parts.append(text)
    for call in calls_of(message):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            name = function.get("name")
            args = function.get("arguments")
            if isinstance(name, str):
                parts.append(name)
            if isinstance(args, str):
                parts.append(args)
            elif args is not None:
                parts.append(json.dumps(args, ensure_ascii=False, default=str))
    return "\n".join(p for p in parts if p)


def title_of(messages: list[Message]) -> str | None:
    """The first non-blank line of the first user message, cut to TITLE_MAX characters."""
    for message in messages:
        if message.get("role") != "user":
            continue
        for line in message_text(message).splitlines():
            line = " ".join(line.split())
            if line:
                return line if len(line) <= TITLE_MAX else line[: TITLE_MAX - 1] + "…"
    return None


def clean_title(title: str | None) -> str | None:
    """A title given to rename: one line, trimmed; None or blank means automatic."""
    if title is None:
        return None
    title = " ".join(title.split())
    return title or None


def fork_length(id: str, count: int, at: object) -> int:
    """How many messages a fork of thread `id` (holding `count`) at `at` copies (`at` as
    the caller gave it: None, or a message count)."""
    if at is None:
        return count
    if isinstance(at, bool) or not isinstance(at, int) or not 1 <= at <= count:
        raise StoreError(
            f"thread {id!r} has {count} message{'s' * (count != 1)}: a fork "
            f"keeps 1 to {count} of them, not {at!r}"
        )
    return at


def add_usage(total: dict[str, int], usage: dict[str, Any] | None) -> dict[str, int]:
    """`total` plus every integer entry of `usage` (a new dict)."""
    out = dict(total)
    for key, value in (usage or {}).items():
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = out.get(key, 0) + value
    return out


# ---------------------------------------------------------------- JSON encoding


def encode(message: Message) -> str:
    """One message as compact JSON; exact on the way back (lone surrogates included)."""
    if not isinstance(message, dict):
        raise TypeError(f"a message must be a dict, not {type(message).__name__}")
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: keep it, escaped
        text = json.dumps(message, ensure_ascii=True, separators=(",", ":"))
    return text


_ATOMS = frozenset({str, int, float, bool, type(None)})


def share_copy(value: Any) -> Any:
    """A copy with new dicts and lists that shares the immutable leaves (strings, numbers):
    as safe to hand out as a deep copy, cheaper to make, and cheap to compare with the
    original (equal strings are the same objects). Anything else is deep-copied."""
    kind = type(value)
    if kind is dict:
        return {key: share_copy(item) for key, item in value.items()}
    if kind is list:
        return [share_copy(item) for item in value]
    if kind in _ATOMS:
        return value
    return copy.deepcopy(value)


def decode_many(bodies: list[str]) -> list[Message]:
    """Stored message bodies back to dicts, parsed in one go."""
    if not bodies:
        return []
    messages: list[Message] = json.loads("[" + ",".join(bodies) + "]")
    return messages


def storable_text(text: str) -> str:
    """Searchable text safe for any database: no NUL, no lone surrogates."""
    text = text.replace("\x00", " ")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "replace").decode("utf-8")
    return text


# ---------------------------------------------------------------- search helpers


def search_terms(text: str) -> list[str]:
    """The words of a search query (letters and digits), lowercased. Each term matches a
    word that starts with it; every term must appear in the same message."""
    return [t.casefold() for t in re.findall(r"[^\W_]+", text)]


def fts5_query(terms: list[str]) -> str:
    """An FTS5 MATCH expression for `terms`: each a quoted prefix, all required."""
    return " ".join('"' + t.replace('"', '""') + '"*' for t in terms)


def tsquery(terms: list[str]) -> str:
    """A PostgreSQL to_tsquery expression for `terms` (already plain words)."""
    return " & ".join(t + ":*" for t in terms)


def text_matches(text: str, terms: list[str]) -> bool:
    words = [w.casefold() for w in re.findall(r"[^\W_]+", text)]
    return all(any(w.startswith(t) for w in words) for t in terms)


def snippet(text: str, terms: list[str], words: int = SNIPPET_WORDS) -> str:
    """About `words` words of `text` around the first match, matches wrapped in SNIPPET_MARK."""
    tokens = text.split()
    if not tokens:
        return ""

    def hit(token: str) -> bool:
        return any(w.casefold().startswith(t) for w in re.findall(r"[^\W_]+", token) for t in terms)

    first = next((i for i, tok in enumerate(tokens) if hit(tok)), 0)
    start = max(0, first - words // 3)
    shown = tokens[start : start + words]
    out = " ".join(f"{SNIPPET_MARK}{tok}{SNIPPET_MARK}" if hit(tok) else tok for tok in shown)
    return ("…" if start > 0 else "") + out + ("…" if start + words < len(tokens) else "")
