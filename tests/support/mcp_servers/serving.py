"""What the HTTP test servers share: `serve(app_for)` listens on 127.0.0.1 ($HTTP_MCP_PORT
when set, a server started again where the last one was; else a free port), prints the
port, and serves the ASGI app `app_for(port)` until it is killed, or the test process that
started it ($HTTP_MCP_PARENT) dies, however it dies."""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import uvicorn


def serve(app_for: Callable[[int], Any]) -> None:
    die_with_parent()

    async def main() -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", int(os.environ.get("HTTP_MCP_PORT", "0"))))
        sock.listen(16)
        port = sock.getsockname()[1]
        config = uvicorn.Config(app_for(port), log_level="warning", lifespan="on")
        print(port, flush=True)  # listening already: connections queue
        await uvicorn.Server(config).serve(sockets=[sock])

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        sys.exit(0)


def die_with_parent() -> None:
    """Linux: SIGKILL this server when the test process that started it dies, however. Its
    parent is that process, or the zygote it forks its servers from (tests/support/prefork.py),
    which ends with it and takes its forks along."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        parent = int(os.environ.get("HTTP_MCP_PARENT", os.getppid()))
        if parent not in (os.getppid(), _parent_of(os.getppid())):
            sys.exit(1)


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rpartition(")")[2].split()[1])
