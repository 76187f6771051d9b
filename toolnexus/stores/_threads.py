"""What every thread store shares: the save planner (append, replace or refuse), titles,
searchable text, usage sums and JSON encoding. Pure Python, no database here.

The save planner
----------------
`ConversationStore.save(id, messages)` carries no version: a caller loads a transcript,
runs a turn (seconds or minutes), and saves the whole new transcript. Meanwhile another
process, or another task of this one, may have saved the same thread. So each store
remembers, per thread, the last few transcripts it handed out or wrote ("seen" entries,
each with the database version it belonged to). On save:

* if a seen transcript is a prefix of the new one, only the new tail (the "delta") is
  written, after whatever the database holds now. When nobody else wrote in between, that
  is a plain append; when someone did, it is a merge: their turn stays, ours follows it.
* otherwise the save is a rewrite (compaction, undo). It replaces the thread whole, but
  only if the database still holds exactly what this store last saw; else ThreadConflict.
* a store that never saw the thread appends when the stored transcript is a prefix of the
  new one and otherwise replaces it (a plain "set", like MemoryStore always did).

A rewrite is checked against the newest version this store instance has seen: two tasks of
one process that both rewrite the same thread at once must coordinate themselves.
"""

from __future__ import annotations

import copy
import json
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .base import ThreadConflict

Message = dict[str, Any]

TITLE_MAX = 80
SNIPPET_WORDS = 12
MARK = "**"  # search snippets wrap each matched word in these


# ---------------------------------------------------------------- message text, titles


