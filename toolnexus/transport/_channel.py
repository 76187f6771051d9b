"""The bounded channel a response's body goes through, from the task that reads the network
to the run that consumes it: a cancel or a deadline wakes the consumer at once, and a fast
server cannot outrun a slow consumer.
"""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from typing import Any

HEAD, DATA, END, FAIL, STOP = range(5)


class Channel:
    """A bounded single-producer, single-consumer queue whose consumer can be woken
    by an interruption even while the queue is empty or full."""

    def __init__(self, limit: int | None = 64) -> None:
        """`limit`: the items held before `put` waits (None: it never waits)."""
        self._items: deque[tuple[Any, ...]] = deque()
        self._limit = limit if limit is not None else sys.maxsize
        self._getter: asyncio.Future[None] | None = None
        self._putter: asyncio.Future[None] | None = None

    @staticmethod
    def _wake(waiter: asyncio.Future[None] | None) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def put(self, item: tuple[Any, ...]) -> None:
        while not self.offer(item):
            self._putter = asyncio.get_running_loop().create_future()
            await self._putter

    def offer(self, item: tuple[Any, ...]) -> bool:
        """Queue `item` unless the queue is full (then False): `put` without a coroutine,
        for a producer that mostly finds room (one item per chunk of a stream)."""
        if len(self._items) >= self._limit:
            return False
        self._items.append(item)
        self._wake(self._getter)
        return True

    def interrupt(self) -> None:
        self._items.appendleft((STOP,))
        self._wake(self._getter)

    async def get(self) -> tuple[Any, ...]:
        while not self._items:
            self._getter = asyncio.get_running_loop().create_future()
            await self._getter
        item = self._items.popleft()
        self._wake(self._putter)
        return item

    def unget(self, items: list[tuple[Any, ...]]) -> None:
        """Put items taken with `get` back at the front, in their order."""
        self._items.extendleft(reversed(items))

    def take_data(self) -> list[bytes]:
        """The data items at the front of the queue, without waiting: a reader that
        fell behind handles everything already received in one go."""
        items, taken = self._items, []
        while items and items[0][0] == DATA:
            taken.append(items.popleft()[1])
        if taken:
            self._wake(self._putter)
        return taken


def hang_up(producer: asyncio.Task[None]) -> None:
    """Cancel the read once: a second cancel could interrupt the clean-up that closes
    the connection."""
    if not producer.done() and not producer.cancelling():
        producer.cancel()
