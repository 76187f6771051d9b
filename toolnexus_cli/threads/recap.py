"""What a continued thread brings along: its last exchange, shown when the chat picks it up,
and the system prompt it was given (kept in the thread as a marked system message)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from toolnexus import Message
from toolnexus.app_support import DROPPED_KEY, SYSTEM_PROMPT, last_prompt, sendable, visible

from ..render.words import counted
from .transcript import content_text

if TYPE_CHECKING:
    from rich.console import Console

QUESTION_LINES = 3  # of the last question, at most


def recorded_system(messages: list[Message]) -> str | None:
    """The system prompt the thread was last given, if any."""
    for message in reversed(messages):
        if message.get(DROPPED_KEY) == SYSTEM_PROMPT:
            return content_text(message.get("content"))
    return None


def system_record(text: str) -> Message:
    """The message that gives a thread its system prompt from here on (it is not sent as a
    message: the request carries it as the system prompt)."""
    return {"role": "system", "content": text, DROPPED_KEY: SYSTEM_PROMPT}


def last_exchange(messages: list[Message]) -> tuple[str, str] | None:
    """The last question the thread holds and the last answer text after it."""
    held = sendable(messages)
    start = last_prompt(held)
    if start is None:
        return None
    answers = [
        content_text(m.get("content")) for m in held[start + 1 :] if m.get("role") == "assistant"
    ]
    return content_text(held[start].get("content")), next(
        (text for text in reversed(answers) if text.strip()), ""
    )


def show_last_exchange(
    console: Console, messages: list[Message], thread: str, code_theme: str
) -> None:
    """The last exchange, as it was shown when it happened, cut to about a screenful (the
    end of the answer, where the thread goes on)."""
    from rich.segment import Segment, Segments
    from rich.text import Text

    from ..render.chat_markdown import ChatMarkdown

    exchange = last_exchange(messages)
    if exchange is None:
        return
    question, answer = exchange
    lines = visible(question).splitlines() or [""]
    shown = "\n".join(lines[:QUESTION_LINES]) + (" …" if len(lines) > QUESTION_LINES else "")
    console.print(Text(f"last in thread {thread}:", style="dim"))
    console.print(Text(f"  › {shown}", style="dim"))
    if not answer.strip():
        return
    rendered = console.render_lines(ChatMarkdown(visible(answer), code_theme=code_theme), pad=False)
    room = max(4, console.height - QUESTION_LINES - 4)
    if len(rendered) > room:
        console.print(
            Text(
                f"… {counted(len(rendered) - room, 'line')} above "
                f"(threads show {thread} shows them all)",
                style="dim",
            )
        )
        rendered = rendered[-room:]
    console.print(Segments([segment for line in rendered for segment in (*line, Segment.line())]))
