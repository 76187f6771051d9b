"""Messages a thread keeps but does not send: undone or retried exchanges, failed turns, and
older turns a compaction record stands in for; and pins, which keep a message verbatim.

A stored thread is append-only history: nothing a user or model said is deleted by the
program. Dropping an exchange marks its messages instead (the key DROPPED_KEY, whose
value says why); the loop sends only unmarked messages, and `threads show` can still show
the marked ones. Marks are only ever added, always to a run of messages that starts at a
user message, so what is sent stays a valid transcript. One kind of message is stored
marked from the start: a system prompt the thread was given (SYSTEM_PROMPT), which goes
out as the request's system prompt rather than as a message.

A compaction record (a user message carrying COMPACTION_KEY, appended after the turns it
summarizes) is sent in place of the thread messages `summarized` spans, at the position
of the first of them; the messages it lists as `kept`, and pinned ones, are still sent. A
newer record that spans an older one supersedes it. Records are never prompts.

A notice (a user message carrying NOTICE_KEY) is what the program told the model about its
tools (an MCP server went down or came back); it is sent, but it is no prompt either.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from ..types import DropReason, Message, UserMessage

DROPPED_KEY: Final = "dropped"
# On an assistant message cut short by cancel or a deadline (it is kept and sent).
INTERRUPTED_KEY: Final = "interrupted"
# why a message is no longer sent (its DROPPED_KEY)
UNDONE: Final[DropReason] = "undone"  # /undo
RETRIED: Final[DropReason] = "retried"  # /retry asked the same question again
FAILED: Final[DropReason] = "failed"  # the turn ended in an error; /retry offers its prompt
# the model refused the prompt: sending the exchange again invites more
REFUSED: Final[DropReason] = "refused"
# on a system message: the thread's system prompt from here on
SYSTEM_PROMPT: Final[DropReason] = "system prompt"
COMPACTION_KEY: Final = "compaction"  # on a record: what it summarizes (see plan.py)
FAILED_WITH_KEY: Final = "failed_with"  # on the prompt of a turn that ended in an error: the error
PINNED_KEY: Final = "pinned"  # sent verbatim, never summarized
NOTICE_KEY: Final = "notice"  # on a user message the program wrote for the model


def is_sent(message: Message) -> bool:
    """True if the message carries no drop mark (it goes to the model unless a
    compaction record stands in for it)."""
    return not message.get(DROPPED_KEY)


def is_record(message: Message) -> bool:
    return COMPACTION_KEY in message


def is_prompt(message: Message) -> bool:
    """A user message someone typed (not a compaction record, not a notice)."""
    return (
        message.get("role") == "user"
        and COMPACTION_KEY not in message
        and NOTICE_KEY not in message
    )


def notice(text: str) -> UserMessage:
    """A message telling the model something about its tools, from the program."""
    return {"role": "user", "content": f"(toolnexus, not the user: {text})", NOTICE_KEY: True}


class Span(NamedTuple):
    """An active compaction record: it stands in for messages[first..last]."""

    first: int
    last: int
    record: int  # the record's own index
    kept: frozenset[int]


def active_spans(messages: Sequence[Message]) -> list[Span]:
    """The records that currently stand in for older messages, ordered by position. A
    record that is marked, malformed, or overlapped by a newer record is not active."""
    records = [i for i, m in enumerate(messages) if COMPACTION_KEY in m]
    spans: list[Span] = []
    for index in reversed(records):
        span = _span_of(messages[index], index)
        if span is None or any(s.first <= span.last and span.first <= s.last for s in spans):
            continue
        spans.append(span)
    return sorted(spans)


def _span_of(record: Message, index: int) -> Span | None:
    info = record.get(COMPACTION_KEY)
    if record.get(DROPPED_KEY) or not isinstance(info, dict):
        return None
    bounds = info.get("summarized")
    if (
        not isinstance(bounds, list)
        or len(bounds) != 2
        or not all(type(b) is int for b in bounds)
        or not 0 <= bounds[0] <= bounds[1] < index
    ):
        return None
    kept = info.get("kept") or []
    kept = frozenset(k for k in kept if type(k) is int) if isinstance(kept, list) else frozenset()
    return Span(bounds[0], bounds[1], index, kept)


def sent_indices(messages: Sequence[Message], spans: list[Span] | None = None) -> list[int]:
    """The thread indices of what a request carries, in the order it carries them."""
    if spans is None:
        spans = active_spans(messages)
    if not spans:
        return [
            i for i, m in enumerate(messages) if not m.get(DROPPED_KEY) and COMPACTION_KEY not in m
        ]
    out: list[int] = []
    index, count = 0, len(messages)
    for span in spans:
        out.extend(i for i in range(index, span.first) if _plain_sent(messages[i]))
        out.append(span.record)
        out.extend(
            i
            for i in range(span.first, span.last + 1)
            if (i in span.kept or messages[i].get(PINNED_KEY)) and _plain_sent(messages[i])
        )
        index = span.last + 1
    out.extend(i for i in range(index, count) if _plain_sent(messages[i]))
    return out


def _plain_sent(message: Message) -> bool:
    return not message.get(DROPPED_KEY) and COMPACTION_KEY not in message


def sendable(messages: Sequence[Message]) -> list[Message]:
    """The messages a request carries: unmarked ones, with active compaction records in
    place of what they summarize."""
    return [messages[i] for i in sent_indices(messages)]


def last_prompt(messages: Sequence[Message], *, failed_too: bool = False) -> int | None:
    """The index of the last unmarked user prompt (with `failed_too`: or the last one
    marked failed, whichever is later); None if there is none."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if is_prompt(message) and (
            is_sent(message) or (failed_too and message.get(DROPPED_KEY) == FAILED)
        ):
            return index
    return None


