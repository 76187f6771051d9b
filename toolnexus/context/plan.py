"""Planning a compaction: which older turns a summary stands in for so the request gets under
its target, and what is worked out before the summary is asked for (Draft) and after
(Compaction). Sent verbatim: system messages, the first prompt, pinned messages, the last
prompt, and the newest whole groups that fit (a tool call is never parted from its
results)."""

from __future__ import annotations

from dataclasses import dataclass

from ..events import compaction_event
from ..types import CompactionEvent, CompactionInfo, CompactionReason, Message, UserMessage
from ._estimate import message_tokens
from ._marks import (
    COMPACTION_KEY,
    PINNED_KEY,
    Span,
    is_prompt,
)

__all__ = [
    "Compaction",
]


@dataclass(frozen=True, slots=True)
class Plan:
    """Which messages a compaction summarizes and which it keeps verbatim."""

    summarize: list[int]  # thread indices, in sent order (an older record counts as one)
    kept: list[int]  # thread indices inside the span that stay verbatim
    first: int
    last: int
    kept_tokens: int  # what stays, system and tools included
    first_prompt_kept: bool


def _units(messages: list[Message], order: list[int]) -> list[tuple[int, int]]:
    """The sent order cut into groups [start, end) of positions: a tool call with its
    results is one group, any other message is one."""
    units, pos, count = [], 0, len(order)
    while pos < count:
        end = pos + 1
        if messages[order[pos]].get("tool_calls"):
            while end < count and messages[order[end]].get("role") == "tool":
                end += 1
        units.append((pos, end))
        pos = end
    return units


@dataclass(frozen=True, slots=True)
class Budget:
    """Request sizes in tokens: compact above `limit`, down to `target`; nothing larger
    than `hard` can be sent at all (the window less the reply's share)."""

    limit: float
    target: float
    hard: float


def plan_compaction(
    messages: list[Message],
    order: list[int],
    spans: list[Span],
    *,
    fixed: int,
    budget: Budget,
    reserve: int,
    keep_last: int,
    scale: float = 1.0,
    keep_first: bool = True,
) -> Plan | None:
    """What to summarize so the request gets under the target (the summary's `reserve`
    included); None if nothing can be. The first prompt stays (with `keep_first`) unless it
    cannot be sent with what must stay."""
    tokens = [message_tokens(messages[i]) * scale for i in order]
    units = _units(messages, order)
    unit_tokens = [sum(tokens[s:e]) for s, e in units]
    prompts = [u for u, (s, _) in enumerate(units) if is_prompt(messages[order[s]])]
    keep: set[int] = set(prompts[-1:])
    for u, (s, e) in enumerate(units):
        group = [messages[order[p]] for p in range(s, e)]
        if any(m.get(PINNED_KEY) or m.get("role") == "system" for m in group):
            keep.add(u)
    kept_tokens = fixed + reserve + sum(unit_tokens[u] for u in keep)
    first_kept = False
    if prompts and (
        prompts[0] in keep or keep_first and kept_tokens + unit_tokens[prompts[0]] <= budget.hard
    ):
        first_kept = True
        if prompts[0] not in keep:
            keep.add(prompts[0])
            kept_tokens += unit_tokens[prompts[0]]
    turn = 1
    for u in range(len(units) - 1, -1, -1):
        start = messages[order[units[u][0]]]
        if u not in keep:
            if (
                COMPACTION_KEY in start
                or turn > keep_last
                or kept_tokens + unit_tokens[u] > budget.target
            ):
                break
            keep.add(u)
            kept_tokens += unit_tokens[u]
        if is_prompt(start):
            turn += 1
    summarize = [order[p] for u, (s, e) in enumerate(units) if u not in keep for p in range(s, e)]
    if not summarize:
        return None
    by_record = {span.record: span for span in spans}
    first = min(by_record[i].first if i in by_record else i for i in summarize)
    last = max(summarize)
    chosen = set(summarize)
    kept = [i for i in order if first <= i <= last and i not in chosen]
    return Plan(summarize, kept, first, last, round(kept_tokens - reserve), first_kept)


@dataclass(frozen=True, slots=True)
class Draft:
    """A compaction worked out but not made yet: what it summarizes (`plan`), those
    messages as the summarizer reads them (`lines`, of which the ones before `start` do
    not fit its request and are left out), and what its record will say."""

    plan: Plan
    lines: list[str]
    start: int
    before: int  # tokens of the request before it
    reason: CompactionReason
    reserve: int  # tokens the summary may take
    hard: float  # tokens the request must stay under
    scale: float  # what the endpoint counts over the characters/4 estimate
    instructions: str | None = None
    fallback: Draft | None = None  # the same, summarizing the first prompt too

    @property
    def messages(self) -> int:
        """How many thread messages it summarizes (or leaves out)."""
        return len(self.plan.summarize)


@dataclass(frozen=True, slots=True)
class Compaction:
    """A compaction worked out for a thread: `record` is the message that stands in for
    what it summarizes. Made by ContextKeeper.compact (a preview: nothing applied yet)
    or automatically; `apply` adds it to the thread it was made for."""

    record: UserMessage
    thread_length: int  # the thread's length when it was made

    @property
    def info(self) -> CompactionInfo:
        info = self.record.get(COMPACTION_KEY)
        assert info is not None, "a compaction's record is made with what it summarizes"
        return info

    @property
    def summary(self) -> str:
        return str(self.record["content"])

    def event(self) -> CompactionEvent:
        info = self.info
        return compaction_event(
            info["before_tokens"],
            info["after_tokens"],
            info["messages"],
            method=info["method"],
            dropped=info["dropped"],
            reason=info["reason"],
        )

    def apply(self, messages: list[Message]) -> list[Message]:
        return apply_compaction(messages, self)


def apply_compaction(messages: list[Message], compaction: Compaction) -> list[Message]:
    """A new list: `messages` with the compaction's record appended. Refused (ValueError)
    if the thread is not the one it was worked out for."""
    if len(messages) != compaction.thread_length:
        raise ValueError("the thread changed since this compaction was worked out: compact again")
    return [*messages, compaction.record]
