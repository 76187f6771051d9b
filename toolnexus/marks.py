"""Messages a thread keeps but no longer sends: undone or retried exchanges, failed turns.

A stored thread is append-only history: nothing a user or model said is deleted by the
program. Dropping an exchange marks its messages instead (the key DROPPED_KEY, whose
value says why); the loop sends only unmarked messages, and `threads show` can still show
the marked ones. Marks are only ever added, always to a run of messages that starts at a
user message, so what is sent stays a valid transcript. One kind of message is stored
marked from the start: a system prompt the thread was given (SYSTEM_PROMPT), which goes
out as the request's system prompt rather than as a message.
"""

from __future__ import annotations

from typing import Any

Message = dict[str, Any]

DROPPED_KEY = "dropped"
# On an assistant message cut short by cancel or a deadline (it is kept and sent).
INTERRUPTED_KEY = "interrupted"
UNDONE = "undone"  # /undo
RETRIED = "retried"  # /retry asked the same question again
FAILED = "failed"  # the turn ended in an error; /retry offers its prompt
SYSTEM_PROMPT = "system prompt"  # on a system message: the thread's system prompt from here on


def is_sent(message: Message) -> bool:
    """True if the message goes to the model (it carries no mark)."""
    return not message.get(DROPPED_KEY)


def sendable(messages: list[Message]) -> list[Message]:
    """The messages a request carries: every unmarked one, in order."""
    return [m for m in messages if not m.get(DROPPED_KEY)]


def last_prompt(messages: list[Message], *, failed_too: bool = False) -> int | None:
    """The index of the last unmarked user message (with `failed_too`: or the last one
    marked failed, whichever is later); None if there is none."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "user" and (
                is_sent(message) or (failed_too and message.get(DROPPED_KEY) == FAILED)):
            return index
    return None


def mark_from(messages: list[Message], start: int, reason: str) -> list[Message]:
    """A new list: `messages` with every unmarked message from `start` on marked `reason`
    (new dicts for those; the others are the same objects)."""
    return messages[:start] + [
        {**m, DROPPED_KEY: reason} if is_sent(m) else m for m in messages[start:]]


def mark_failed_turn(messages: list[Message]) -> list[Message]:
    """The transcript of a run that failed. A prompt nothing came back for is marked
    failed: kept, shown, offered by /retry, never sent again by itself. A turn that got
    somewhere (tools ran, part of an answer was shown, kept marked interrupted) stays as
    it is, so the next turn goes on from what happened."""
    start = last_prompt(messages)
    if start is None or start != len(messages) - 1:
        return messages
    return mark_from(messages, start, FAILED)