def mark_from(messages: list[Message], start: int, reason: DropReason) -> list[Message]:
    """A new list: `messages` with every unmarked message from `start` on marked `reason`
    (new dicts for those; the others are the same objects)."""
    return messages[:start] + [_marked(m, reason) if is_sent(m) else m for m in messages[start:]]


def _marked(message: Message, reason: DropReason) -> Message:
    marked = message.copy()
    marked[DROPPED_KEY] = reason
    return marked


def mark_failed_turn(messages: list[Message], error: str | None = None) -> list[Message]:
    """The transcript of a run that failed, with `error` noted on its prompt. A prompt
    nothing came back for is marked failed: kept, shown, offered by /retry, never sent
    again by itself (a compaction made for it goes with it). A turn that got somewhere
    (tools ran, part of an answer was shown, kept marked interrupted) stays as it is, so
    the next turn goes on from what happened."""
    start = last_prompt(messages)
    if start is None:
        return messages
    prompt = messages[start]
    if error is not None and prompt["role"] == "user":  # last_prompt finds user messages
        messages = [*messages[:start], {**prompt, FAILED_WITH_KEY: error}, *messages[start + 1 :]]
    if not all(is_record(m) or NOTICE_KEY in m for m in messages[start + 1 :]):
        return messages
    return mark_from(messages, start, FAILED)


def failures_in_a_row(messages: Sequence[Message]) -> int:
    """How many of the thread's newest turns in a row ended in the same error as the
    last one (0: the last turn did not fail)."""
    errors = (m.get(FAILED_WITH_KEY) for m in reversed(messages) if is_prompt(m))
    last = next(errors, None)
    if last is None:
        return 0
    count = 1
    for error in errors:
        if error != last:
            break
        count += 1
    return count


def mark_refused_turn(messages: list[Message]) -> list[Message]:
    """The transcript of a run whose answer was a refusal: the exchange, from its prompt
    on, kept and marked refused, so that no later request carries it (Anthropic asks that
    a refused turn be left out or changed before going on)."""
    start = last_prompt(messages)
    return messages if start is None else mark_from(messages, start, REFUSED)


def pin(messages: list[Message], index: int) -> list[Message]:
    """A new list with message `index` pinned: sent verbatim by every compaction. A tool
    call and its results are one group and are pinned together."""
    return _set_pin(messages, index, True)


def unpin(messages: list[Message], index: int) -> list[Message]:
    """A new list with the pin on message `index` (and its tool group) taken off."""
    return _set_pin(messages, index, False)


def _set_pin(messages: list[Message], index: int, on: bool) -> list[Message]:
    if not 0 <= index < len(messages):
        raise ValueError(f"no message {index}: the thread has {len(messages)} (0-based)")
    if is_record(messages[index]):
        raise ValueError(f"message {index} is a compaction record, not something said")
    first, last = group_of(messages, index)
    return (
        messages[:first]
        + [_pinned(m, on) for m in messages[first : last + 1]]
        + messages[last + 1 :]
    )


def _pinned(message: Message, on: bool) -> Message:
    changed = message.copy()
    if on:
        changed[PINNED_KEY] = True
    else:
        changed.pop(PINNED_KEY, None)
    return changed


def group_of(messages: Sequence[Message], index: int) -> tuple[int, int]:
    """The first and last index of the group message `index` belongs to: an assistant
    message with tool calls and the tool results that follow it; else the message."""
    first = index
    if messages[index].get("role") == "tool":
        while first > 0 and messages[first].get("role") == "tool":
            first -= 1
        if not messages[first].get("tool_calls"):
            return index, index
    elif not messages[index].get("tool_calls"):
        return index, index
    last = first
    while last + 1 < len(messages) and messages[last + 1].get("role") == "tool":
        last += 1
    return first, last
