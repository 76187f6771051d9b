"""How fast a run went, measured honestly: each model call's generation (its first output
token to the end of its reply) apart from the reading of its prompt (the call sent to its
first token), so that a local server reading a long prompt for a minute does not make a
10 tok/s model look like a 1 tok/s one."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

from toolnexus import Event, Usage

# A call whose output all came within this is a reply read whole (a JSON answer to a
# streamed request), not a generation the clock can time.
SHORTEST_TIMED_S = 0.05


class CallClock(NamedTuple):
    """One model call on the monotonic clock."""

    sent: float  # when it was sent (after the wait of its last retry)
    first: float | None  # its first output token; None when none came (a tool call only)
    ended: float  # its reply's end, where its usage came
    deltas: int  # how many pieces of output came

    @property
    def timed(self) -> bool:
        return (
            self.first is not None
            and self.deltas >= 2
            and self.ended - self.first >= SHORTEST_TIMED_S
        )


class Speed(NamedTuple):
    """Over the calls that could be timed: the tokens they generated and how long that
    took, the prompt tokens they read (cache reads left out) and how long that took."""

    generated: int = 0
    generating: float = 0.0
    read: int = 0
    reading: float = 0.0

    @property
    def tokens_per_second(self) -> float | None:
        if not self.generated or not self.generating:
            return None
        return self.generated / self.generating

    @property
    def reading_dominates(self) -> bool:
        """Reading the prompt took longer than generating (and long enough to notice)."""
        return self.reading >= 1.0 and self.reading > self.generating


NO_SPEED = Speed()


def speed_of(calls: list[CallClock], snapshots: list[Usage]) -> Speed:
    """The speed of a run from its calls' clocks and the usage snapshots the loop sent
    (one per call, each the run's running total)."""
    generated = read = 0
    generating = reading = 0.0
    before: Usage = {}
    for call, after in zip(calls, snapshots, strict=False):
        used = {key: after.get(key, 0) - before.get(key, 0) for key in after}
        before = after
        if not call.timed or call.first is None:
            continue
        generated += used.get("completion_tokens", 0)
        generating += call.ended - call.first
        read += used.get("prompt_tokens", 0) - used.get("cached_tokens", 0)
        reading += call.first - call.sent
    return Speed(generated, generating, max(read, 0), reading)


class RunClock:
    """Fed a run's events as they pass: when each model call was sent, gave its first
    output and ended. A call is sent after whatever event came last before it (the run's
    start, a tool's result, a compaction), or after the wait of a retry."""

    def __init__(self, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self.started = now()
        self.calls: list[CallClock] = []
        self._sent = self.started
        self._first: float | None = None
        self._deltas = 0

    def see(self, event: Event) -> None:
        at = self.now()
        if event["type"] == "text" or event["type"] == "reasoning":
            if event["delta"]:
                self._first = at if self._first is None else self._first
                self._deltas += 1
            return
        if event["type"] == "usage":
            self.calls.append(CallClock(self._sent, self._first, at, self._deltas))
            self._first, self._deltas = None, 0
        self._sent = at + event["delay"] if event["type"] == "retry" else at