def message_text(message: Message) -> str:
    """The searchable text of one message: its content (a string or text parts) and the
    names and arguments of its tool calls."""
    parts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
    for call in message.get("tool_calls") or ():
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
    return json.loads("[" + ",".join(bodies) + "]")


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
    """About `words` words of `text` around the first match, matches wrapped in MARK."""
    tokens = text.split()
    if not tokens:
        return ""

    def hit(token: str) -> bool:
        return any(w.casefold().startswith(t) for w in re.findall(r"[^\W_]+", token)
                   for t in terms)

    first = next((i for i, tok in enumerate(tokens) if hit(tok)), 0)
    start = max(0, first - words // 3)
    shown = tokens[start : start + words]
    out = " ".join(f"{MARK}{tok}{MARK}" if hit(tok) else tok for tok in shown)
    return ("…" if start > 0 else "") + out + ("…" if start + words < len(tokens) else "")


# ---------------------------------------------------------------- the save planner


@dataclass
class Seen:
    """A transcript this store handed out (get) or wrote (save), at database version
    `version` (None: the thread did not exist). `messages` are the store's own pristine
    copies; `refs` the caller's dict objects for them (what get returned, or what save was
    given), so a later save can tell which of these its transcript was built from.
    `in_sync`: the database held exactly `messages` at `version` (False after a merge)."""

    version: int | None
    messages: list[Message]
    refs: list[Message]
    in_sync: bool


@dataclass
class Plan:
    """What one save will write. kind: "append" (write `write` at seq `start`),
    "replace" (delete the thread's messages, write `write` from 0) or "noop"."""

    kind: str
    start: int
    write: list[Message]
    keep: list[Message]  # the pristine prefix the caller holds, reused for the next Seen
    in_sync: bool
    merged: bool = False


class Views:
    """Per thread, the last transcripts a store instance has seen; see the module doc.

    Which one a save continues from: the one sharing the longest run of the *same* message
    dicts with it (the agent loop keeps the history's dicts: `list(history) + new`), else
    the longest one that is a prefix of it by value. That is how an undo or a rewritten
    tool result (a rewrite of the newest version) is told from a concurrent task that
    appends to the version it loaded before.

    Transcripts are kept for the `max_threads` most recently used threads, `depth` per
    thread (their dicts are shared, so versions cost little more than one). For older
    threads only (version, in_sync) is kept and a save reads the stored transcript once.
    """

    def __init__(self, max_threads: int = 64, depth: int = 8) -> None:
        self.max_threads = max_threads
        self.depth = depth
        self._seen: OrderedDict[str, list[Seen]] = OrderedDict()
        self._latest: dict[str, tuple[int | None, bool]] = {}

    def holds(self, id: str) -> bool:
        """True if a transcript of this thread is in memory (plan() will not call load)."""
        return bool(self._seen.get(id))

    def forget(self, id: str) -> None:
        self._seen.pop(id, None)
        self._latest.pop(id, None)

    def clear(self) -> None:
        self._seen.clear()
        self._latest.clear()

    def pristine(self, id: str) -> tuple[int | None, list[Message]] | None:
        """The newest version of the thread we hold exactly, and our copy of it: a load
        that finds the thread still at that version need not read its messages."""
        for entry in reversed(self._seen.get(id) or ()):
            if entry.in_sync:
                return entry.version, entry.messages
        return None

    def note(self, id: str, version: int | None, messages: list[Message],
             refs: list[Message], in_sync: bool, *, prune: bool = True) -> None:
        """Remember that a caller now holds `refs`, equal to `messages` (pristine).

        Old entries are dropped (freeing what they hold) when `prune`, which loads ask
        for, so that a save does not pay for freeing the transcripts of earlier loads."""
        entries = self._seen.get(id)
        if entries is None:
            entries = self._seen[id] = []
        else:
            self._seen.move_to_end(id)
        entries.append(Seen(version, messages, list(refs), in_sync))
        del entries[: -(self.depth if prune else 2 * self.depth)]
        self._latest[id] = (version, in_sync)
        while len(self._seen) > self.max_threads:
            self._seen.popitem(last=False)

    def plan(
        self,
        id: str,
        new: list[Message],
        db_version: int | None,
        db_count: int,
        load: Callable[[], list[Message]],
    ) -> Plan:
        """Decide how to save `new` given the thread's current row (`db_version` None: no
        such thread). `load()` reads the stored transcript (only called when needed)."""
        if db_version is None:  # no thread (never was, or deleted meanwhile): create it whole
            return Plan("replace", 0, list(new), [], True)
        entries = self._seen.get(id)
        if entries:
            origin = _by_identity(entries, new) or _by_value(entries, new)
            if origin is not None and _extends(new, origin.messages):
                in_sync = origin.in_sync and origin.version == db_version
                if len(new) == len(origin.messages):  # nothing new to write
                    return Plan("noop", db_count, [], origin.messages, in_sync)
                return Plan("append", db_count, new[len(origin.messages):], origin.messages,
                            in_sync, merged=not in_sync)
            base = origin or entries[-1]
            if base.in_sync and base.version == db_version:
                return Plan("replace", 0, list(new), [], True)
            raise ThreadConflict(id)
        # Nothing in memory: read what is stored.
        stored = load()
        n = len(stored)
        if _extends(new, stored):
            if n == len(new):
                return Plan("noop", n, [], stored, True)
            return Plan("append", n, new[n:], stored, True)
        known = self._latest.get(id)
        if known is None or (known[1] and known[0] == db_version):
            return Plan("replace", 0, list(new), [], True)
        raise ThreadConflict(id)

    def committed(self, id: str, plan: Plan, version: int | None, new: list[Message],
                  written: list[Message]) -> None:
        """The write of `plan` committed at `version`: the caller holds `new`; `written`
        are pristine copies of `plan.write` (as read back from the database)."""
        messages = written if plan.kind == "replace" else plan.keep + written
        self.note(id, version, messages, new, plan.in_sync, prune=False)


def _extends(new: list[Message], prefix: list[Message]) -> bool:
    n = len(prefix)
    return n <= len(new) and (n == 0 or new[:n] == prefix)


def _shared_run(new: list[Message], refs: list[Message]) -> int:
    """How many leading messages of `new` are the very objects in `refs` (when the first
    and the last of `refs` are, all of `refs` is taken to be: a wrong guess only picks
    another origin, and the value check that follows still decides append or rewrite)."""
    if not refs or not new or new[0] is not refs[0]:
        return 0
    n = len(refs)
    if n <= len(new) and new[n - 1] is refs[-1]:
        return n
    run = 1
    for mine, theirs in zip(new[1:], refs[1:], strict=False):
        if mine is not theirs:
            break
        run += 1
    return run


def _by_identity(entries: list[Seen], new: list[Message]) -> Seen | None:
    best, best_run = None, 0
    for entry in reversed(entries):  # newest first: on a tie the newest wins
        if len(entry.refs) <= best_run:
            continue
        run = _shared_run(new, entry.refs)
        if run > best_run:
            best, best_run = entry, run
    return best


def _by_value(entries: list[Seen], new: list[Message]) -> Seen | None:
    best = None
    for entry in entries:
        if _extends(new, entry.messages) and (
                best is None or len(entry.messages) >= len(best.messages)):
            best = entry
    return best
