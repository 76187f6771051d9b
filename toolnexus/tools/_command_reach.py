"""What a command in the sandbox may reach besides the workspace, whatever the sandbox's mode:
the file tools may open there outside the workspace on a blanket yes (`--yes`), as a command
it allows could. Reads: the system folders (not a home folder inside one), the toolchains in
the home folder and the policy's `read` and `write` folders; writes: the policy's `write`
folders. Anywhere else (the rest of the home folder, other users', /tmp) only a person's
yes or a path rule opens a file. Secrets are refused before this is asked."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .sandbox import HOME_TOOLCHAINS, SYSTEM_FOLDERS, SandboxPolicy
from .secret_files import within

CHANGES = ("write", "edit")  # the file tools' actions that change what they open


class CommandReach:
    """The folders a sandboxed command may read and write under `policy`, for a user whose
    home folder is `home` (resolved)."""

    def __init__(self, policy: SandboxPolicy, home: Path) -> None:
        self.home = home
        self.system = _real(SYSTEM_FOLDERS)
        self.reads = _real([*(str(home / name) for name in HOME_TOOLCHAINS), *policy.read])
        self.writes = _real(policy.write)

    def covers(self, path: Path, action: str) -> bool:
        """Whether a sandboxed command could `action` the resolved `path` too."""
        if action in CHANGES:
            return _under(path, self.writes)
        if _under(path, self.writes) or _under(path, self.reads):
            return True
        return _under(path, self.system) and not within(path, self.home)


def _real(folders: Iterable[str]) -> list[Path]:
    return [Path(os.path.realpath(os.path.expanduser(folder))) for folder in folders]


def _under(path: Path, folders: list[Path]) -> bool:
    return any(within(path, folder) for folder in folders)
