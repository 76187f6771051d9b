"""A workspace as the journal sees it: paths relative to its root and '/'-separated, looked at
without ever following a symlink, and a digest of everything a tree holds."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from toolnexus._visible import unmistakable
from toolnexus.errors import ToolnexusError
from toolnexus.journal.changes import ABSENT, FileState, Kind, file_digest, state_of


class UnsafePath(ToolnexusError):
    """A change set names a path that is not plainly inside the workspace: absolute, with
    `.` or `..` parts, or beneath a symlink."""


def checked_path(path: str) -> str:
    """`path` if it is relative, '/'-separated and plain; else UnsafePath."""
    if "\0" in path or any(part in ("", ".", "..") for part in path.split("/")):
        raise UnsafePath(f"not a path inside the workspace: {unmistakable(repr(path))}")
    return path


def parent_of(path: str) -> str:
    """The folder holding `path` ("" for the root)."""
    return path.rpartition("/")[0]


class TreeView:
    """The tree under `root` as a rewind to `targets` (path -> the state it gets) sees it:
    beneath anything but a real folder a path is absent, never looked for through a link."""

    def __init__(self, root: Path, targets: Mapping[str, FileState]) -> None:
        self.root = root
        self.targets = targets
        self._kinds: dict[str, Kind] = {}

    def state(self, path: str) -> FileState:
        parent = parent_of(path)
        if parent and self._kind(parent) != "dir":
            return ABSENT
        return state_of(self.root / path)

    def blocker(self, path: str) -> str | None:
        """Why `path` cannot get its target: a folder on its way will not be a folder. Raises
        UnsafePath when one is a symlink now (that the rewind does not make a folder) or
        becomes one before `path` is written."""
        writes = self.targets[path].kind != "absent"
        folder = ""
        for part in path.split("/")[:-1]:
            folder = f"{folder}/{part}" if folder else part
            now = self._kind(folder)
            final = self.targets[folder].kind if folder in self.targets else now
            if (now == "symlink" and final != "dir") or (final == "symlink" and writes):
                said = f"{unmistakable(path)}: its folder {unmistakable(folder)}"
                raise UnsafePath(f"{said} is a symlink: the rewind does not go through links")
            if final != "dir" and writes:
                return f"its folder {unmistakable(folder)} will not be a folder"
        return None

    def children(self, folder: str) -> list[str]:
        """The paths in `folder`, a real folder now."""
        return sorted(f"{folder}/{name}" for name in os.listdir(self.root / folder))

    def _kind(self, folder: str) -> Kind:
        if folder not in self._kinds:
            parent = parent_of(folder)
            if parent and self._kind(parent) != "dir":
                self._kinds[folder] = "absent"
            else:
                self._kinds[folder] = _kind_of(self.root / folder)
        return self._kinds[folder]


def _kind_of(path: Path) -> Kind:
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "absent"
    if stat.S_ISLNK(mode):
        return "symlink"
    return "dir" if stat.S_ISDIR(mode) else "file"


def tree_digest(root: Path) -> str:
    """A sha256 of everything beneath `root` (not the root folder itself), hidden files and
    `.git` included: each entry's relative path, type, mode, mtime, and a file's content or a
    link's target. Two trees with the same digest are the same to the byte and the time."""
    digest = hashlib.sha256()
    for path in sorted(_entries(root)):
        st = os.lstat(root / path)
        if stat.S_ISREG(st.st_mode):
            content = file_digest(root / path).encode()
        elif stat.S_ISLNK(st.st_mode):
            content = os.readlink(os.fsencode(root / path))
        else:
            content = b""
        entry = (os.fsencode(path), st.st_mode, st.st_mtime_ns, content)
        digest.update(repr(entry).encode())
    return digest.hexdigest()


def _entries(root: Path) -> Iterator[str]:
    def fail(error: OSError) -> None:
        raise error

    for folder, dirs, files in os.walk(root, onerror=fail):
        for name in dirs + files:
            yield os.path.relpath(os.path.join(folder, name), root)
