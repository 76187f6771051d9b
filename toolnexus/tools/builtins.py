"""Built-in tools, opt-in: files, search, a shell and the web.

They act inside a Workspace (workspace.py): paths and addresses are judged there, so
secrets and special files are refused and anything outside the root asks first. On top of
that, the approval policy (approval.py) lets the read-only ones (read_file, list_dir, glob,
grep, fetch_url) run at once while those that change things (write_file, edit_file, bash)
ask first.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..journal._snapshot import Before
from ..journal.changes import ChangeSet, FileChange, runs_later
from ..journal.diffs import line_counts
from ._command_run import Ended, Ran, run_command
from ._leaving import FAILED, NO_NETWORK, ask_to_leave
from ._linear_regex import glob_regex, line_regex, matching_lines
from ._secret_scan import NOT_LISTED, SKIP_DIRS
from ._web import fetch_page
from .sandbox import Sandbox, reaped
from .suspension import pending_request
from .tool import Tool, ToolContext, ToolResult, define_tool
from .workspace import ApprovalNeeded, Clash, Held, Refused, Workspace, approved, ask

__all__ = [
    "ALL",
    "CHANGING",
    "Builtins",
    "builtin_tools",
]

COMMAND_TIMEOUT_S = 120.0  # a bash call's time limit when the model names none

MAX_LINES = 2000
MAX_READ_BYTES = 256 * 1024  # of text, per read_file call
MAX_EDIT_BYTES = 8 * 1024 * 1024
MAX_GREP_FILE_BYTES = 1024 * 1024  # grep searches this much of each file
MAX_MATCHES = 200
MAX_ENTRIES = 500
SEARCH_SECONDS = 10.0  # glob and grep stop after this long with what they found


def guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A tool that asks first returns its approval request instead of failing."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except ApprovalNeeded as need:
                return need.result

        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ApprovalNeeded as need:
            return need.result

    return run


def _kib(n: int) -> str:
    return f"{n // 1024} KiB"


class FileSearch:
    """The walk glob and grep share: the files under a folder that a tool may see
    (no secrets, special files or links out of the permitted places), in order, stopping
    at a deadline or when the run is cancelled (`cancelled` is the call's
    ToolContext.cancelled: the tool runs in a thread, which nobody else can stop)."""

    def __init__(
        self, workspace: Workspace, root: Path, max_depth: int | None, cancelled: threading.Event
    ) -> None:
        self.workspace, self.root, self.max_depth = workspace, root, max_depth
        self.cancelled = cancelled
        self.deadline = time.monotonic() + SEARCH_SECONDS
        self.timed_out = False

    def visible(self, path: Path) -> bool:
        real = Path(os.path.realpath(path))
        ws = self.workspace
        if ws.refusal(real):
            return False
        return (
            ws.inside(real)
            or real == self.root
            or self.root in real.parents
            or ws.path_rule(real) == "allow"
        )

    def stopped(self) -> bool:
        """Out of time (then noted) or cancelled: no more files are wanted."""
        self.timed_out = self.timed_out or time.monotonic() > self.deadline
        return self.timed_out or self.cancelled.is_set()

    def files(self) -> Iterator[Path]:
        for folder, dirs, names in os.walk(self.root):
            if self.stopped():
                return
            here = Path(folder)
            depth = len(here.relative_to(self.root).parts)
            keep = [] if self.max_depth is not None and depth + 1 >= self.max_depth else dirs
            dirs[:] = sorted(d for d in keep if d not in SKIP_DIRS and self.visible(here / d))
            for name in sorted(names):
                path = here / name
                if self.visible(path) and os.path.isfile(path):
                    yield path
                    if self.stopped():  # what was done with it took the time left
                        return

    def note(self, found: int, cap: int, noun: str) -> str:
        if self.timed_out:
            return f"\n... stopped after {SEARCH_SECONDS:g} s ({found} {noun} so far)"
        return f"\n... stopped at {cap} {noun}" if found >= cap else ""


class Builtins:
    """The built-in tools, bound to one workspace."""

    def __init__(self, workspace: Workspace | None = None) -> None:
        self.workspace = workspace or Workspace()

    def tools(self, names: list[str]) -> list[Tool]:
        tools = []
        for name in names:
            tool = define_tool(getattr(self, name))
            tool.source = "builtin"
            if name == "bash":
                tool.description += " " + self.workspace.sandbox.for_model()
            tools.append(tool)
        return tools

    @guarded
    def read_file(
        self, path: str, offset: int = 1, limit: int = MAX_LINES, *, context: ToolContext
    ) -> str:
        """Read a text file, numbering its lines.

        Args:
            path: the file to read.
            offset: the first line to show (1-based).
            limit: how many lines to show at most.
        """
        _, fd = self.workspace.open(path, context, action="read")
        with os.fdopen(fd, "rb") as handle:
            if b"\0" in handle.read(8192):
                raise ValueError(f"{path} looks like a binary file")
            handle.seek(0)
            return _numbered_lines(handle, max(1, offset), max(0, limit))

    @guarded
    def list_dir(self, path: str = ".", *, context: ToolContext) -> str:
        """List a directory: sub-directories end in '/'.

        Args:
            path: the directory to list.
        """
        _, fd = self.workspace.open(
            path, context, action="list", flags=os.O_RDONLY | os.O_DIRECTORY
        )
        try:
            entries = sorted(os.scandir(fd), key=lambda e: e.name)
            names = [e.name + ("/" if e.is_dir() else "") for e in entries[:MAX_ENTRIES]]
        finally:
            os.close(fd)
        more = len(entries) - len(names)
        return "\n".join(names) + (f"\n... {more} more entries" if more > 0 else "")

    @guarded
    def glob(self, pattern: str, path: str = ".", *, context: ToolContext) -> str:
        """Find files whose path matches a glob pattern such as '**/*.py'.

        Args:
            pattern: the glob pattern, relative to path.
            path: the directory to search from.
        """
        root = self.workspace.permit(path, context, action="search")
        regex = glob_regex(pattern)
        depth = None if "**" in pattern else pattern.count("/") + 1
        search = FileSearch(self.workspace, root, depth, context.cancelled)
        found: list[str] = []
        for file in search.files():
            relative = file.relative_to(root).as_posix()
            if regex.match(relative):
                found.append(relative)
                if len(found) >= MAX_ENTRIES:
                    break
        if not found and not search.timed_out:
            return "no matches"
        return "\n".join(sorted(found)) + search.note(len(found), MAX_ENTRIES, "files")

    @guarded
    def grep(
        self, pattern: str, path: str = ".", glob: str = "**/*", *, context: ToolContext
    ) -> str:
        """Search file contents with a regular expression; prints file:line: text.

        Args:
            pattern: a regular expression in RE2 syntax (no backreferences or lookaround).
            path: a file or directory to search.
            glob: which files under path to search.
        """
        regex = line_regex(pattern)
        root = self.workspace.permit(path, context, action="search")
        depth = None if "**" in glob else glob.count("/") + 1
        search = FileSearch(self.workspace, root, depth, context.cancelled)
        if root.is_file():
            files: Iterator[Path] = iter([root])
        else:
            wanted = glob_regex(glob)
            files = (f for f in search.files() if wanted.match(f.relative_to(root).as_posix()))
        matches: list[str] = []
        for file in files:
            for number, line in matching_lines(regex, _text_of(self.workspace, file)):
                matches.append(f"{file}:{number}: {line.strip()[:300]}")
                if len(matches) >= MAX_MATCHES:
                    return "\n".join(matches) + search.note(MAX_MATCHES, MAX_MATCHES, "matches")
        if not matches and not search.timed_out:
            return "no matches"
        return "\n".join(matches) + search.note(len(matches), MAX_MATCHES, "matches")

    @guarded
    def write_file(self, path: str, content: str, *, context: ToolContext) -> ToolResult:
        """Create or overwrite a file with the given content.

        Args:
            path: the file to write; missing directories are created.
            content: the whole new content.
        """
        workspace = self.workspace
        target = workspace.permit(path, context, action="write")
        made = workspace.make_folders(target.parent)
        fd, before = workspace.open_to_write(target, context)
        data = content.encode()
        with os.fdopen(fd, "wb") as handle:
            handle.truncate(0)
            handle.write(data)
        return ToolResult(
            f"wrote {len(data)} bytes to {target}",
            changes=workspace.after_change(target, before, "write_file", made),
        )

    @guarded
    def edit_file(self, path: str, old: str, new: str, *, context: ToolContext) -> ToolResult:
        """Replace one exact occurrence of `old` with `new` in a file.

        Args:
            path: the file to edit.
            old: the exact text to replace; it must occur exactly once.
            new: the replacement text.
        """
        target, fd = self.workspace.open(path, context, action="edit", flags=os.O_RDWR)
        before = self.workspace.before_change(target)
        with os.fdopen(fd, "r+b") as handle:  # read and written as one open file
            data = handle.read(MAX_EDIT_BYTES + 1)
            if len(data) > MAX_EDIT_BYTES:
                raise ValueError(f"{target} is over {_kib(MAX_EDIT_BYTES)}: too big to edit here")
            text = data.decode("utf-8")
            count = text.count(old)
            if count != 1:
                where = "does not occur" if count == 0 else f"occurs {count} times"
                raise ValueError(
                    f"the text to replace {where} in {target}; give an exact, unique piece"
                )
            handle.seek(0)
            handle.truncate(0)
            handle.write(text.replace(old, new, 1).encode())
        return ToolResult(
            f"edited {target}", changes=self.workspace.after_change(target, before, "edit_file")
        )

    @guarded
    async def bash(
        self,
        command: str,
        cwd: str | None = None,
        timeout: float = COMMAND_TIMEOUT_S,
        *,
        context: ToolContext,
    ) -> ToolResult | str:
        """Run a shell command with bash; returns its exit code and output (stdout+stderr).

        Args:
            command: the command line.
            cwd: the directory to run it in (default: the workspace root).
            timeout: seconds before the command is killed (default 120).
        """
        workspace = self.workspace
        # models send "" (or blanks) for "no folder in particular", and 0 for "no time
        # limit in particular": neither is a folder or a limit of their own
        where = workspace.resolve(cwd) if cwd and cwd.strip() else workspace.root
        timeout = timeout if timeout > 0 else COMMAND_TIMEOUT_S
        sandbox, leaving = workspace.sandbox, f"outside:{command}"
        rule = workspace.outside.decide(command)
        outside = approved(context, leaving) or rule == "allow"
        if not outside and not sandbox.active:
            if rule == "deny":
                raise Refused(
                    "there is no sandbox here and a rule forbids running this command outside one"
                )
            ask(
                context,
                leaving,
                f"run this command with no sandbox ({sandbox.why_not})?\n{command}",
                needs_person=True,
            )
        argv = ["bash", "-c", command]
        if outside or not sandbox.active:
            before = workspace.before_command()
            ran = await run_command(
                lambda tell: reaped(argv, tell),
                cwd=where,
                env=os.environ,
                timeout=timeout,
                on_output=context.output,
            )
            return _ended(
                _compared(workspace, before, ran.report(timeout), outside=True), ran.ended
            )
        if not workspace.inside(where):
            raise Refused(
                f"cwd {where} is outside the workspace {workspace.root}: a command in the "
                "sandbox runs inside it (leave cwd out, or give a folder in the workspace)"
            )
        held = workspace.take_held(context.call_id)
        if held is not None:  # run again with the person's answer to its review
            return _reviewed(workspace, held, approved(context, _review(context)))
        clash = workspace.take_clash(context.call_id)
        if clash is not None:  # run again with the person's answer about their own edits
            return _settled(workspace, clash, approved(context, _theirs(context)))
        result, ran = await self._in_sandbox(argv, where, timeout, context)
        why = _sandbox_may_be_why(ran)
        if why is None or rule == "deny":
            return result
        try:
            ask_to_leave(context, leaving, command, ran.output, fallback=result.output, why=why)
        except ApprovalNeeded as need:  # what the sandboxed try changed stays journaled
            need.result.changes = result.changes
            _ended(need.result, ran.ended)
            raise
        return result

    async def _in_sandbox(
        self, argv: list[str], where: Path, timeout: float, context: ToolContext
    ) -> tuple[ToolResult, Ran]:
        """Run a command in the sandbox: on an overlay whose changes are applied (or held
        for review), else comparing the workspace before and after."""
        workspace, sandbox = self.workspace, self.workspace.sandbox
        overlay, started = workspace.begin_overlay(context.call_id)
        if overlay is None:
            before = workspace.before_command()
            ran = await run_command(
                lambda tell: sandbox.command(argv, where, tell=tell),
                cwd=where,
                env=sandbox.environment(),
                timeout=timeout,
                on_output=context.output,
            )
            report = _sandbox_report(ran, timeout, sandbox)
            return _ended(_compared(workspace, before, report, outside=False), ran.ended), ran
        review = sandbox.policy.apply == "ask"
        interrupted = cancelled = True
        try:
            ran = await run_command(
                lambda tell: sandbox.command(argv, where, overlay, tell),
                cwd=where,
                env=sandbox.environment(),
                timeout=timeout,
                on_output=context.output,
            )
            interrupted, cancelled = ran.code is None, False
        finally:  # also when the run is cancelled: applied as far as the command got
            if review and interrupted:
                workspace.discard(overlay)  # nobody approved it: nothing applied
            changes, beside = (
                (None, {})
                if review
                else workspace.apply_overlay(overlay, started, interrupted=interrupted)
            )
            if cancelled and changes is not None:  # no result will carry them: held
                workspace.unreported.append((context.call_id, changes))
        report = _sandbox_report(ran, timeout, sandbox)
        if review:
            _ask_to_apply(workspace, context, Held(overlay, started, report, ran.ended))
        changed = _changes_note(workspace, changes, beside) if changes is not None else ""
        result = _ended(ToolResult(report + changed, changes=changes), ran.ended)
        if beside:
            _ask_about_theirs(workspace, context, Clash(beside, result))
        return result, ran

    @guarded
    async def fetch_url(self, url: str, *, context: ToolContext) -> str:
        """Fetch a web page or text file over HTTP(S) and return its text.

        Args:
            url: the address, starting with http:// or https://.
        """
        return await fetch_page(url, self.workspace, context)


def _numbered_lines(handle: BinaryIO, start: int, limit: int) -> str:
    """Lines start.. of a file, numbered, at most `limit` of them and MAX_READ_BYTES."""
    shown: list[str] = []
    used = number = 0
    ended = True  # the last read ended a line
    while True:
        raw = handle.readline(MAX_READ_BYTES + 1)
        if not raw:
            if not shown and start > 1:
                lines = "1 line" if number == 1 else f"{number} lines"
                return f"[offset={start} is past the end: the file has {lines}]"
            return "\n".join(shown)
        rest_of_a_line, ended = not ended, raw.endswith(b"\n")
        if rest_of_a_line:  # of a line longer than one read: numbered already
            continue
        number += 1
        if number < start:
            continue
        if len(shown) >= limit:
            return "\n".join(shown) + _rest_note(handle, raw)
        line = _numbered(number, raw)
        used += len(line.encode()) + 1
        if used > MAX_READ_BYTES:
            if not shown:  # one line longer than the cap: its beginning
                shown.append(_numbered(number, raw[: MAX_READ_BYTES - 100]))
                number += 1
            return "\n".join(shown) + (
                f"\n[truncated: read_file shows at most {_kib(MAX_READ_BYTES)} of text at "
                f"a time; go on with offset={number}]"
            )
        shown.append(line)


def _numbered(number: int, raw: bytes) -> str:
    line = raw.decode("utf-8", "replace").rstrip("\n").rstrip("\r")
    return f"{number:>6}\t{line}"


def _rest_note(handle: BinaryIO, read: bytes) -> str:
    """How many lines are left, from the one whose beginning was just `read`, counted
    only up to a bound (a huge file is not read to its end for this)."""
    rest, tail, budget = read.count(b"\n"), read, 8 * 1024 * 1024
    while budget > 0:
        chunk = handle.read(min(budget, 1 << 20))
        if not chunk:
            rest += 0 if tail.endswith(b"\n") else 1
            return f"\n... {rest} more lines (use offset)"
        rest += chunk.count(b"\n")
        tail, budget = chunk, budget - len(chunk)
    return "\n... more lines follow (use offset)"


def _text_of(workspace: Workspace, file: Path) -> str:
    """The beginning of a text file (MAX_GREP_FILE_BYTES); nothing for a binary,
    unreadable or special file, nor one the workspace would not open or would ask about
    (a secret-looking one)."""
    real = Path(os.path.realpath(file))
    if workspace.looks_secret(real):
        return ""
    try:
        with os.fdopen(workspace.open_path(real, None, action="search"), "rb") as handle:
            data = handle.read(MAX_GREP_FILE_BYTES)
    except (OSError, ApprovalNeeded):
        return ""
    if b"\0" in data[:8192]:
        return ""
    return data.decode("utf-8", "replace")


def _sandbox_report(ran: Ran, timeout: float, sandbox: Sandbox) -> str:
    """What the model reads of a command run in the sandbox."""
    report = ran.report(timeout)
    if ran.refused_something:
        report += (
            f"\n[sandbox: this command ran in a sandbox where {sandbox.limits()}; a "
            '"Permission denied" above may come from it]'
        )
    if _sandbox_may_be_why(ran) == NO_NETWORK:
        report += (
            "\n[sandbox: this command tried to connect over the network, which is off in "
            "the sandbox: it has only a loopback of its own, so servers on the host's "
            "localhost are not reachable from it either; the failure above may come from that]"
        )
    return report


def _sandbox_may_be_why(ran: Ran) -> str | None:
    """Why a command that failed in the sandbox may have failed because of it, in the words
    of the question about leaving it; None if it did not fail, or nothing says so. The
    network is decided by what the sandbox's network namespace counted, never by what the
    command printed."""
    if ran.code == 0:
        return None
    if ran.network_failed:
        return NO_NETWORK
    return FAILED if ran.refused_something else None


def _ended(result: ToolResult, ended: Ended) -> ToolResult:
    """`result`, saying how the command it ran ended: its exit code, or the signal that
    killed it; one killed at its timeout is an error. A question asked after it ran (is
    `result` one) says it too, for the result if the answer is no."""
    result.exit_code, result.signal = ended.exit_code, ended.signal
    result.is_error = result.is_error or ended.timed_out
    req = pending_request(result)
    if req is not None and ended.exit_code is not None:
        req["exit_code"] = ended.exit_code
    if req is not None and ended.signal is not None:
        req["signal"] = ended.signal
    return result


def _compared(
    workspace: Workspace, before: Before | None, report: str, outside: bool
) -> ToolResult:
    """A command's result where its changes were found by comparing (no overlay)."""
    if before is None:
        return ToolResult(report)
    changes = workspace.after_command(before, outside=outside)
    return ToolResult(report + _changes_note(workspace, changes, {}), changes=changes)


