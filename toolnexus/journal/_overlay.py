"""Reading what a command wrote into its overlay's upper folder, as a list of what each path
becomes.

overlayfs (with `userxattr` in a user namespace) records in the upper folder: a new or
copied-up file or symlink as itself; a deleted path as a whiteout (a character device 0:0);
a folder made anew over one that existed (rm -rf then mkdir) as an opaque folder (the xattr
`user.overlay.opaque` or `trusted.overlay.opaque` = "y"), whose lower entries are all gone.
Without `redirect_dir` a renamed folder is copied (mv falls back on EXDEV), so it shows as
the old name's whiteout and the new name's files: no entry needs more than this to be read.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

OPAQUE_XATTRS = ("user.overlay.opaque", "trusted.overlay.opaque")


class Written(NamedTuple):
    """One path of the upper folder: `upper` is where its new version lies (None for a
    deletion); `opaque`: a folder that replaces the lower one whole."""

    path: str  # relative to the workspace, '/'-separated
    upper: Path | None
    opaque: bool = False


def written(upper_root: Path) -> Iterator[Written]:
    """Every path the upper folder holds, parents before children."""
    pending = [""]
    while pending:
        relative = pending.pop()
        folder = upper_root / relative if relative else upper_root
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            path = f"{relative}/{entry.name}" if relative else entry.name
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
                yield Written(path, None)
            elif stat.S_ISDIR(st.st_mode):
                yield Written(path, Path(entry.path), _opaque(entry.path))
                pending.append(path)
            else:
                yield Written(path, Path(entry.path))


def _opaque(folder: str) -> bool:
    for name in OPAQUE_XATTRS:
        try:
            if os.getxattr(folder, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False
