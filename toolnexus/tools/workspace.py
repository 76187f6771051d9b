"""The workspace: what the built-in tools may touch without asking.

File tools act inside one root folder. A path is resolved (`~`, `..`, symlinks) before it is
judged, so a `notes.txt` that links to `~/.bashrc` is judged as `~/.bashrc`:

- a special file (FIFO, device, socket) is refused;
- a secret (keys, credentials, `/proc/*/environ`...; secret_files.py) is refused unless a
  path rule without wildcards names it: no approval, not even `--yes`, opens one;
- a file that only looks secret (`.env`, `*.pem`, `id_*`, `.npmrc`, a `.git/config` with a
  token, a name the application adds: SecretNames) asks inside the root, and only a person
  answers that, never `--yes`;
- a path outside the root asks first, unless a path rule allows (or denies) it; only a
  person answers unless a sandboxed command could reach it too (the system folders, the
  toolchains in the home folder, the sandbox's own folders: _command_reach.py).

Then what is opened is judged, not the path text: the file is opened without following a
symlink in any part of its path (one swapped in meanwhile makes the open fail), and the open
file is refused if it is a known secret under another name (its inode), has other names
(hard links) that cannot be checked, or belongs to another user.

`fetch_url` is judged by address: every host asks once per session (the first fetch of it)
unless a host rule decides, and only a person answers that; a host that resolves to a
loopback, private, link-local or otherwise non-public address says so when it asks.

Commands (`bash`) run in the workspace's Sandbox (sandbox.py); `outside` rules say which
may run outside it without asking.

Asking goes through suspension (suspension.py): the tool returns an approval request and
is run again with the person's answer, so a host's `wait_for` (a terminal prompt, `--yes`,
nobody) decides, and the request names the resolved path or address.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fnmatch
import hashlib
import ipaddress
import os
import stat
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from ..journal import _apply as journal_apply
from ..journal._pending import Pending, write_pending
from ..journal._snapshot import Before, Snapshots
from ..journal.changes import (
    ABSENT,
    REGENERATED,
    ChangeSet,
    FileChange,
    FileState,
    folder_states,
    runs_later,
    state_of,
    with_folder_times,
)
from ..journal.diffs import diff_lines
from ..journal.records import Journal
from ._command_reach import CommandReach
from ._command_rules import CommandRules
from ._command_run import Ended
from ._sandbox_view import Overlay
from ._secret_scan import SecretFiles
from .rules import checked_rules, has_wildcard
from .sandbox import Sandbox, SandboxPolicy
from .secret_files import KnownSecrets, SecretNames, holds_credentials, is_git_config, within
from .suspension import suspend
from .tool import ToolContext, ToolResult

__all__ = [
    "ApprovalNeeded",
    "Held",
    "Refused",
    "Workspace",
    "approved",
    "ask",
    "holds_home",
]

MAX_GIT_CONFIG = 1024 * 1024  # bytes of a .git/config read to look for credentials
_SEARCH = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


MAX_PREVIEW_LINES = 400  # of a review's diff (the question shows its start and its end)


class Held(NamedTuple):
    """A command's changes, awaiting review: its overlay, when it started, what the model
    reads of it and how it ended."""

    overlay: Overlay
    started: int
    report: str
    ended: Ended


class Clash(NamedTuple):
    """Files the person changed while a command wrote them too: path -> the name the
    command's version was kept under, and what the model read of the call."""

    beside: dict[str, str]
    result: ToolResult


class Preview(NamedTuple):
    changes: ChangeSet
    diff: list[str]


def _bytes(path: Path, state: FileState) -> bytes | None:
    """A file's content for a diff (None: none; a link's target)."""
    if state.kind == "symlink":
        return os.readlink(path).encode()
    if state.kind != "file":
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_DIFF_READ)
    except OSError:
        return None


MAX_DIFF_READ = 256 * 1024 + 1


class Refused(PermissionError):
    """A tool may not touch this; the message says why (the model reads it)."""


