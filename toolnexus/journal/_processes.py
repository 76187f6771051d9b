"""Whether the process a leftover file or folder is named after still runs."""

from __future__ import annotations

import os


def alive(pid: str) -> bool:
    """Whether process `pid` (its number as text) runs (a reused number counts; what is not
    a number does not)."""
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's
        return True
    return True
