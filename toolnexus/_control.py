"""Run control: one object per run that turns a cancel event or a deadline into an
interruption every wait in the run honours (HTTP reads, backoff sleeps, tools)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Literal, TypeVar

from .errors import RunCancelled, RunTimeout, ToolnexusError

T = TypeVar("T")
Interruption = Literal["cancelled", "timeout"]  # why a run was interrupted


class RunControl:
    def __init__(self, cancel: asyncio.Event | None, deadline: float | None) -> None:
        self.reason: Interruption | None = None  # once interrupted
        self.deadline = deadline
        loop = asyncio.get_running_loop()
        # What the deadline allowed, for the message (rounded: it was set a moment ago).
        self._budget = None if deadline is None else round(deadline - loop.time(), 1)
        self._callbacks: list[Callable[[], None]] = []
        self._closers: list[Callable[[], None]] = []
        self._watcher: asyncio.Task[Any] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._cancel = cancel
        if cancel is not None:
            if cancel.is_set():
                self.reason = "cancelled"
            else:
                self._watcher = loop.create_task(cancel.wait())
                self._watcher.add_done_callback(self._on_cancel)
        if deadline is not None and self.reason is None:
            self._timer = loop.call_at(deadline, self._fire, "timeout")

    def _on_cancel(self, task: asyncio.Task[Any]) -> None:
        if not task.cancelled():
            self._fire("cancelled")

    def _fire(self, reason: Interruption) -> None:
        if self.reason is None:
            self.reason = reason
            for callback in list(self._callbacks):
                callback()

    def remaining(self) -> float | None:
        if self.deadline is None:
            return None
        return self.deadline - asyncio.get_running_loop().time()

    def error(self) -> ToolnexusError:
        if self.reason == "timeout":
            return RunTimeout(
                f"the run timed out after {self._budget:g} s (its deadline, "
                "Timeouts.run_s or timeout_ms, passed)",
                seconds=self._budget,
            )
        return RunCancelled()

    def check(self) -> None:
        # The watcher task notices a set event only on a later loop iteration; a cancel
        # set just now (say, by the consumer of the last event) must stop the next step.
        if self.reason is None and self._cancel is not None and self._cancel.is_set():
            self._fire("cancelled")
        if self.reason is not None:
            raise self.error()

    def subscribe(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` on interruption; returns the function that unsubscribes (safe
        to call more than once, and after `close`)."""
        return _register(self._callbacks, callback)

    def on_close(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` when the run ends, however it ends; returns the function that
        forgets it. Work the run started but may not see to its end (an HTTP read left
        suspended in a generator nobody closes) uses this to stop at once."""
        return _register(self._closers, callback)

    async def race(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable`, or abandon (cancel) it and raise when the run is interrupted."""
        try:
            self.check()
        except BaseException:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()  # never started: no "never awaited" warning
            raise
        task = asyncio.ensure_future(awaitable)
        if task.done():  # a finished future: nothing to wait for, nothing to interrupt
            return task.result()
        try:
            await self.first_done(task)
        finally:
            if not task.done():
                # Interrupted: whatever the abandoned work ends with (cancelled, a
                # CancelledError stored by gather, a late result) the run ends here.
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            elif not task.cancelled():
                # Done as the interruption came: its error (if any) is the run's to drop,
                # not asyncio's to print as "never retrieved" when the task is collected.
                task.exception()
        return task.result()

    @contextlib.contextmanager
    def interrupting(self) -> Iterator[None]:
        """Inside, an interruption of the run cancels the current task, and the cancel
        comes out as the run's error: as `asyncio.timeout` does it, so work that hands
        nothing over while it runs (a reply read whole) needs no task of its own to be
        abandoned. A cancel of the task from elsewhere goes on up as it is."""
        self.check()
        task = asyncio.current_task()
        assert task is not None
        fired = False

        def interrupt() -> None:
            nonlocal fired
            # Called from a callback of the loop (the cancel event's watcher, the timer)
            # or another task: this task is suspended inside, where the cancel lands.
            if task is not asyncio.current_task():
                fired = True
                task.cancel()

        unsubscribe = self.subscribe(interrupt)
        try:
            yield
        except asyncio.CancelledError:
            if fired and task.uncancel() == 0:
                raise self.error() from None
            raise
        else:
            if fired:  # the work inside swallowed the cancel: the run still ends here
                task.uncancel()
                raise self.error()
        finally:
            unsubscribe()

    async def first_done(self, *futures: asyncio.Future[Any]) -> None:
        """Wait until one of `futures` is done, or raise when the run is interrupted
        first (the futures are left as they are)."""
        self.check()
        if any(future.done() for future in futures):
            return
        woken = asyncio.get_running_loop().create_future()

        def wake(_: object = None) -> None:
            if not woken.done():
                woken.set_result(None)

        for future in futures:
            future.add_done_callback(wake)
        unsubscribe = self.subscribe(wake)
        try:
            await woken
        finally:
            unsubscribe()
            for future in futures:
                future.remove_done_callback(wake)
        if not any(future.done() for future in futures):
            raise self.error()

    async def sleep(self, delay: float) -> None:
        await self.race(asyncio.sleep(max(0.0, delay)))

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
        if self._timer is not None:
            self._timer.cancel()
        self._callbacks.clear()
        closers, self._closers = self._closers, []
        for closer in closers:
            closer()


def _register(
    callbacks: list[Callable[[], None]], callback: Callable[[], None]
) -> Callable[[], None]:
    callbacks.append(callback)

    def remove() -> None:
        if callback in callbacks:
            callbacks.remove(callback)

    return remove
