"""Waiting for what a test expects, never for a fixed time, and processes seen from outside.

`wait_until` (for plain tests and threads) and `eventually` (for async tests: it never
blocks the event loop) poll a condition until it holds and return its value; their limit,
WAIT_S, is only how long to wait before calling it a failure, generous because a busy
2-core machine is slow, never a claim about how fast things should be.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

WAIT_S = 60.0
POLL_S = 0.02


def wait_until(condition: Callable[[], T], what: str, timeout: float = WAIT_S) -> T:
    """`condition()` once it is true (it is polled); fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(POLL_S)
    return value


async def eventually(condition: Callable[[], T], what: str, timeout: float = WAIT_S) -> T:
    """`wait_until` for async tests: the event loop runs on while it waits."""
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        await asyncio.sleep(POLL_S)
    return value


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie nobody reaped yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def pids_in(path: Path) -> list[int]:
    """The PIDs a process wrote into `path`, one a line ([] while it has written none)."""
    try:
        return [int(word) for word in path.read_text().split()]
    except (FileNotFoundError, ValueError):  # not there yet, or a line half written
        return []


def pid_in(path: Path) -> int | None:
    """The PID a process wrote into `path`, or None while there is none yet."""
    found = pids_in(path)
    return found[0] if found else None


def wait_for_pid(path: Path, timeout: float = WAIT_S) -> int:
    """The PID a process writes into `path`, once it has."""
    return wait_until(lambda: pid_in(path), f"a PID in {path.name}", timeout)


def running_with(marker: str) -> list[int]:
    """The live processes whose command line or environment holds `marker`, by the PIDs
    this machine gives them: a command that runs in a PID namespace of its own sees other
    numbers (`echo $$` there says 2), so tests mark what they start and look from here."""
    found = []
    wanted = marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            holds = wanted in (entry / "cmdline").read_bytes() or (
                wanted in (entry / "environ").read_bytes()
            )
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if holds and alive(int(entry.name)):
            found.append(int(entry.name))
    return found
