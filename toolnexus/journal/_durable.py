"""Making what was written durable before what depends on it is recorded."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path


def sync_file_system(folder: Path) -> None:
    """Make everything written on `folder`'s file system durable (syncfs(2); sync(2) where
    the C library has no syncfs)."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        syncfs = getattr(ctypes.CDLL(None, use_errno=True), "syncfs", None)
        if syncfs is None or syncfs(fd) != 0:
            os.sync()
    finally:
        os.close(fd)
