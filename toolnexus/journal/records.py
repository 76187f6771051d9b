"""The journal of one machine: which thread's turn changed which files of which workspace,
with the contents kept by hash (_blobs.py), so a thread's files can be put back as they were
before any turn (`rewind`) and a rewind undone (`redo`).

A folder holds `blobs/` and `records.jsonl` (0600), one JSON line per change set applied
(`{"thread", "turn", "call", "root", "changes"}`) or rewind made (`"rewind": N`). A
secret-looking file is recorded by hash only (the caller does not keep it), and so cannot
be restored: a rewind that needs it says so and changes nothing.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import ToolnexusError
from ._blobs import Blobs
from .changes import ChangeSet
from .rewind import RewindPlan, apply_rewind, plan_rewind

__all__ = [
    "Journal",
    "Record",
]

RECORDS = "records.jsonl"


class Record(NamedTuple):
    thread: str
    turn: int  # the thread's turn (its N-th user message) the change set belongs to
    call: str  # the tool call's id ("" for a rewind)
    root: str  # the workspace
    changes: ChangeSet
    rewind: int = 0  # for a rewind: the turn it went back to before


class Journal:
    """The change sets applied on this machine, by thread and turn, and their contents."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @functools.cached_property
    def blobs(self) -> Blobs:
        """The contents (opened on first use: opening counts what the folder holds)."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        return Blobs(self.folder / "blobs")

    def record(self, thread: str, turn: int, call: str, root: Path, changes: ChangeSet) -> None:
        self._append(Record(thread, turn, call, str(root), changes))

    def records(self, thread: str) -> list[Record]:
        """The thread's records, in the order they were made (a line that cannot be read,
        cut off by a crash, say, is passed over)."""
        return [r for r in self._read() if r.thread == thread]

    def plan(self, thread: str, turn: int) -> tuple[Path, RewindPlan]:
        """What putting the thread's workspace back as it was before `turn` would do."""
        root, sets = self._since(thread, turn)
        return root, plan_rewind(root, sets, self.blobs)

    def rewind(
        self,
        thread: str,
        turn: int,
        *,
        overwrite: frozenset[str] = frozenset(),
        skip: frozenset[str] = frozenset(),
        beside: Mapping[str, str] | None = None,
    ) -> ChangeSet:
        """Put the thread's files back as they were before `turn` (1: before its first),
        but the paths in `skip`; RewindConflict (nothing changed) if a file changed since,
        outside toolnexus, and is not in `overwrite` (`beside`: see `apply_rewind`)."""
        root, plan = self.plan(thread, turn)
        plan = plan.without(skip)
        done = apply_rewind(root, plan, self.blobs, overwrite=overwrite, beside=beside)
        self._append(Record(thread, turn, "", str(root), done, rewind=turn))
        return done

    def redo(self, thread: str, *, overwrite: frozenset[str] = frozenset()) -> ChangeSet:
        """Undo the thread's last rewind (itself recorded, so redo after redo goes back)."""
        last = next((r for r in reversed(self.records(thread)) if r.rewind), None)
        if last is None:
            raise ToolnexusError(f"thread {thread!r} has no rewind to redo")
        root = Path(last.root)
        plan = plan_rewind(root, [last.changes], self.blobs)
        done = apply_rewind(root, plan, self.blobs, overwrite=overwrite)
        self._append(Record(thread, last.turn, "", last.root, done))
        return done

    def fork(self, thread: str, new: str, turns: int | None = None) -> None:
        """`new` starts as a fork of `thread` (its first `turns`, or all): it shares the
        records of those turns, so it can rewind them too (the contents are shared)."""
        for record in self.records(thread):
            if turns is None or record.turn <= turns:
                self._append(record._replace(thread=new))

    def forget(self, threads: set[str]) -> None:
        """Drop the records of deleted threads, and the contents no record uses any more."""
        kept = [r for r in self._read() if r.thread not in threads]
        path = self.folder / RECORDS
        if not path.exists():
            return
        temporary = path.with_suffix(".tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for record in kept:
                handle.write(json.dumps(_record_json(record), ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        used = {
            state.digest
            for record in kept
            for change in record.changes.changes
            for state in (change.before, change.after)
            if state.digest
        }
        self.blobs.prune(used)

    def _since(self, thread: str, turn: int) -> tuple[Path, list[ChangeSet]]:
        """The workspace and the change sets applied since `turn` began, as they stand: the
        records after the last rewind to an earlier turn; a rewind already made to `turn`
        or later counts as part of the history to undo too."""
        found = [r for r in self.records(thread) if r.turn >= turn and r.changes.changes]
        if not found:
            raise ToolnexusError(
                f"no file changes of thread {thread!r} since turn {turn} are journaled on "
                "this machine (a thread shared through a database keeps its files' history "
                "where its tools ran)"
            )
        roots = {r.root for r in found}
        if len(roots) > 1:
            raise ToolnexusError(
                f"thread {thread!r} changed files in {len(roots)} workspaces since turn "
                f"{turn}: rewind one at a time (toolnexus does not yet)"
            )
        return Path(found[0].root), [r.changes for r in found]

    def _append(self, record: Record) -> None:
        line = json.dumps(_record_json(record), ensure_ascii=False) + "\n"
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.folder / RECORDS
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def _read(self) -> Iterator[Record]:
        try:
            with open(self.folder / RECORDS, encoding="utf-8") as handle:
                lines = handle.readlines()
        except FileNotFoundError:
            return
        for line in lines:
            try:
                yield _record_of(json.loads(line))
            except (ValueError, KeyError, TypeError, IndexError):
                continue


def _record_json(record: Record) -> dict[str, Any]:
    return {
        "thread": record.thread,
        "turn": record.turn,
        "call": record.call,
        "root": record.root,
        "rewind": record.rewind,
        **record.changes.as_json(),
    }


def _record_of(data: dict[str, Any]) -> Record:
    return Record(
        str(data["thread"]),
        int(data["turn"]),
        str(data["call"]),
        str(data["root"]),
        ChangeSet.from_json(data),
        int(data.get("rewind", 0)),
    )
