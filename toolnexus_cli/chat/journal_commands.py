"""The chat's commands on the workspace journal: /rewind lists the turns that changed files
or puts them back as before turn N, /redo undoes the last rewind, /diff shows what the last
turn changed. Turns are numbered as the thread's questions (1: its first); `/undo files`
and `/undo both` (commands.py) rewind the last one."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text

from toolnexus import ToolnexusError
from toolnexus.journal.diffs import diff_lines
from toolnexus.journal.rewind import version_control_words

from ..session.session import Session
from ..threads.commands import skipped_words

if TYPE_CHECKING:
    from rich.console import Console

    from toolnexus.journal import ChangeSet, Journal

COMMANDS = {
    "/rewind": "turns that changed files, or put them back as before turn N: /rewind [N]",
    "/redo": "undo the last /rewind",
    "/diff": "what the last turn changed in the files, as a diff",
    "/review": "show each command's changes and apply them after a yes: /review [on|off] "
    "(Alt-R toggles)",
}


class JournalCommands:
    """Mixed into Commands, which gives `session`, `console` and `say`."""

    session: Session
    console: Console
    say: Callable[..., None]

    def _journal(self) -> Journal | None:
        workspace = self.session.toolkit.workspace
        journal = workspace.journal if workspace is not None else None
        if journal is None:
            self.say("no file tools in this chat: no file changes to go back on")
        return journal

    async def rewind(self, arg: str) -> None:
        journal = self._journal()
        if journal is None:
            return
        if not arg:
            self._list_turns(journal)
            return
        if not arg.isdigit() or int(arg) < 1:
            self.say("/rewind N takes a turn number from 1 (before the first turn)", "yellow")
            return
        self.rewind_files(journal, int(arg))

    def rewind_files(self, journal: Journal, turn: int) -> bool:
        """Put the files back as before `turn`; said in a line either way."""
        try:
            _root, plan = journal.plan(self.session.thread, turn)
            done = journal.rewind(self.session.thread, turn)
        except ToolnexusError as exc:
            self.say(f"error: {exc}; nothing was changed", "bold red")
            return False
        self.say(f"files back as before turn {turn}: {_said(done)}; /redo goes forward again")
        if plan.skipped:
            self.say(f"left as they are: {skipped_words(plan.skipped)}")
        if plan.version_control:
            self.say(f"left as they are: {version_control_words(plan.version_control)}")
        return True

    async def review(self, arg: str) -> None:
        workspace = self.session.toolkit.workspace
        if workspace is None:
            self.say("no file tools in this chat: no commands to review")
            return
        if arg not in ("", "on", "off"):
            self.say("/review, /review on or /review off", "yellow")
            return
        if arg:
            workspace.review(arg == "on")
        self.say(review_words(workspace.reviewing))

    async def redo(self, arg: str) -> None:
        journal = self._journal()
        if journal is None:
            return
        try:
            done = journal.redo(self.session.thread)
        except ToolnexusError as exc:
            self.say(f"error: {exc}; nothing was changed", "bold red")
            return
        self.say(f"the last rewind undone: {_said(done)}")

    async def diff(self, arg: str) -> None:
        journal = self._journal()
        if journal is None:
            return
        records = [r for r in journal.records(self.session.thread) if r.changes.changes]
        if not records:
            self.say("no turn of this thread changed a file")
            return
        last = records[-1].turn
        for record in (r for r in records if r.turn == last):
            for change in record.changes.changes:
                if "dir" in (change.before.kind, change.after.kind):
                    continue
                self._show_diff(journal, change.path, change.before.digest, change.after.digest)

    def _show_diff(self, journal: Journal, path: str, before: str, after: str) -> None:
        if any(digest and not journal.blobs.has(digest) for digest in (before, after)):
            self.say(f"{path}: not shown (its content was not kept)")
            return
        old, new = _content(journal, before), _content(journal, after)
        for line in diff_lines(path, old, new):
            style = "green" if line.startswith("+") else "red" if line.startswith("-") else ""
            self.console.print(Text(line, style=style), soft_wrap=True)

    def _list_turns(self, journal: Journal) -> None:
        turns: dict[int, list[ChangeSet]] = {}
        for record in journal.records(self.session.thread):
            if record.changes.changes and not record.rewind:
                turns.setdefault(record.turn, []).append(record.changes)
        if not turns:
            self.say("no turn of this thread changed a file")
            return
        for turn, sets in turns.items():
            paths = [c.path for s in sets for c in s.changes if "dir" not in c.after.kind]
            shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
            self.say(f"turn {turn}: {len(sets)} call(s), {shown}")
        self.say("/rewind N puts the files back as before turn N")


def review_words(on: bool) -> str:
    if on:
        return (
            "review on: each command's changes are shown, and applied after a yes (a "
            "command is asked about then, not before it runs too)"
        )
    return "review off: each command's changes apply when it ends (/rewind undoes them)"


def _said(done: ChangeSet) -> str:
    return done.summary() or "nothing to change"


def _content(journal: Journal, digest: str) -> bytes | None:
    """A kept content (None: the file did not exist)."""
    return journal.blobs.read(digest) if digest else None
