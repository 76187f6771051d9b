"""Applying what a command wrote into its overlay to the real workspace, crash-safely.

1. `plan` reads the upper folder against the workspace: the ChangeSet (a file counts as
   changed by content and mode, never by being copied up: `touch`, an `O_RDWR` open or
   `sed -i` with no match change nothing) and the steps that make the workspace match.
2. `apply` writes the steps as an intent record (synced) beside the upper folder, then
   does them: a file moves by rename(2) (atomic; mode and mtime kept), or where the upper
   folder lies on another file system, by a copy into the target's folder then a rename;
   then the record is removed, and the upper folder with it.
3. `recover` finishes every record a crash or a kill left (each step can be done again
   without harm: a moved file's source is gone), so a start rolls forward before anything
   else; an overlay whose command was still running when toolnexus was killed is handed to
   the caller to apply as far as the command got (its record: _pending.py).

A path the person changed in the workspace while the command ran (its mtime is past the
call's start) is not overwritten: the command's version is kept beside it as
`NAME.toolnexus-N`, and the change set says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from ._durable import sync_file_system
from ._overlay import written
from ._pending import Pending, read_pending
from ._processes import alive
from .changes import ABSENT, ChangeSet, FileChange, FileState, state_of

RECORD = "intent.json"
# A test's switch: stop (as a crash would) after moving this many files.
STOP_AFTER = "TOOLNEXUS_JOURNAL_STOP_AFTER"


class Plan(NamedTuple):
    """What a call changed (`changes`), how to make the workspace match (`steps`), and the
    paths kept beside the person's own newer version (`beside`: path -> name)."""

    changes: ChangeSet
    steps: list[list[str | int]]
    beside: dict[str, str]


def plan(upper: Path, root: Path, source: str, *, started_ns: int) -> Plan:
    """Compare the overlay's `upper` folder with the workspace `root` (as it is now, before
    anything is applied)."""
    changes: list[FileChange] = []
    deletions: list[list[str | int]] = []
    creations: list[list[str | int]] = []
    beside: dict[str, str] = {}
    renewed: list[str] = []  # opaque folders: what was below them is deleted first
    for item in written(upper):
        target = root / item.path
        under_renewed = any(item.path.startswith(f"{folder}/") for folder in renewed)
        before = ABSENT if under_renewed else state_of(target)
        if item.upper is None:  # a whiteout
            if before.kind != "absent":
                changes += _deleted(root, item.path, before)
                deletions.append(["delete", item.path])
            continue
        after = state_of(item.upper)
        if after.kind == "dir":
            if before.kind != "dir":
                if before.kind != "absent":
                    changes.append(FileChange(item.path, before, ABSENT))
                    deletions.append(["delete", item.path])
                changes.append(FileChange(item.path, ABSENT, after))
                creations.append(["mkdir", item.path, after.mode])
            else:
                if item.opaque:  # made anew: what it held before is gone
                    renewed.append(item.path)
                    for name in sorted(os.listdir(target)):
                        gone = f"{item.path}/{name}"
                        changes += _deleted(root, gone, state_of(root / gone))
                        deletions.append(["delete", gone])
                if after.mode != before.mode:
                    changes.append(FileChange(item.path, before, after))
                    creations.append(["chmod", item.path, after.mode])
            continue
        if before.same_as(after):
            continue  # copied up, not changed
        move: list[str | int] = ["move", item.path]
        if before.kind != "absent" and before.mtime_ns > started_ns:
            name = _free_name(target)
            beside[item.path] = name
            move.append(name)
            after_where = (root / name).relative_to(root).as_posix()
            changes.append(FileChange(after_where, ABSENT, after))
        else:
            if before.kind == "dir":
                changes += _deleted(root, item.path, before)
                deletions.append(["delete", item.path])
                before = ABSENT
            changes.append(FileChange(item.path, before, after))
        creations.append(move)
    steps = sorted(deletions, key=lambda s: -str(s[1]).count("/")) + creations
    return Plan(ChangeSet(tuple(changes), source), steps, beside)


def _deleted(root: Path, path: str, before: FileState) -> list[FileChange]:
    """A deleted path's changes: a folder's files and folders too, deepest first."""
    found = []
    if before.kind == "dir":
        for inner in sorted(_entries(root, path), key=lambda p: -p.count("/")):
            found.append(FileChange(inner, state_of(root / inner), ABSENT))
    found.append(FileChange(path, before, ABSENT))
    return found


def _entries(root: Path, path: str) -> Iterator[str]:
    """Every path under the folder `path` of `root`, relative to `root`."""
    for folder, dirs, files in os.walk(root / path):
        here = Path(folder)
        for name in dirs + files:
            yield (here / name).relative_to(root).as_posix()


def _free_name(target: Path) -> str:
    number = 1
    while True:
        candidate = target.with_name(f"{target.name}.toolnexus-{number}")
        if not os.path.lexists(candidate):
            return candidate.name
        number += 1


