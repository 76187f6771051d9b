"""The save planner every store shares: how a save lands on what the thread holds now.

A caller loads a thread (a `Thread`: messages plus the version they are at), runs a turn
(seconds or minutes), and saves the whole new transcript with the version it built on.
Meanwhile another process, or another task of this one, may have saved the same thread.
The planner compares the new transcript with the one at the caller's version (a pristine
copy the store kept when it handed that version out or wrote it, else read back):

* it extends it: only the new tail is written, after whatever the thread holds now. If
  nobody wrote meanwhile that is a plain append; if someone did, a merge: their turn
  stays and ours follows it.
* it does not (a rewrite: a compaction, a rewritten tool result): the thread is replaced
  whole, but only if it is still exactly at the caller's version; else ThreadConflict.
  So is a stale save whose version the store no longer holds (it cannot prove an append).

After a merge the caller's transcript is not what the thread holds at the version `save`
returned: the store remembers it as that version's "view", so a caller that goes on from
it without loading again still appends (or, for a rewrite, gets ThreadConflict) instead of
replacing the other writer's turn.

A save without a version builds on the newest version this store object handed out or
wrote for the thread; if it has seen none, the save is a plain "set": an append when the
stored transcript is a prefix of the new one, else a replace.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from ..types import Message
from .base import ThreadConflict


@dataclass(frozen=True, slots=True)
class Plan:
    """What one save writes. kind: "append" (write `write` from seq `start`), "replace"
    (delete the thread's messages, write `write` from 0) or "noop". `keep`: the pristine
    messages an append extends; `exact`: afterwards the thread holds exactly what the
    caller saved (False after a merge)."""

    kind: str
    start: int
    write: list[Message]
    keep: list[Message]
    exact: bool


class Held:
    """What the store knows of one version of a thread, as its own pristine copies:
    `exact`, what the thread held (None: not known here), and `view`, what a caller
    holds after a merged save (None: no merge produced this version here)."""

    __slots__ = ("exact", "view")

    def __init__(self, exact: list[Message] | None = None) -> None:
        self.exact = exact
        self.view: list[Message] | None = None


_NOTHING = Held([])  # version 0: the thread did not exist


class Versions:
    """Per thread, the transcripts at the last `depth` versions this store object handed
    out or wrote, for the `max_threads` threads used last. Versions share their message
    dicts, so keeping several costs little more than one."""

    def __init__(self, max_threads: int = 64, depth: int = 8) -> None:
        self.max_threads = max_threads
        self.depth = depth
        self._threads: OrderedDict[str, OrderedDict[int, Held]] = OrderedDict()
        self._latest: dict[str, int] = {}

    def held(self, id: str, version: int) -> Held | None:
        if version == 0:
            return _NOTHING
        versions = self._threads.get(id)
        held = versions.get(version) if versions else None
        if held is not None:
            assert versions is not None
            versions.move_to_end(version)  # a version callers still build on stays
        return held

    def latest(self, id: str) -> int | None:
        """The newest version of the thread this store object has seen, if any."""
        return self._latest.get(id)

    def exact(self, id: str) -> tuple[int, list[Message]] | None:
        """The newest version held exactly, and its messages: a load that finds the thread
        still at that version need not read them."""
        for version, held in reversed((self._threads.get(id) or {}).items()):
            if held.exact is not None:
                return version, held.exact
        return None

    def note(self, id: str, version: int, messages: list[Message], exact: bool = True) -> None:
        """The thread held `messages` at `version` (`exact` False: a caller's view of it)."""
        self._latest[id] = max(version, self._latest.get(id, 0))
        if version == 0:
            return
        versions = self._threads.get(id)
        if versions is None:
            versions = self._threads[id] = OrderedDict()
        self._threads.move_to_end(id)
        held = versions.setdefault(version, Held())
        if exact:
            held.exact = messages
        else:
            held.view = messages
        versions.move_to_end(version)
        while len(versions) > self.depth:
            versions.popitem(last=False)
        while len(self._threads) > self.max_threads:
            self._threads.popitem(last=False)

    def forget(self, id: str) -> None:
        self._threads.pop(id, None)
        self._latest.pop(id, None)

    def clear(self) -> None:
        self._threads.clear()
        self._latest.clear()

    def plan(
        self,
        id: str,
        new: list[Message],
        version: int | None,
        current: tuple[int, int] | None,
        load: Callable[[], list[Message]],
    ) -> Plan:
        """How to save `new`, built on `version` (None: see the module doc), given the
        thread's (version, message count) now (`current` None: no such thread).
        `load()` reads the stored transcript; it is only called when needed."""
        if current is None:  # no thread (never was, or deleted meanwhile): create it whole
            return Plan("replace", 0, list(new), [], True)
        now, count = current
        base = version if version is not None else self.latest(id)
        if base is None:  # never seen: a plain "set"
            stored = load()
            if _extends(new, stored):
                return _append(new, stored, count, True)
            return Plan("replace", 0, list(new), [], True)
        held = self.held(id, base)
        exact = held.exact if held else None
        if exact is None and base == now:
            exact = load()
        if exact is not None and _extends(new, exact):
            return _append(new, exact, count, base == now)
        if held is not None and held.view is not None and _extends(new, held.view):
            return _append(new, held.view, count, False)
        if exact is not None and base == now and (held is None or held.view is None):
            return Plan("replace", 0, list(new), [], True)
        raise ThreadConflict(
            id,
            "" if exact is not None or held else f"version {base} is no longer held by this store",
        )

    def committed(self, id: str, plan: Plan, version: int, written: list[Message]) -> None:
        """`plan` committed as `version`; `written` are pristine copies of `plan.write`."""
        messages = written if plan.kind == "replace" else plan.keep + written
        self.note(id, version, messages, plan.exact)


def _append(new: list[Message], base: list[Message], count: int, exact: bool) -> Plan:
    n = len(base)
    return Plan("noop" if n == len(new) else "append", count, new[n:], base, exact)


def _extends(new: list[Message], prefix: list[Message]) -> bool:
    n = len(prefix)
    return n <= len(new) and (n == 0 or new[:n] == prefix)
