"""Undoing recorded change sets on a workspace folder. `plan_rewind` says, for every path the
change sets touched, what it is now, what it becomes (its state before the first of them) and
what stands in the way; `apply_rewind` checks all of that again, changes nothing unless every
check passes, then puts each path back and returns the ChangeSet of what it did, which a redo
rewinds. A path changed since, outside toolnexus, is overwritten only when asked, its version
kept beside it first (`NAME.toolnexus-N`) when asked too; or left out of the plan (`without`).
The rewind never looks or writes through a symlink: a path beneath one is refused."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from toolnexus._visible import unmistakable
from toolnexus.errors import ToolnexusError
from toolnexus.journal._apply import _free_name
from toolnexus.journal._blobs import Blobs
from toolnexus.journal._tree import TreeView, checked_path, parent_of
from toolnexus.journal.changes import (
    ABSENT,
    ChangeSet,
    FileChange,
    FileState,
    regenerated,
    state_of,
    version_control,
)

__all__ = [
    "Blocked",
    "RewindConflict",
    "RewindInterrupted",
    "RewindPlan",
    "Step",
    "apply_rewind",
    "beside_names",
    "plan_rewind",
    "version_control_words",
]


class RewindConflict(ToolnexusError):
    """The rewind would lose something or cannot be done; `path` is the first such path."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class RewindInterrupted(ToolnexusError):
    """The workspace refused a change halfway; `change_set` is what the rewind did until
    then (`interrupted` set), to be recorded like a finished one."""

    def __init__(self, message: str, change_set: ChangeSet) -> None:
        super().__init__(message)
        self.change_set = change_set


class Step(NamedTuple):
    """One path: what it is `now`, its `target` (its state before the first change set that
    touched it) and what the last change set `left` there."""

    path: str
    now: FileState
    target: FileState
    left: FileState

    @property
    def conflict(self) -> bool:
        """Changed since the last change set, outside toolnexus (times aside)."""
        return not self.now.same_as(self.left)

    @property
    def needs_content(self) -> bool:
        return self.target.kind in ("file", "symlink") and not self.now.same_as(self.target)

    @property
    def action(self) -> str:
        now, target = self.now.kind, self.target.kind
        if target == "absent":
            return "remove folder" if now == "dir" else "delete"
        if target == "dir":
            return "set folder" if now == "dir" else "make folder"
        if now == "absent":
            return "recreate"
        return "restore" if self.needs_content else "set time"


class Blocked(NamedTuple):
    """A path the rewind cannot get past, whatever is overwritten, and why."""

    path: str
    reason: str


class RewindPlan(NamedTuple):
    """The steps in path order; the paths changed since the last change set (`conflicts`),
    those whose content was not kept (`unavailable`), what blocks the rewind, and the paths
    of regenerated trees left as they are (`skipped`: their contents were not kept)."""

    steps: tuple[Step, ...]
    conflicts: tuple[str, ...]
    unavailable: tuple[str, ...]
    blocked: tuple[Blocked, ...]
    skipped: tuple[str, ...] = ()
    version_control: tuple[str, ...] = ()  # .git's own files, changed but never rewound

    def without(self, paths: Iterable[str]) -> RewindPlan:
        """The plan leaving `paths` as they are (a person chose to keep theirs)."""
        left = frozenset(paths)
        return self._replace(
            steps=tuple(s for s in self.steps if s.path not in left),
            conflicts=tuple(p for p in self.conflicts if p not in left),
            unavailable=tuple(p for p in self.unavailable if p not in left),
        )

    def summary(self) -> list[str]:
        """One line a step, then one a blocked path (what `--dry-run` prints)."""
        lines = []
        for step in self.steps:
            notes = [
                note
                for note, applies in (
                    ("conflict: changed since toolnexus changed it", step.conflict),
                    ("its content was not kept", step.path in self.unavailable),
                )
                if applies
            ]
            said = f"  ({'; '.join(notes)})" if notes else ""
            lines.append(f"{step.action:<13} {unmistakable(step.path)}{said}")
        lines += [f"{'blocked':<13} {unmistakable(b.path)}: {b.reason}" for b in self.blocked]
        lines += [
            f"{'left as is':<13} {unmistakable(path)}  (a regenerated tree: not kept)"
            for path in self.skipped
        ]
        if self.version_control:
            lines.append(f"{'left as is':<13} {version_control_words(self.version_control)}")
        return lines or ["nothing to rewind"]


