"""Opening a file to read only if it is a regular file, never blocking on a FIFO or device."""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO


class SpecialFile(OSError):
    """A FIFO, device or socket where a regular file was wanted."""


def open_regular(path: str | os.PathLike[str], *, pipes: bool = False) -> BinaryIO:
    """Open `path` for reading if it is a regular file (or, with `pipes`, a pipe such as
    the shell's `<(command)`); a folder raises IsADirectoryError, anything else SpecialFile.
    Judged on the open file, not before (so a path swapped meanwhile cannot slip through),
    opened without blocking and without reading it. A pipe nobody writes to reads as empty."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode) or (pipes and stat.S_ISFIFO(mode)):
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    os.close(fd)
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    raise SpecialFile(
        "Not a regular file (a device or socket)"
        if pipes
        else "Not a regular file (a device, FIFO or socket)"
    )
