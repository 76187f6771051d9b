"""What a command's overlay belongs to, kept in its folder from the moment it is made: should
toolnexus be killed while the command runs, the next start reads it to apply what the command
had written, through the same path as a call that ended, and to journal it with its turn.

`call.json` (0600) holds the workspace, when the command started (a file the person changed
since then is kept, not overwritten) and the thread, turn and tool call. An overlay without
one (made by an older version) or whose record cannot be read is removed unapplied.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

PENDING = "call.json"
VERSION = 1


class Pending(NamedTuple):
    root: str  # the workspace the overlay lies over
    started_ns: int  # when the command started: the lower versions it saw are older
    thread: str  # "" when no host said which thread the call belongs to
    turn: int
    call: str  # the tool call's id


def write_pending(folder: Path, pending: Pending) -> None:
    """Keep `pending` in the overlay `folder` (written whole or not at all)."""
    temporary = folder / f"{PENDING}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"version": VERSION, **pending._asdict()}, handle)
    os.replace(temporary, folder / PENDING)


def read_pending(folder: Path) -> Pending | None:
    """The overlay `folder`'s record, or None where there is none it can be applied by."""
    try:
        data = json.loads((folder / PENDING).read_text("utf-8"))
        if data["version"] != VERSION:
            return None
        return Pending(
            str(data["root"]),
            int(data["started_ns"]),
            str(data["thread"]),
            int(data["turn"]),
            str(data["call"]),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