def version_control_words(paths: tuple[str, ...]) -> str:
    """What a rewind says of the version control files the turns changed."""
    count = "1 file" if len(paths) == 1 else f"{len(paths)} files"
    return (
        f"{count} of git's own (or another version control's): a rewind never touches "
        "HEAD, the index or refs; they may differ from the turn's start (git status shows)"
    )


def plan_rewind(root: Path, change_sets: Sequence[ChangeSet], blobs: Blobs) -> RewindPlan:
    """What rewinding `change_sets` (in the order they were applied) would do to `root`."""
    targets: dict[str, FileState] = {}
    left: dict[str, FileState] = {}
    for change_set in change_sets:
        for change in change_set.changes:
            checked_path(change.path)
            targets.setdefault(change.path, change.before)
            left[change.path] = change.after
    # in a regenerated tree (node_modules...) a content not kept is left as it is, said so
    skipped = tuple(
        path
        for path, target in sorted(targets.items())
        if regenerated(path) and target.kind in ("file", "symlink") and not blobs.has(target.digest)
    )
    # git's HEAD, index and refs are the person's: left as they are, and said so
    untouched = tuple(path for path in sorted(targets) if version_control(path))
    for path in skipped + untouched:
        del targets[path], left[path]
    return _plan(root, targets, left, blobs)._replace(skipped=skipped, version_control=untouched)


def beside_names(root: Path, paths: Iterable[str]) -> dict[str, str]:
    """For each of `paths`, the path a copy of it can take beside it: `NAME.toolnexus-N`,
    the first N free."""
    names = {}
    for path in paths:
        checked_path(path)
        names[path] = f"{parent_of(path)}/{_free_name(root / path)}".lstrip("/")
    return names


def apply_rewind(
    root: Path,
    plan: RewindPlan,
    blobs: Blobs,
    *,
    overwrite: frozenset[str] = frozenset(),
    beside: Mapping[str, str] | None = None,
) -> ChangeSet:
    """Carry out `plan`, overwriting the conflicting paths in `overwrite`, each file of
    `beside` (path -> copy's path, see `beside_names`) copied there first. Raises
    RewindConflict, having changed nothing, when the workspace is no longer as planned or the
    plan cannot be carried out as it stands. The contents it replaces are kept first (when
    they fit), so that rewinding the returned ChangeSet redoes what this undid (the copies
    beside too: a redo puts the person's version back in place)."""
    beside = dict(beside or {})
    for path in (*(step.path for step in plan.steps), *beside, *beside.values()):
        checked_path(path)
    fresh = _plan(
        root, {s.path: s.target for s in plan.steps}, {s.path: s.left for s in plan.steps}, blobs
    )
    _refuse(fresh, overwrite)
    if moved := sorted({step.path for step in set(fresh.steps) ^ set(plan.steps)}):
        path = moved[0]
        raise RewindConflict(f"{unmistakable(path)} changed since the rewind was planned", path)
    copies = _copied_beside(root, beside, blobs)
    for step in plan.steps:
        blobs.keep(root / step.path, step.now)
    folder_times = _folder_times(root, plan.steps)
    try:
        _remove(root, plan.steps)
        _create(root, plan.steps, blobs)
        _settle_folders(root, plan.steps)
        for folder, times in folder_times.items():
            os.utime(root / folder, ns=times, follow_symlinks=False)
    except OSError as exc:
        done = _done(root, plan.steps, copies, interrupted=True)
        raise RewindInterrupted(f"the rewind stopped halfway: {exc}", done) from exc
    return _done(root, plan.steps, copies, interrupted=False)


def _copied_beside(root: Path, beside: Mapping[str, str], blobs: Blobs) -> list[FileChange]:
    """Each file of `beside` copied to its new name (content, mode and times), kept."""
    copies = []
    for path, name in beside.items():
        if os.path.lexists(root / name):
            raise RewindConflict(f"{unmistakable(name)} exists already", name)
        if not os.path.isfile(root / path) or os.path.islink(root / path):
            raise RewindConflict(f"{unmistakable(path)} is not a file to copy", path)
    for path, name in beside.items():
        shutil.copy2(root / path, root / name, follow_symlinks=False)
        copy = state_of(root / name)
        blobs.keep(root / name, copy)
        copies.append(FileChange(name, ABSENT, copy))
    return copies