def _theirs(context: ToolContext) -> str:
    return f"theirs:{context.call_id}"


def _ask_about_theirs(workspace: Workspace, context: ToolContext, clash: Clash) -> None:
    """The person changed files while the command wrote them too: theirs were kept and the
    command's put beside them. Ask whether the command's should replace theirs (only a
    person answers; without one, both stay and the model has been told)."""
    workspace.keep_clash(context.call_id, clash)
    shown = []
    for path, name in clash.beside.items():
        shown.append(f"you changed {path} while the command wrote it too:")
        shown += workspace.compare(path, name)
    try:
        ask(
            context,
            _theirs(context),
            "replace your version with the command's? (no: yours stays, the command's is "
            "kept beside it)\n" + "\n".join(shown),
            needs_person=True,
            fallback=clash.result.output,
        )
    except ApprovalNeeded as need:  # what the command changed stays journaled
        need.result.changes = clash.result.changes
        raise


def _settled(workspace: Workspace, clash: Clash, yes: bool) -> ToolResult:
    if not yes:
        return clash.result
    changes = workspace.take_theirs_over(clash.beside)
    moved = ", ".join(clash.beside)
    return dataclasses.replace(
        clash.result,
        output=f"{clash.result.output}\n[the user chose this command's version of {moved}]",
        changes=changes,
    )


