"""The secret-looking files under a folder (a workspace), listed without walking a huge tree
on every call: the walk skips the trees other programs make and fill (SKIP_DIRS, and build
output and caches), stops after MAX_ENTRIES entries or MAX_SECONDS seconds (saying it is
incomplete), and is kept until one of the folders it read changes (its inode or its
change time: a name added, removed or renamed, its mode changed) or `invalidate()` is
called. Checking costs one `stat` per folder read, never a walk of the files.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import NamedTuple

from ..journal.changes import REGENERATED, VERSION_CONTROL
from .secret_files import KnownSecrets, SecretNames

# Trees of other programs' making (version control, dependencies, caches): glob and grep
# skip them too.
SKIP_DIRS = VERSION_CONTROL | {"node_modules", "__pycache__", ".venv", "venv"}
# ... and build output and tools' caches, which can be huge and hold nobody's secrets.
NOT_LISTED = VERSION_CONTROL | REGENERATED
MAX_ENTRIES = 50_000  # files and folders looked at in one walk
MAX_SECONDS = 1.0  # one walk's time

Stamp = tuple[int, int] | None  # a folder's inode and change time (ns); None: missing


class Listing(NamedTuple):
    """What a walk found. `complete` is False when it stopped at its bound (MAX_ENTRIES or
    MAX_SECONDS): files past that point are not in `files`."""

    files: tuple[Path, ...]
    complete: bool


class SecretFiles:
    """The files under `root` whose names `names` says look secret (links and special
    files by their names too; a link to a folder is not followed), and those that are
    another name (a hard link) of a file in the `known` secret places, sorted."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        names: SecretNames,
        *,
        known: KnownSecrets | None = None,
        max_entries: int = MAX_ENTRIES,
        max_seconds: float = MAX_SECONDS,
    ) -> None:
        self.root = Path(os.path.realpath(root))
        self.names = names
        self.known = known
        self.max_entries, self.max_seconds = max_entries, max_seconds
        self._listing: Listing | None = None
        self._stamps: dict[str, Stamp] = {}
        self._lock = threading.Lock()

    def listing(self) -> Listing:
        """The secret-looking files now: the last walk's if no folder it read has changed
        since, else a new walk's."""
        with self._lock:
            if self._listing is None or self._changed():
                self._listing, self._stamps = self._walk()
            return self._listing

    def invalidate(self) -> None:
        """Forget the last walk: the next `listing()` walks again (after files were written
        on a file system that keeps times only to the second, say)."""
        with self._lock:
            self._listing = None

    def _changed(self) -> bool:
        return any(_stamp(folder) != stamp for folder, stamp in self._stamps.items())

    def _walk(self) -> tuple[Listing, dict[str, Stamp]]:
        found: list[Path] = []
        stamps: dict[str, Stamp] = {}
        deadline = time.monotonic() + self.max_seconds
        seen = 0
        pending = [str(self.root)]
        inodes = self.known.inodes() if self.known is not None else frozenset()
        device = _device(self.root)
        while pending:
            folder = pending.pop()
            stamps[folder] = _stamp(folder)  # a root missing now is walked once it is made
            try:
                with os.scandir(folder) as entries:
                    for entry in entries:
                        seen += 1
                        if seen > self.max_entries or time.monotonic() > deadline:
                            return Listing(tuple(sorted(found)), False), stamps
                        if _is_folder(entry):
                            if entry.name not in NOT_LISTED:
                                pending.append(entry.path)
                        elif self.names.matches(entry.path) or (device, entry.inode()) in inodes:
                            found.append(Path(entry.path))
            except OSError:  # missing, unreadable or gone meanwhile: its stamp tells
                continue
        return Listing(tuple(sorted(found)), True), stamps


def _device(folder: Path) -> int:
    try:
        return os.stat(folder).st_dev
    except OSError:
        return -1


def _stamp(folder: str) -> Stamp:
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError:
        return None
    return st.st_ino, st.st_ctime_ns


def _is_folder(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False