def _plan(
    root: Path, targets: dict[str, FileState], left: dict[str, FileState], blobs: Blobs
) -> RewindPlan:
    view = TreeView(root, targets)
    steps: list[Step] = []
    blocked: list[Blocked] = []
    for path in sorted(targets):
        now, target = view.state(path), targets[path]
        if reason := view.blocker(path):
            blocked.append(Blocked(path, reason))
        if now.kind == "dir" and target.kind != "dir":
            blocked += [
                Blocked(
                    stray, f"not made by toolnexus, in {unmistakable(path)}, a folder to remove"
                )
                for stray in view.children(path)
                if stray not in targets
            ]
        if now != target:
            steps.append(Step(path, now, target, left[path]))
    return RewindPlan(
        tuple(steps),
        tuple(s.path for s in steps if s.conflict),
        tuple(s.path for s in steps if s.needs_content and not blobs.has(s.target.digest)),
        tuple(blocked),
    )


def _refuse(plan: RewindPlan, overwrite: frozenset[str]) -> None:
    if plan.blocked:
        path, reason = plan.blocked[0]
        raise RewindConflict(f"cannot rewind {unmistakable(path)}: {reason}", path)
    for path in plan.conflicts:
        if path not in overwrite:
            said = f"{unmistakable(path)} was changed after toolnexus changed it"
            raise RewindConflict(f"{said}: rewinding would overwrite that", path)
    if plan.unavailable:
        path = plan.unavailable[0]
        raise RewindConflict(f"cannot rewind {unmistakable(path)}: its content was not kept", path)


def _depth(step: Step) -> int:
    return step.path.count("/")


def _remove(root: Path, steps: Sequence[Step]) -> None:
    """What is in the way: deepest first, so a folder is empty when its turn comes."""
    for step in sorted(steps, key=_depth, reverse=True):
        now, target = step.now.kind, step.target.kind
        if now == "dir" and target != "dir":
            os.rmdir(root / step.path)
        elif now in ("file", "symlink") and target in ("absent", "dir"):
            os.unlink(root / step.path)


def _create(root: Path, steps: Sequence[Step], blobs: Blobs) -> None:
    """Folders (writable until `_settle_folders`), files and links: shallowest first."""
    for step in sorted(steps, key=_depth):
        path, target = root / step.path, step.target
        if target.kind == "dir" and step.now.kind != "dir":
            os.mkdir(path, 0o700)
        elif step.needs_content:
            blobs.restore(target.digest, path, target)
        elif target.kind in ("file", "symlink"):
            times = (target.mtime_ns, target.mtime_ns)
            os.utime(path, ns=times, follow_symlinks=False)


def _settle_folders(root: Path, steps: Sequence[Step]) -> None:
    """Folders' modes and times, once nothing more changes inside them: deepest first."""
    for step in sorted(steps, key=_depth, reverse=True):
        if step.target.kind == "dir":
            os.chmod(root / step.path, step.target.mode)
            times = (step.target.mtime_ns, step.target.mtime_ns)
            os.utime(root / step.path, ns=times, follow_symlinks=False)


def _folder_times(root: Path, steps: Sequence[Step]) -> dict[str, tuple[int, int]]:
    """The times of the folders the rewind writes in without changing them itself, to put
    back afterwards: a rename inside a folder is no change of the folder."""
    stepped = {s.path for s in steps}
    folders = {parent_of(s.path) for s in steps} - stepped
    times = {}
    for folder in folders:
        st = os.lstat(root / folder)
        times[folder] = (st.st_atime_ns, st.st_mtime_ns)
    return times


def _done(
    root: Path, steps: Sequence[Step], copies: list[FileChange], *, interrupted: bool
) -> ChangeSet:
    view = TreeView(root, {})
    changes = list(copies)
    for step in steps:
        after = view.state(step.path)
        if after != step.now:
            changes.append(FileChange(step.path, step.now, after))
    return ChangeSet(tuple(changes), "rewind", interrupted=interrupted)