def _review(context: ToolContext) -> str:
    return f"apply:{context.call_id}"


def _ask_to_apply(workspace: Workspace, context: ToolContext, held: Held) -> None:
    """Review: show what the command changed and apply it only after a yes (the call runs
    again with the answer; see _reviewed). Nothing changed: nothing to ask."""
    preview = workspace.preview(held.overlay, held.started)
    if not preview.changes.changes:
        workspace.discard(held.overlay)
        return
    workspace.hold(context.call_id, held)
    names = ", ".join(c.path for c in _files(preview.changes))
    ask(
        context,
        _review(context),
        f"apply what this command changed in the workspace ({preview.changes.summary()})?\n"
        + "\n".join(preview.diff),
        fallback=f"{held.report}\n[not applied: the user did not approve what this command "
        f"changed ({names}); the workspace is as it was before it]",
    )


def _reviewed(workspace: Workspace, held: Held, yes: bool) -> ToolResult:
    if not yes:
        workspace.discard(held.overlay)
        result = ToolResult(f"{held.report}\n[not applied: the user did not approve it]")
        return _ended(result, held.ended)
    changes, beside = workspace.apply_overlay(held.overlay, held.started, interrupted=False)
    result = ToolResult(held.report + _changes_note(workspace, changes, beside), changes=changes)
    return _ended(result, held.ended)