def apply(found: Plan, upper: Path, root: Path, record_folder: Path) -> None:
    """Write the intent record, do the steps, then remove the record and the overlay's
    folders (`record_folder` holds the record and the upper folder)."""
    record = record_folder / RECORD
    sync_file_system(upper)  # what the command wrote is on disk before anything moves
    text = json.dumps(
        {
            "root": str(root),
            "upper": str(upper),
            "steps": found.steps,
            "changes": found.changes.as_json(),  # to journal, should a kill stop this
        }
    )
    temporary = record.with_suffix(".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, record)
    _sync_folder(record_folder)
    _do(found.steps, upper, root)
    finish(record_folder)


HELD = "held"  # an overlay kept for a person's review (removed unapplied if abandoned)


def mark_held(folder: Path) -> None:
    (folder / HELD).touch()


def recover(
    overlays: Path,
    apply_left: Callable[[Path, Pending], str],
    journal_finished: Callable[[Pending, ChangeSet], None],
) -> list[str]:
    """Finish what a crash left under `overlays` (one folder per call); a line for each.
    `apply_left` applies and journals the overlay of a command that never finished (its
    folder and record) and says what it did; `journal_finished` journals what an apply
    finished here had changed."""
    said: list[str] = []
    try:
        folders = sorted(p for p in overlays.iterdir() if p.is_dir())
    except OSError:
        return said
    for folder in folders:
        if _owner_alive(folder.name):
            continue  # a call still running in another process
        record = folder / RECORD
        try:
            text = record.read_text("utf-8")
        except FileNotFoundError:
            held = (folder / HELD).exists()
            pending = None if held else read_pending(folder)
            if pending is not None:
                said.append(apply_left(folder, pending))
                continue
            finish(folder)
            said.append(
                f"discarded changes of a command that were never approved ({folder.name})"
                if held
                else f"removed the overlay of a command that never finished ({folder.name})"
            )
            continue
        except OSError as exc:
            said.append(f"cannot read {record}: {exc.strerror or exc}")
            continue
        try:
            data = json.loads(text)
            root, upper, steps = Path(data["root"]), Path(data["upper"]), data["steps"]
        except (ValueError, KeyError, TypeError):
            said.append(f"{record} is not an intent record: left as it is")
            continue
        pending = read_pending(folder)
        _do(steps, upper, root)
        finish(folder)
        if pending is not None and "changes" in data:  # an older version's record has none
            with contextlib.suppress(ValueError):
                journal_finished(pending, ChangeSet.from_json(data["changes"]))
        said.append(f"finished applying a command's changes to {root} (interrupted before)")
    return said


def _owner_alive(name: str) -> bool:
    """Whether the process an overlay folder is named after (`PID-...`) still runs (this
    one included: another of its workspaces may be running a call there)."""
    return alive(name.split("-", 1)[0])


def finish(record_folder: Path) -> None:
    """Remove an overlay's folders: its record first, then the rest. overlayfs leaves a
    folder of mode 0 in the work folder, which only root could enter as it is: every
    folder is opened to its owner on the way down."""
    with contextlib.suppress(FileNotFoundError):
        (record_folder / RECORD).unlink()
    for folder, dirs, _files in os.walk(record_folder):
        for name in dirs:
            with contextlib.suppress(OSError):
                os.chmod(os.path.join(folder, name), 0o700, follow_symlinks=False)
    shutil.rmtree(record_folder, ignore_errors=True)


def _do(steps: list[list[str | int]], upper: Path, root: Path) -> None:
    stop_after = int(os.environ.get(STOP_AFTER, "0") or 0)
    moved = 0
    for step in steps:
        op, path = str(step[0]), str(step[1])
        target = _inside(root, path)
        if op == "delete":
            _remove(target)
        elif op == "mkdir":
            target.mkdir(exist_ok=True)
            os.chmod(target, int(step[2]))
        elif op == "chmod":
            os.chmod(target, int(step[2]))
        elif op == "move":
            if len(step) > 2:
                target = _inside(root, str(Path(path).parent / str(step[2])))
            _move(upper / path, target)
            moved += 1
            if stop_after and moved >= stop_after:
                os._exit(70)  # the test's crash


def _inside(root: Path, path: str) -> Path:
    """`path` under `root`, never out of it (an intent record is data too)."""
    if path.startswith("/") or ".." in path.split("/"):
        raise ValueError(f"{path!r} is not a path inside the workspace")
    return root / path


def _remove(target: Path) -> None:
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(target)
    else:
        target.unlink()


def _move(source: Path, target: Path) -> None:
    if not os.path.lexists(source):
        return  # moved before a crash
    try:
        if os.path.isdir(target) and not os.path.islink(target):
            shutil.rmtree(target)
        os.replace(source, target)
    except OSError as exc:
        if exc.errno != 18:  # EXDEV: the upper folder is on another file system
            raise
        staged = target.with_name(f".{target.name}.toolnexus-staged")
        if os.path.islink(source):
            os.symlink(os.readlink(source), staged)
        else:
            shutil.copy2(source, staged)
            with open(staged, "rb") as handle:
                os.fsync(handle.fileno())
        os.replace(staged, target)
        os.unlink(source)


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
