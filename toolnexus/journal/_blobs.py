"""The contents the journal keeps, each stored once under its sha256 (the digest a FileState
holds), so that a change can be undone and redone. Nothing is ever half-written under a
blob's name: a blob is written to a temporary name in its folder, synced, then renamed."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from toolnexus.journal._durable import sync_file_system
from toolnexus.journal._processes import alive
from toolnexus.journal.changes import CHUNK, FileState

GiB = 1 << 30
MiB = 1 << 20
TEMP_PREFIX = ".tmp-"  # then the writer's pid and a token: never a digest


class Blobs:
    """The folder of kept contents: `folder/ab/abcd...` (folders 0700, files 0600). A symlink's
    blob is its target. `budget_bytes` bounds what the folder holds, `max_file_bytes` one
    content; `size()` is counted on opening and kept up to date by this object."""

    def __init__(
        self, folder: Path, *, budget_bytes: int = GiB, max_file_bytes: int = 64 * MiB
    ) -> None:
        self.folder = folder
        self.budget_bytes = budget_bytes
        self.max_file_bytes = max_file_bytes
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)
        self._bytes = sum(self._path(digest).lstat().st_size for digest in self._digests())
        self._deferred = False  # in a batch: synced once at its end

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        """Keep many contents with one sync of their file system at the end, instead of one
        per content (a command that wrote 10,000 files)."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False
            sync_file_system(self.folder)

    def keep(self, path: Path, state: FileState) -> bool:
        """Keep the content of the file (or symlink) at `path`, whose state is `state`. True
        when it is kept (or has nothing to keep: absent, a folder); False, with nothing
        stored, when it is over `max_file_bytes`, over the budget, or no longer `state`."""
        if state.kind not in ("file", "symlink"):
            return True
        if self.has(state.digest):
            return True
        if state.size > self.max_file_bytes or self._bytes + state.size > self.budget_bytes:
            return False
        try:
            chunks = _link_target(path) if state.kind == "symlink" else _file_chunks(path)
            size = self._store(state.digest, chunks, state.size)
        except _Changed:
            return False
        self._bytes += size
        return True

    def has(self, digest: str) -> bool:
        return _is_digest(digest) and self._path(digest).is_file()

    def open(self, digest: str) -> BinaryIO:
        return self._path(digest).open("rb")

    def read(self, digest: str) -> bytes:
        return self._path(digest).read_bytes()

    def restore(self, digest: str, target: Path, state: FileState) -> None:
        """Make `target` the file or symlink `state` with this content, mode and mtime: written
        beside it under a temporary name, synced, renamed over it (its folder must exist and
        must not be a link: the caller judges that)."""
        if state.kind not in ("file", "symlink"):
            raise ValueError(f"only a file or a symlink has content to restore, not {state.kind!r}")
        temp = target.parent / f".toolnexus-restore-{secrets.token_hex(8)}"
        times = (state.mtime_ns, state.mtime_ns)
        try:
            if state.kind == "symlink":
                os.symlink(self.read(digest), temp)
                os.utime(temp, ns=times, follow_symlinks=False)
            else:
                with self.open(digest) as source, _create(temp) as out:
                    while chunk := source.read(CHUNK):
                        out.write(chunk)
                    out.flush()
                    os.fchmod(out.fileno(), state.mode)
                    os.utime(out.fileno(), ns=times)
                    os.fsync(out.fileno())
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)
        _sync_folder(target.parent)

    def size(self) -> int:
        """The bytes the kept contents take."""
        return self._bytes

    def prune(self, used: set[str]) -> None:
        """Remove every blob not in `used`, and what a crashed writer left behind."""
        for digest in list(self._digests()):
            if digest not in used:
                path = self._path(digest)
                self._bytes -= path.lstat().st_size
                path.unlink()
        for sub in self._fanout():
            for leftover in sub.glob(f"{TEMP_PREFIX}*"):
                if not _writer_alive(leftover.name):
                    leftover.unlink(missing_ok=True)

    def _store(self, digest: str, chunks: Iterator[bytes], expected: int) -> int:
        """Write `chunks` as the blob `digest`; its size. Raises _Changed, storing nothing,
        when they hash otherwise or run past `expected` bytes."""
        final = self._path(digest)
        final.parent.mkdir(mode=0o700, exist_ok=True)
        temp = final.parent / f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(8)}"
        hasher = hashlib.sha256()
        size = 0
        try:
            with _create(temp) as out:
                for chunk in chunks:
                    size += len(chunk)
                    if size > expected:
                        raise _Changed
                    hasher.update(chunk)
                    out.write(chunk)
                out.flush()
                if not self._deferred:
                    os.fsync(out.fileno())
            if hasher.hexdigest() != digest:
                raise _Changed
            os.replace(temp, final)
        finally:
            temp.unlink(missing_ok=True)
        if not self._deferred:
            _sync_folder(final.parent)
        return size

    def _path(self, digest: str) -> Path:
        if not _is_digest(digest):
            raise ValueError(f"not a sha256 digest: {digest!r}")
        return self.folder / digest[:2] / digest

    def _digests(self) -> Iterator[str]:
        for sub in self._fanout():
            for entry in sub.iterdir():
                if _is_digest(entry.name) and entry.name[:2] == sub.name:
                    yield entry.name

    def _fanout(self) -> Iterator[Path]:
        for sub in self.folder.iterdir():
            if sub.is_dir() and not sub.is_symlink():
                yield sub


class _Changed(Exception):
    """What was read is not the state the caller described."""


# the path is gone, or is no longer what the state says (not a link; a link now)
_GONE = {errno.ENOENT, errno.ENOTDIR, errno.EINVAL, errno.ELOOP}


def _is_digest(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _link_target(path: Path) -> Iterator[bytes]:
    try:
        target = os.readlink(os.fsencode(path))
    except OSError as exc:
        if exc.errno not in _GONE:
            raise
        raise _Changed from exc
    yield target


def _file_chunks(path: Path) -> Iterator[bytes]:
    """A regular file's content, opened without following a link or blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno not in _GONE:
            raise
        raise _Changed from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _Changed
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as handle:
        while chunk := handle.read(CHUNK):
            yield chunk


def _create(path: Path) -> BinaryIO:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    return os.fdopen(fd, "wb")


def _sync_folder(folder: Path) -> None:
    """Make a rename in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _writer_alive(name: str) -> bool:
    """Whether the process that named this temporary file still runs (a reused pid counts)."""
    return alive(name[len(TEMP_PREFIX) :].partition("-")[0])
