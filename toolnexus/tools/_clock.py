"""Tools' time limits, held while the host answers what a running tool's server asked of
it (an MCP elicitation or sampling request): that time is a person's, or the model's, not
the tool's, so a form answered slowly does not fail the call that asked for it. The clocks
are an event loop's own: a hold in one loop never touches the timers of another."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Iterator


class _Clocks:
    __slots__ = ("running", "left", "holds")

    def __init__(self) -> None:
        self.running: set[asyncio.Timeout] = set()
        self.left: dict[asyncio.Timeout, float] = {}  # of each held limit
        self.holds = 0

    def hold(self, limit: asyncio.Timeout, now: float) -> None:
        when = limit.when()
        if when is not None and not limit.expired():
            self.left[limit] = max(0.0, when - now)
            limit.reschedule(None)


_clocks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Clocks] = weakref.WeakKeyDictionary()


def _of(loop: asyncio.AbstractEventLoop) -> _Clocks:
    return _clocks.setdefault(loop, _Clocks())


@contextlib.contextmanager
def counted(limit: asyncio.Timeout) -> Iterator[None]:
    """Inside an entered `limit`: it runs out only while nothing holds the clocks."""
    loop = asyncio.get_running_loop()
    clocks = _of(loop)
    clocks.running.add(limit)
    if clocks.holds:
        clocks.hold(limit, loop.time())
    try:
        yield
    finally:
        clocks.running.discard(limit)
        clocks.left.pop(limit, None)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """While the host answers a server's request: the loop's running tool clocks stop."""
    loop = asyncio.get_running_loop()
    clocks = _of(loop)
    clocks.holds += 1
    if clocks.holds == 1:
        for limit in clocks.running:
            clocks.hold(limit, loop.time())
    try:
        yield
    finally:
        clocks.holds -= 1
        if clocks.holds == 0:
            now = loop.time()
            for limit, left in clocks.left.items():
                limit.reschedule(now + left)
            clocks.left.clear()
