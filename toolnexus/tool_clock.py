"""Tools' time limits, held while the host answers what a running tool's server asked of
it (an MCP elicitation or sampling request): that time is a person's, or the model's, not
the tool's, so a form answered slowly does not fail the call that asked for it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

_running: set[asyncio.Timeout] = set()
_left: dict[asyncio.Timeout, float] = {}  # seconds each held limit had left
_holds = 0


@contextlib.contextmanager
def counted(limit: asyncio.Timeout) -> Iterator[None]:
    """Inside an entered `limit`: it runs out only while nothing holds the clocks."""
    _running.add(limit)
    if _holds:
        _hold(limit)
    try:
        yield
    finally:
        _running.discard(limit)
        _left.pop(limit, None)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """While the host answers a server's request: every running tool's clock stops."""
    global _holds
    _holds += 1
    if _holds == 1:
        for limit in _running:
            _hold(limit)
    try:
        yield
    finally:
        _holds -= 1
        if _holds == 0:
            now = asyncio.get_running_loop().time()
            for limit, left in _left.items():
                limit.reschedule(now + left)
            _left.clear()


def _hold(limit: asyncio.Timeout) -> None:
    when = limit.when()
    if when is not None and not limit.expired():
        _left[limit] = max(0.0, when - asyncio.get_running_loop().time())
        limit.reschedule(None)