class ApprovalNeeded(Exception):  # noqa: N818 - not an error: a question for a person
    """Raised inside a built-in tool that must ask first; `result` is what the tool returns
    instead (see builtins.guarded): the suspension that asks, or what the model reads when
    it may not ask again (_leaving.py)."""

    def __init__(self, result: ToolResult) -> None:
        super().__init__(result.output)
        self.result = result


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def holds_home(folder: str | Path) -> bool:
    """Whether `folder` is the home folder or a folder holding it (`/`, `/home`), by their
    real paths: a workspace there would hand the tools every key and secret the user
    keeps. The home is `~` ($HOME); a folder inside it does not hold it."""
    return within(_real(Path.home()), _real(folder))


def open_beneath(path: Path, flags: int, mode: int = 0o666) -> int:
    """Open the resolved `path` without following a symlink in any part of it: a link
    swapped in after the path was resolved (and judged) makes this fail, never leads
    elsewhere."""
    folder = os.open("/", _SEARCH)
    try:
        for name in path.parts[1:-1]:
            inner = _open_step(name, _SEARCH, folder, path)
            os.close(folder)
            folder = inner
        return _open_step(
            path.name or ".", flags | os.O_NOFOLLOW | os.O_CLOEXEC, folder, path, mode
        )
    finally:
        os.close(folder)


def _folder(path: Path) -> IsADirectoryError:
    return IsADirectoryError(f"{path} is a folder, not a file: list_dir shows what it holds")


def _open_step(name: str, flags: int, folder: int, path: Path, mode: int = 0o666) -> int:
    try:
        return os.open(name, flags, mode, dir_fd=folder)
    except OSError as exc:
        # a symlink where a folder was (ENOTDIR with O_DIRECTORY) or at the end (ELOOP)
        link = exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and name != path.name)
        if link:
            raise Refused(
                f"{path} changed while it was being opened (a link appeared in "
                "its path): not opened"
            ) from None
        raise


class Making(NamedTuple):
    """The folders a write made for its file (outermost first), and the folder holding the
    first of them (or the file), with its state before: a new entry moves its time."""

    holder: Path
    holder_before: FileState
    folders: tuple[Path, ...]


