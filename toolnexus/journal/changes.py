"""What a tool call changed in a workspace, as values: for each path, what was there before
and what is there after. A file counts as changed by its content (sha256) and mode, never by
being written or touched; mtimes ride along so that undoing a change gives the file its old
time back (make decides by them)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal, NamedTuple

__all__ = [
    "ABSENT",
    "KINDS",
    "ChangeSet",
    "FileChange",
    "FileState",
    "Kind",
    "file_digest",
    "state_of",
]

Kind = Literal["absent", "file", "symlink", "dir"]
CHUNK = 1024 * 1024


class FileState(NamedTuple):
    """A path's state. `digest`: sha256 of a file's content or of a symlink's target;
    `mode`: the permission bits (files and folders)."""

    kind: Kind
    digest: str = ""
    mode: int = 0
    size: int = 0
    mtime_ns: int = 0

    def same_as(self, other: FileState) -> bool:
        """Whether the two hold the same thing (times aside)."""
        return (self.kind, self.digest, self.mode) == (other.kind, other.digest, other.mode)


ABSENT = FileState("absent")


class FileChange(NamedTuple):
    """One path (relative to the workspace, '/'-separated) before and after a call."""

    path: str
    before: FileState
    after: FileState

    @property
    def action(self) -> Literal["created", "deleted", "modified"]:
        if self.before.kind == "absent":
            return "created"
        if self.after.kind == "absent":
            return "deleted"
        return "modified"


class ChangeSet(NamedTuple):
    """What one tool call changed. `source`: the tool ("bash", "write_file", ...);
    `interrupted`: the call was stopped (Ctrl-C, its timeout, a kill of toolnexus) and this
    is as far as it got; `outside`: it ran outside the sandbox; `complete`: False when it
    was recorded by comparing a workspace too big to see whole (_snapshot.py): changes
    beyond are missing."""

    changes: tuple[FileChange, ...]
    source: str
    interrupted: bool = False
    outside: bool = False
    complete: bool = True

    def counts(self) -> tuple[int, int, int]:
        """Files (and links) created, modified, deleted: folders are not counted."""
        actions = [c.action for c in self.changes if "dir" not in (c.before.kind, c.after.kind)]
        return actions.count("created"), actions.count("modified"), actions.count("deleted")

    def as_json(self) -> dict[str, Any]:
        """The change set as JSON values (`from_json` reads it back): each change as
        [path, before, after], a state as [kind, digest, mode, size, mtime_ns]."""
        return {
            "source": self.source,
            "interrupted": self.interrupted,
            "outside": self.outside,
            "complete": self.complete,
            "summary": self.summary(),
            "changes": [[c.path, list(c.before), list(c.after)] for c in self.changes],
        }

    @classmethod
    def from_json(cls, data: Any) -> ChangeSet:
        """ValueError if `data` is not what `as_json` makes."""
        try:
            changes = tuple(
                FileChange(str(path), _state(before), _state(after))
                for path, before, after in data["changes"]
            )
            return cls(
                changes,
                str(data["source"]),
                bool(data["interrupted"]),
                bool(data["outside"]),
                bool(data.get("complete", True)),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a change set: {exc}") from None

    def summary(self) -> str:
        """`+3 ~2 -1` (empty when nothing changed)."""
        if not self.changes:
            return ""
        created, modified, deleted = self.counts()
        return f"+{created} ~{modified} -{deleted}"


KINDS: dict[str, Kind] = {"absent": "absent", "file": "file", "symlink": "symlink", "dir": "dir"}


def _state(fields: Any) -> FileState:
    kind, digest, mode, size, mtime = fields
    if kind not in KINDS:
        raise ValueError(f"no kind {kind!r}")
    return FileState(KINDS[kind], str(digest), int(mode), int(size), int(mtime))


# Trees a project's tools make again (dependencies, builds, caches): the journal records
# their changes but keeps no content, and a rewind leaves what it cannot put back there.
REGENERATED = frozenset(
    {
        *("node_modules", "__pycache__", ".venv", "venv", "target", ".tox", ".nox"),
        *(".mypy_cache", ".pytest_cache", ".ruff_cache"),
    }
)


# A version control system's own folder: a rewind of files never touches it (git's HEAD,
# index and refs stay as they are).
VERSION_CONTROL = frozenset({".git", ".hg", ".svn"})


def version_control(path: str) -> bool:
    """Whether `path` is, or lies in, a version control system's own folder."""
    return not VERSION_CONTROL.isdisjoint(path.split("/"))


def regenerated(path: str) -> bool:
    """Whether `path` ('/'-separated, relative) lies in a tree of REGENERATED."""
    return not REGENERATED.isdisjoint(path.split("/")[:-1])


# Files a person's next build, test, install or editor task runs (or that change what runs):
# a change to one is code the model wrote that will run outside the sandbox.
RUNS_LATER = (
    "Makefile",
    "makefile",
    "GNUmakefile",
    "*.mk",
    ".envrc",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "conftest.py",
    "noxfile.py",
    "tox.ini",
    "build.rs",
    ".npmrc",
    ".yarnrc.yml",
    ".yarnrc",
    ".cargo/config.toml",
    ".cargo/config",
    ".vscode/tasks.json",
    ".vscode/settings.json",
    ".github/workflows/*",
    ".gitlab-ci.yml",
    "*.pth",
    "sitecustomize.py",
    "usercustomize.py",
    "Dockerfile",
    "docker-compose.yml",
    "justfile",
    "Taskfile.yml",
)


def runs_later(change: FileChange) -> bool:
    """Whether the change is to a file that runs later (RUNS_LATER, by name or as the end of
    its path), or gives a file an executable bit it did not have."""
    if change.after.kind == "absent":
        return False
    path = PurePosixPath(change.path)
    if any(path.match(pattern) for pattern in RUNS_LATER):
        return True
    was = change.before.mode if change.before.kind == "file" else 0
    return change.after.kind == "file" and bool(change.after.mode & 0o111 & ~was)


def folder_states(root: Path, paths: Iterable[str]) -> dict[str, FileState]:
    """The states of the folders below `root` that hold `paths` (relative, '/'-separated),
    taken before a change so that `with_folder_times` can record how their times moved."""
    folders = {PurePosixPath(path).parent.as_posix() for path in paths} - {"."}
    return {folder: state_of(root / folder) for folder in sorted(folders)}


def with_folder_times(changes: ChangeSet, root: Path, before: Mapping[str, FileState]) -> ChangeSet:
    """`changes` and, for each folder of `before` with no change of its own whose time moved
    (an entry made or removed in it), a change of its time: a rewind gives it back, so the
    tree is as it was to the byte and the time."""
    own = {change.path for change in changes.changes}
    moved = []
    for folder, was in before.items():
        now = state_of(root / folder)
        if folder not in own and now != was and now.kind == was.kind == "dir":
            moved.append(FileChange(folder, was, now))
    return changes._replace(changes=changes.changes + tuple(moved))


def state_of(path: Path) -> FileState:
    """The state of `path` now (not following a final symlink)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return ABSENT
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        return FileState("symlink", _digest_bytes(target.encode()), 0, len(target), st.st_mtime_ns)
    if stat.S_ISDIR(st.st_mode):
        return FileState("dir", "", stat.S_IMODE(st.st_mode), 0, st.st_mtime_ns)
    return FileState(
        "file", file_digest(path), stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns
    )


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _digest_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
