"""What the HTTP test servers share: they die with the test process that started them."""

from __future__ import annotations

import ctypes
import os
import signal
import sys


def die_with_parent() -> None:
    """Linux: SIGKILL this server when the test process that started it dies, however."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != int(os.environ.get("HTTP_MCP_PARENT", os.getppid())):
            sys.exit(1)