class Workspace:
    """The root the file tools work in, the secrets they never read, the path and host
    rules ("allow" / "ask" / "deny") that decide what lies outside, and the sandbox its
    commands run in.

    `secrets`: more files or folders that hold secrets (an application's own keys file
    and config folder). `secret_names`: more patterns of names that look secret (see
    SecretNames; `secret_files` lists the root's files with such names). `paths`: glob
    patterns on resolved paths (`~` allowed; `*` also matches across folders). `hosts`:
    glob patterns on `host` or `host:port`, in any case (an IPv6 address in brackets:
    `[::1]:8080`). `sandbox`: how commands are confined (default: writes only in the
    workspace, no network); what they reach besides the workspace is also what a blanket
    yes opens for the file tools (`reach`). `outside`: rules on bash commands that may
    run outside the sandbox ("allow": without asking; "deny": never offered).
    """

    def __init__(
        self,
        root: str | Path | None = None,
        *,
        secrets: Iterable[str | Path] = (),
        secret_names: Iterable[str] = (),
        paths: Mapping[str, str] | None = None,
        hosts: Mapping[str, str] | None = None,
        sandbox: SandboxPolicy | None = None,
        outside: Mapping[str, str] | None = None,
        journal: Journal | None = None,
    ) -> None:
        self.root = _real(root if root is not None else os.getcwd())
        self.secrets = KnownSecrets([_real(p) for p in secrets])
        self.secret_names = SecretNames(secret_names)
        self.secret_files = SecretFiles(self.root, self.secret_names, known=self.secrets)
        self.path_rules = [(str(_real(p)), d) for p, d in checked_rules(paths, "path rule")]
        self.host_rules = [(_host_glob(p), d) for p, d in checked_rules(hosts, "host rule")]
        self.sandbox = Sandbox(
            sandbox, [self.root], self.secrets.places, workspace_secrets=self.masked_secrets
        )
        self.reach = CommandReach(sandbox or SandboxPolicy(), self.secrets.home)
        self.outside = CommandRules(outside, "rule on leaving the sandbox", "approval.outside")
        self._applying = threading.Lock()  # one command's changes applied at a time
        self.journal = journal  # where the contents a change replaces are kept, if anywhere
        self._held: dict[str, Held] = {}  # commands' changes awaiting a person's review
        self._clashes: dict[str, Clash] = {}  # the person's edits a command wrote over too
        # what calls stopped by a cancel changed: no result carries it, the host records it
        self.unreported: list[tuple[str, ChangeSet]] = []
        self._snapshots = Snapshots(self.root)  # where no overlay sees a command's writes
        # the thread and turn the calls running now belong to (the host says): kept with
        # each overlay, so that a start after a kill journals what its command had changed
        self.turn: tuple[str, int] | None = None
        # what a crash left half applied, finished before anything else: a line each
        self.recovered = journal_apply.recover(
            self.sandbox.overlays_folder(), self._apply_left, self._journal_left
        )
        self.hosts_approved: set[str] = set()  # origins a person allowed this session

    # -- changes -------------------------------------------------------------------------
    def begin_overlay(self, call: str) -> tuple[Overlay | None, int]:
        """A fresh overlay for the command of `call` (None where commands write to the
        workspace directly) and when it starts, with what a start needs should toolnexus
        be killed before the command ends (_pending.py)."""
        overlay, started = self.sandbox.new_overlay(), time.time_ns()
        if overlay is not None:
            thread, turn = self.turn or ("", 0)
            pending = Pending(str(self.root), started, thread, turn, call)
            write_pending(overlay.upper.parent, pending)
        return overlay, started

    def _apply_left(self, folder: Path, pending: Pending) -> str:
        """Apply what the command of an overlay left by a killed toolnexus had written, as
        far as it got, and journal it with its turn; the line that says so."""
        if pending.root != str(self.root):
            journal_apply.finish(folder)
            return f"removed the overlay of a command that never finished ({folder.name})"
        overlay = Overlay(folder / "upper", folder / "work")
        try:
            changes, beside = self.apply_overlay(overlay, pending.started_ns, interrupted=True)
        except OSError as exc:
            return f"cannot apply what an interrupted command changed ({folder}): {exc}"
        self._journal_left(pending, changes)
        of = f"thread {pending.thread}, turn {pending.turn}" if pending.thread else "no thread"
        kept = "".join(f"; {path} kept as {name} (yours is newer)" for path, name in beside.items())
        return (
            "applied what a command interrupted when toolnexus stopped had changed: "
            f"{changes.summary() or 'nothing'} ({of}){kept}"
        )

    def apply_overlay(
        self, overlay: Overlay, started_ns: int, *, interrupted: bool
    ) -> tuple[ChangeSet, dict[str, str]]:
        """Apply what a command wrote into `overlay` (started at `started_ns`) to the
        workspace, one command at a time; what it changed, and the files kept beside the
        person's own newer version (path -> the name the command's version got)."""
        with self._applying:
            found = journal_apply.plan(overlay.upper, self.root, "bash", started_ns=started_ns)
            batch = self.journal.blobs.batch() if self.journal else contextlib.nullcontext()
            with batch:  # every content durable before the first rename
                for change in found.changes.changes:
                    self.keep(self.root / change.path, change.before)
                    self.keep(overlay.upper / change.path, change.after, name=change.path)
            folders = folder_states(self.root, (c.path for c in found.changes.changes))
            found = found._replace(changes=found.changes._replace(interrupted=interrupted))
            journal_apply.apply(found, overlay.upper, self.root, overlay.upper.parent)
            changes = with_folder_times(found.changes, self.root, folders)
        return changes, found.beside

    def _journal_left(self, pending: Pending, changes: ChangeSet) -> None:
        """Journal what a call a killed toolnexus left changed, with its thread and turn."""
        if self.journal is not None and pending.thread and changes.changes:
            if pending.root == str(self.root):
                self.journal.record(pending.thread, pending.turn, pending.call, self.root, changes)

    @property
    def reviewing(self) -> bool:
        """Whether a command's changes wait for a person's yes before they apply."""
        return self.sandbox.policy.apply == "ask"

    def review(self, on: bool) -> None:
        """Review commands' changes before they apply (or no longer)."""
        self.sandbox.policy = dataclasses.replace(
            self.sandbox.policy, apply="ask" if on else "auto"
        )

    def before_command(self) -> Before | None:
        """Where no overlay will see what a command writes (the fallback, or outside the
        sandbox): the workspace's files now, their contents kept (None without a journal)."""
        if self.journal is None:
            return None
        with self._applying:
            return self._snapshots.before(self.keep)

    def after_command(self, before: Before, *, outside: bool) -> ChangeSet:
        """What the command changed since `before`, its new contents kept."""
        with self._applying:
            return self._snapshots.changes(before, "bash", self.keep, outside=outside)

    def preview(self, overlay: Overlay, started_ns: int) -> Preview:
        """What a command wrote into `overlay`, not applied: its change set and a diff."""
        found = journal_apply.plan(overlay.upper, self.root, "bash", started_ns=started_ns)
        diff: list[str] = []
        for change in found.changes.changes:
            if "dir" in (change.before.kind, change.after.kind):
                continue
            if runs_later(change):
                diff.append(f"{change.path}: runs later (a build, test or install runs it)")
            before = _bytes(self.root / change.path, change.before)
            after = _bytes(overlay.upper / change.path, change.after)
            diff += diff_lines(change.path, before, after)
        return Preview(found.changes, diff[:MAX_PREVIEW_LINES])

    def hold(self, call: str, held: Held) -> None:
        """Keep a command's overlay until the person answers its review."""
        journal_apply.mark_held(held.overlay.upper.parent)
        self._held[call] = held

    def take_held(self, call: str) -> Held | None:
        return self._held.pop(call, None)

    def keep_clash(self, call: str, clash: Clash) -> None:
        self._clashes[call] = clash

    def take_clash(self, call: str) -> Clash | None:
        return self._clashes.pop(call, None)

    def compare(self, path: str, beside: str) -> list[str]:
        """The person's version of `path` against the command's, kept as `beside`."""
        parent = Path(path).parent
        theirs, command = self.root / path, self.root / parent / beside
        return diff_lines(
            path,
            _bytes(theirs, state_of(theirs)),
            _bytes(command, state_of(command)),
        )

    def take_theirs_over(self, beside: dict[str, str]) -> ChangeSet:
        """Put each command's version (kept beside) in place of the person's; the change
        set of that (journaled like any other)."""
        changes: list[FileChange] = []
        with self._applying:
            for path, name in beside.items():
                target = self.root / path
                kept = target.parent / name
                before, moved = state_of(target), state_of(kept)
                self.keep(target, before)
                os.replace(kept, target)
                changes.append(FileChange(path, before, state_of(target)))
                changes.append(FileChange(kept.relative_to(self.root).as_posix(), moved, ABSENT))
        return ChangeSet(tuple(changes), "bash")

    def discard(self, overlay: Overlay) -> None:
        """Throw a command's overlay away: none of its changes reach the workspace."""
        journal_apply.finish(overlay.upper.parent)

    def before_change(self, target: Path) -> FileState | None:
        """A file tool is about to change `target`: its state, its content kept (None
        outside the workspace, whose changes are not journaled)."""
        if not self.inside(target):
            return None
        state = state_of(target)
        self.keep(target, state)
        return state

    def make_folders(self, folder: Path) -> Making:
        """Make `folder` and whatever folders above it are missing (a write's change set
        holds them, so that a rewind removes them too)."""
        missing = []
        while not os.path.lexists(folder):
            missing.append(folder)
            folder = folder.parent
        making = Making(folder, state_of(folder), tuple(reversed(missing)))
        for made in making.folders:
            made.mkdir(exist_ok=True)
        return making

    def open_to_write(
        self, target: Path, context: ToolContext | None
    ) -> tuple[int, FileState | None]:
        """`target` opened to be written (made if missing), and its state before: ABSENT
        when this open made it, so that a rewind removes it rather than leave it empty
        (None outside the workspace, whose changes are not journaled)."""
        created = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        try:
            fd = self.open_path(target, context, action="write", flags=created)
        except FileExistsError:
            fd = self.open_path(target, context, action="write", flags=os.O_WRONLY)
            return fd, self.before_change(target)
        return fd, ABSENT if self.inside(target) else None

    def after_change(
        self,
        target: Path,
        before: FileState | None,
        source: str,
        making: Making | None = None,
    ) -> ChangeSet | None:
        """What the file tool `source` changed at `target`, with the folders `making` made
        for it and the time of the folder holding them (None if nothing, or outside)."""
        if before is None:
            return None
        after = state_of(target)
        if after.same_as(before):
            return None
        self.keep(target, after)
        changes = [
            FileChange(self._relative(folder), ABSENT, state_of(folder))
            for folder in (making.folders if making else ())
            if self.inside(folder)
        ]
        changes.append(FileChange(self._relative(target), before, after))
        change_set = ChangeSet(tuple(changes), source)
        if making is None or making.holder == self.root or not self.inside(making.holder):
            return change_set
        holder = {self._relative(making.holder): making.holder_before}
        return with_folder_times(change_set, self.root, holder)

    def _relative(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def keep(self, path: Path, state: FileState, *, name: str | None = None) -> None:
        """Keep the content `path` holds in `state` in the journal, so the change can be
        undone or redone. A secret-looking file (by `name`, default the path's) is journaled
        by its hash alone, never by content; so is one in a tree its tools regenerate
        (`node_modules`, `.venv`, `target`...: "changed, not kept")."""
        if self.journal is None or state.kind not in ("file", "symlink"):
            return
        named = Path(name) if name is not None else path
        if self.looks_secret(named) or not REGENERATED.isdisjoint(named.parts[:-1]):
            return
        self.journal.blobs.keep(path, state)

    def kept(self, change: FileChange) -> bool:
        """Whether the journal can undo and redo `change`: the contents it needs are kept,
        or by design not (a secret-looking file, a regenerated tree), or there is none."""
        if self.journal is None:
            return True
        path = Path(change.path)
        if self.looks_secret(path) or not REGENERATED.isdisjoint(path.parts[:-1]):
            return True
        return all(
            state.kind not in ("file", "symlink") or self.journal.blobs.has(state.digest)
            for state in (change.before, change.after)
        )

    # -- paths ---------------------------------------------------------------------------
    def resolve(self, path: str | Path) -> Path:
        """`path` as the system will open it: `~` expanded, relative to the root,
        `..` and every symlink resolved."""
        given = Path(os.path.expanduser(str(path)))
        return Path(os.path.realpath(given if given.is_absolute() else self.root / given))

    def inside(self, path: Path) -> bool:
        return within(path, self.root)

    def is_secret(self, path: Path) -> bool:
        """A secret no approval opens: in a secret place, or a secret-looking name outside
        the workspace."""
        return self.secrets.holds(path) or (self.looks_secret(path) and not self.inside(path))

    def looks_secret(self, path: Path) -> bool:
        """Whether the name of `path` says it holds secrets (SecretNames)."""
        return self.secret_names.matches(path)

    def masked_secrets(self) -> list[Path]:
        """The secret-looking files in the workspace a command must not read: all but those
        an [approval.paths] rule allows."""
        listed = self.secret_files.listing().files
        return [path for path in listed if self.path_rule(_real(path)) != "allow"]

    def path_rule(self, path: Path) -> str | None:
        text = str(path)
        for pattern, decision in self.path_rules:
            if fnmatch.fnmatchcase(text, pattern) or within(path, Path(pattern)):
                return decision
        return None

    def secret_allowed(self, path: Path) -> bool:
        """A secret opens only by an "allow" rule without wildcards that names it or a
        folder holding it which is itself secret (`~/.aws`, not `~`)."""
        for pattern, decision in self.path_rules:
            if decision != "allow" or has_wildcard(pattern):
                continue
            named = Path(pattern)
            if path == named or (within(path, named) and self.is_secret(named)):
                return True
        return False

    def refusal(self, path: Path) -> str | None:
        """Why `path` may not be touched at all (no approval opens it), or None."""
        if self.is_secret(path) and not self.secret_allowed(path):
            return (
                f"{path} holds secrets: no tool may read or change it (a path rule "
                "naming it exactly is the only way to allow it)"
            )
        if self.path_rule(path) == "deny":
            return f"{path} is denied by a path rule"
        try:
            mode = os.stat(path).st_mode
        except OSError:
            return None  # a missing file fails on its own, with its own message
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return f"{path} is a special file (a device, FIFO or socket): tools read only files"
        return None

    def permit(self, given: str, context: ToolContext | None, *, action: str) -> Path:
        """The resolved path a tool may `action` ("read", "write", ...), or Refused, or
        ApprovalNeeded when it lies outside the root and no rule decides (or an "ask"
        rule names it, or it looks like it holds secrets): only a person answers unless
        a sandboxed command could `action` it too (_command_reach.py)."""
        path = self.resolve(given)
        why = self.refusal(path)
        if why:
            raise Refused(why)
        shown = given if str(path) == given else f"{given} (which is {path})"
        if action != "write" and self.looks_secret(path) and not self.secret_allowed(path):
            _ask_about_secret(context, path, f"{action} {shown}? Its name says it holds secrets")
        rule = self.path_rule(path)
        if rule == "allow" or (self.inside(path) and rule != "ask"):
            return path
        why = (
            "? (a path rule asks first)"
            if rule == "ask"
            else f", outside the workspace {self.root}?"
        )
        person = not (self.inside(path) or self.reach.covers(path, action))
        ask(context, f"path:{path}", f"{action} {shown}{why}", needs_person=person)
        return path

    def open(
        self, given: str, context: ToolContext | None, *, action: str, flags: int = os.O_RDONLY
    ) -> tuple[Path, int]:
        """The resolved path a tool may `action` and a descriptor of it opened with
        `flags`: Refused or ApprovalNeeded as `permit` and `open_path` say."""
        path = self.permit(given, context, action=action)
        return path, self.open_path(path, context, action=action, flags=flags)

    def open_path(
        self, path: Path, context: ToolContext | None, *, action: str, flags: int = os.O_RDONLY
    ) -> int:
        """A descriptor of the permitted, resolved `path`, opened with no symlink followed
        and judged as opened (`judge_opened`); a `.git/config` holding a token asks. A
        folder is opened only with O_DIRECTORY in `flags`."""
        try:
            fd = open_beneath(path, flags | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        except IsADirectoryError:  # opened to write
            raise _folder(path) from None
        try:
            self.judge_opened(path, fd)
            if stat.S_ISDIR(os.fstat(fd).st_mode) and not flags & os.O_DIRECTORY:
                raise _folder(path)
            if action != "write" and is_git_config(path) and not self.secret_allowed(path):
                if holds_credentials(os.pread(fd, MAX_GIT_CONFIG, 0).decode("utf-8", "replace")):
                    _ask_about_secret(
                        context, path, f"{action} {path}? It holds a password or a token"
                    )
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def judge_opened(self, path: Path, fd: int) -> None:
        """Refused if the open file (or folder) is a known secret under another name, a
        file with other names (hard links) that cannot be checked, one that belongs to
        another user, or not a plain file or folder."""
        st = os.fstat(fd)
        secret = self.secrets.behind(st)
        if secret is not None and not (secret == path and self.secret_allowed(path)):
            raise Refused(f"{path} is {secret}, which holds secrets: no tool may read or change it")
        if stat.S_ISDIR(st.st_mode):
            return
        if not stat.S_ISREG(st.st_mode):
            raise Refused(
                f"{path} is a special file (a device, FIFO or socket): tools read only files"
            )
        if st.st_nlink > 1:
            raise Refused(
                f"{path} has {st.st_nlink} names (hard links) and the others "
                "cannot be checked: no tool opens it (a copy of it can be read)"
            )
        if st.st_uid not in (os.geteuid(), 0):
            raise Refused(f"{path} belongs to another user (uid {st.st_uid}): no tool opens it")

    # -- addresses -----------------------------------------------------------------------
    def host_rule(self, host: str, port: int) -> str | None:
        if ":" in host:  # an IPv6 literal, written in brackets as in a URL
            host = f"[{host}]"
        for pattern, decision in self.host_rules:
            if fnmatch.fnmatchcase(f"{host}:{port}", pattern) or fnmatch.fnmatchcase(host, pattern):
                return decision
        return None

    def permit_address(
        self, origin: str, host: str, port: int, addresses: list[str], context: ToolContext | None
    ) -> None:
        """May a fetch connect to `addresses` (what `host` resolved to)? Refused by a
        deny rule, allowed by an allow rule; otherwise a person is asked: once per origin
        this session for a public one (anything a model read can leave in a URL), each
        call for one that is not public."""
        rule = self.host_rule(host.lower(), port)
        if rule == "deny":
            raise Refused(f"{host} is denied by a host rule")
        if rule == "allow":
            return
        private = [a for a in addresses if not is_public(a)]
        if private:  # asked each time: the name may resolve elsewhere next time
            where = host if private == [host] else f"{host} ({', '.join(private)})"
            ask(
                context,
                f"origin:{origin}",
                f"fetch {origin}? {where} is not a public "
                "address (loopback, private network or link-local)",
                needs_person=True,
            )
            return
        if origin in self.hosts_approved:
            return
        why = (
            "a host rule asks first"
            if rule == "ask"
            else "the first fetch from this host; yes holds for the session"
        )
        ask(context, f"origin:{origin}", f"fetch {origin}? ({why})", needs_person=True)
        self.hosts_approved.add(origin)


def _host_glob(pattern: str) -> str:
    """A host rule as a lowercase glob; the opening bracket of an IPv6 literal (`[::1]:8080`)
    is itself, not the start of a character class."""
    pattern = pattern.lower()
    return "[[]" + pattern[1:] if pattern.startswith("[") else pattern


def is_public(address: str) -> bool:
    """A globally routable address: not loopback, private, link-local (cloud metadata
    lives there), shared, reserved or unspecified; IPv4 inside IPv6 is judged as IPv4."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour
        if any(ip in network for network in _LAST_32_BITS_IPV4):
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            return is_public(str(embedded))
        if any(ip in network for network in _LOCAL_IPV6):
            return False
    return ip.is_global and not ip.is_multicast


# NAT64, IPv4-compatible (deprecated) and IPv4-translated (SIIT) addresses
_LAST_32_BITS_IPV4 = tuple(map(ipaddress.ip_network, ("64:ff9b::/96", "::/96", "::ffff:0:0:0/96")))
# Local-use NAT64 (translated to whatever the local network chooses) and the old site-local
# private networks, which the standard library counts as global.
_LOCAL_IPV6 = tuple(map(ipaddress.ip_network, ("64:ff9b:1::/48", "fec0::/10")))


def request_id(context: ToolContext | None, subject: str) -> str:
    """The same call asking about the same thing gets the same id, so its re-run can tell
    the answer is for exactly this (a symlink changed meanwhile asks again)."""
    call = context.call_id if context else ""
    return "req_" + hashlib.sha256(f"{call}\0{subject}".encode()).hexdigest()[:16]


def approved(context: ToolContext | None, subject: str) -> bool:
    answer: Any = context.answer if context else None
    return (
        isinstance(answer, dict)
        and bool(answer.get("ok"))
        and answer.get("id") == request_id(context, subject)
    )


def ask(
    context: ToolContext | None,
    subject: str,
    prompt: str,
    *,
    needs_person: bool = False,
    fallback: str | None = None,
    data: Any = None,
) -> None:
    """Go on if the person already said yes to `subject` in this call, else ask.
    `needs_person`: a blanket yes (`--yes`) does not answer it. `fallback`: what the model
    reads if the answer is no. `data`: what the question is about, for a host to show."""
    if not approved(context, subject):
        raise ApprovalNeeded(
            suspend(
                "approval",
                prompt,
                id=request_id(context, subject),
                needs_person=needs_person,
                fallback=fallback,
                data=data,
            )
        )


def _ask_about_secret(context: ToolContext | None, path: Path, prompt: str) -> None:
    ask(context, f"secret:{path}", f"{prompt}; --yes does not answer this", needs_person=True)
