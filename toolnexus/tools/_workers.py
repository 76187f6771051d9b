"""Sync tools run off the event loop, in worker threads kept for the next call.

`asyncio.to_thread` goes through an executor: a work item, a concurrent future chained to
an asyncio one, locks and a semaphore in Python on both sides, for every call. Here a
call is one queue put, and its outcome one `call_soon_threadsafe`. As with `to_thread`,
the caller may stop waiting (a cancel, a tool's time limit) while the function goes on in
its thread; that worker is busy until it returns, and the next call takes another one.
Workers are daemon threads: a function that never returns does not keep the process
alive after the event loop is gone.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_MAX_IDLE = 4  # workers kept waiting for a call; a busier moment starts more
_Job = tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[[], Any]]

_idle: list[_Worker] = []
_idle_lock = threading.Lock()


def _forget_workers() -> None:
    """In a forked child: the parent's threads did not come along."""
    global _idle_lock
    _idle.clear()
    _idle_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_workers)


class _Worker(threading.Thread):
    def __init__(self) -> None:
        super().__init__(name="toolnexus-tool", daemon=True)
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()

    def run(self) -> None:
        while True:
            loop, future, call = self.jobs.get()
            try:
                outcome: tuple[Any, BaseException | None] = (call(), None)
            except BaseException as exc:  # handed to the caller, as to_thread does
                outcome = (None, exc)
            del call  # nothing of the call is held while idle
            with _idle_lock:
                retire = len(_idle) >= _MAX_IDLE
                if not retire:
                    _idle.append(self)
            _settle_soon(loop, future, outcome)
            if retire:
                return


def _settle_soon(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    outcome: tuple[Any, BaseException | None],
) -> None:
    try:
        loop.call_soon_threadsafe(_settle, future, outcome)
    except RuntimeError:  # the loop closed while the function ran: nobody waits
        pass


def _settle(future: asyncio.Future[Any], outcome: tuple[Any, BaseException | None]) -> None:
    if future.done():  # the caller stopped waiting
        return
    value, error = outcome
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


async def run_in_worker(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)` in a worker thread, in a copy of this context (as
    `asyncio.to_thread`)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()
    call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
    with _idle_lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
        worker.jobs.put((loop, future, call))
        worker.start()
    else:
        worker.jobs.put((loop, future, call))
    return await future