def _files(changes: ChangeSet) -> list[FileChange]:
    return [c for c in changes.changes if "dir" not in (c.before.kind, c.after.kind)]


def _changes_note(workspace: Workspace, changes: ChangeSet, beside: dict[str, str]) -> str:
    """What the model reads of the files a command changed (nothing if none): each file,
    but a tree of other programs' making (`.git/`, `node_modules/`) as one line."""
    files = _files(changes)
    unkept = {c.path for c in files if not workspace.kept(c)}
    partial = (
        ""
        if changes.complete
        else "\n[the workspace is too big to compare whole: changes beyond what was seen are "
        "not recorded, and cannot be undone]"
    )
    if not files:
        return partial
    named: list[FileChange] = []
    trees: dict[str, int] = {}
    for change in files:
        tree = next((p for p in change.path.split("/")[:-1] if p in NOT_LISTED), None)
        if tree is not None:
            top = change.path[: change.path.index(tree) + len(tree)]
            trees[top] = trees.get(top, 0) + 1
        else:
            named.append(change)
    names = [_named(workspace, c, c.path in unkept) for c in named[:MAX_NAMED_CHANGES]]
    names += [f"{top}/ ({count} files)" for top, count in trees.items()]
    shown = names[:MAX_NAMED_CHANGES]
    hidden = len(named) + len(trees) - len(shown)
    more = f" and {hidden} more" if hidden else ""
    kept = "".join(
        f"\n[{path} was changed by the user while this command ran: kept theirs; this "
        f"command's version is {name}]"
        for path, name in beside.items()
    )
    return f"\n[files changed: {changes.summary()}: {', '.join(shown)}{more}]{kept}{partial}"


def _named(workspace: Workspace, change: FileChange, unkept: bool) -> str:
    """`src/app.py +3 -1 (runs later)`: a file, with the lines it gained and lost when
    its contents are at hand ("binary" for a binary one)."""
    journal = workspace.journal
    counts = line_counts(journal.blobs, change) if journal is not None else ""
    lines = f" {counts}" if counts else ""
    later = " (runs later)" if runs_later(change) else ""
    big = " (too big to keep: not undoable)" if unkept else ""
    return f"{change.path}{MARKS[change.action]}{lines}{later}{big}"


MARKS = {"created": " (new)", "modified": "", "deleted": " (deleted)"}
MAX_NAMED_CHANGES = 20


CHANGING = ("write_file", "edit_file", "bash")
ALL = ("read_file", "list_dir", "glob", "grep", "fetch_url", "write_file", "edit_file", "bash")


def builtin_tools(which: bool | list[str], workspace: Workspace | None = None) -> list[Tool]:
    names: list[str] = list(ALL) if which is True else list(which or [])
    unknown = [n for n in names if n not in ALL]
    if unknown:
        raise ValueError(f"unknown built-in tool {unknown[0]!r}: choose from {', '.join(ALL)}")
    return Builtins(workspace).tools(names)
