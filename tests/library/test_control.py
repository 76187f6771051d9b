"""RunControl (toolnexus/control.py): one run's cancel event and deadline, turned into an
interruption every wait in the run honours. The end-to-end view (a cancelled or timed-out
run against the stub) is tests/library/test_cancel.py and tests/library/test_timeouts.py."""

from __future__ import annotations

import asyncio
import gc
import warnings

import pytest

from toolnexus import RunCancelled, RunTimeout
from toolnexus._control import RunControl


def deadline_in(seconds: float) -> float:
    return asyncio.get_running_loop().time() + seconds


async def test_a_cancel_abandons_the_awaited_work():
    cancel = asyncio.Event()
    control = RunControl(cancel, None)
    started, abandoned = asyncio.Event(), asyncio.Event()

    async def work() -> str:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            abandoned.set()
            raise
        return "finished"

    async def cancel_once_started() -> None:
        await started.wait()
        cancel.set()

    setter = asyncio.create_task(cancel_once_started())
    with pytest.raises(RunCancelled):
        await control.race(work())
    await setter
    assert abandoned.is_set() and control.reason == "cancelled"
    control.close()


async def test_the_deadline_ends_a_sleep_with_a_timeout_naming_the_budget():
    control = RunControl(None, deadline_in(0.2))
    with pytest.raises(RunTimeout) as info:
        await control.sleep(3600)
    assert info.value.seconds == 0.2 and "timed out after 0.2 s" in str(info.value)
    assert control.reason == "timeout" and control.remaining() <= 0
    control.close()


async def test_a_cancel_set_just_now_stops_the_next_step():
    cancel = asyncio.Event()
    control = RunControl(cancel, None)
    control.check()  # nothing yet
    cancel.set()  # the watcher task has not run since
    with pytest.raises(RunCancelled):
        control.check()
    control.close()


async def test_an_already_set_cancel_never_starts_the_work():
    cancel = asyncio.Event()
    cancel.set()
    control = RunControl(cancel, None)
    ran = []

    async def work() -> None:
        ran.append(True)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(RunCancelled):
            await control.race(work())
        gc.collect()
    assert ran == [] and not [w for w in caught if "never awaited" in str(w.message)]
    control.close()


async def test_work_that_finishes_first_gives_its_result():
    control = RunControl(asyncio.Event(), deadline_in(3600))

    async def work() -> str:
        return "done"

    assert await control.race(work()) == "done"
    assert control.reason is None and control.remaining() > 3000
    control.close()


async def test_subscribers_hear_an_interruption_once_and_closers_run_at_close():
    cancel = asyncio.Event()
    control = RunControl(cancel, None)
    heard, forgotten, closed = [], [], []
    control.subscribe(lambda: heard.append("interrupted"))
    unsubscribe = control.subscribe(lambda: forgotten.append("interrupted"))
    unsubscribe()
    unsubscribe()  # twice is harmless
    control.on_close(lambda: closed.append("closed"))
    cancel.set()
    with pytest.raises(RunCancelled):
        await control.sleep(3600)
    assert heard == ["interrupted"] and forgotten == [] and closed == []
    control.close()
    control.close()
    assert closed == ["closed"]
