"""The summary a compaction asks for: the transcript as the summarizer reads it, the one
request outside the agent loop that asks the model, and the record's text (cut to the
share it was asked for; or, when even the summary request cannot fit, a note that the
oldest turns were left out)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ProviderError
from ..transport import JsonReply, StreamEvents
from ..types import Message, calls_of
from ..wire._common import text_of
from ..wire.base import RequestOptions
from ._marks import (
    COMPACTION_KEY,
)

if TYPE_CHECKING:
    from .._control import RunControl
    from ..transport import Transport
    from ..wire import ModelReply
    from ..wire.base import WireStyle


class ModelTarget(Protocol):
    """What compaction needs to ask the model itself (the loop's LoopSettings is one):
    this module and _loop.py do not import each other."""

    wire: WireStyle
    url: str
    headers: dict[str, str]
    model: str
    transport: Transport
    request_params: dict[str, Any]


DEFAULT_SUMMARIZER_PROMPT = (
    "You write the running summary of a conversation between a user and an AI assistant, "
    "so that the assistant can go on without the full transcript. Keep, precisely and "
    "completely: every instruction, rule and preference the user gave (in their words); "
    "decisions made and why; names, numbers, file paths, identifiers, URLs, commands and "
    "code that matter; what tools found; and open tasks and questions, with their state. "
    "Leave out greetings, repetition and anything already settled that no longer matters. "
    "Write plain text in the conversation's language, as short as that allows."
)
SUMMARY_HEADER = "[summary of earlier conversation]"
LEFT_OUT_HEADER = "[earlier conversation left out]"
CUT_MARK = " [...]"  # ends a summary cut to the share it was asked for


SUMMARY_TOKENS = 1024  # the summary's share of the window, at most (an eighth on small ones)


# Output-shaping request parameters that would bend the summary's reply out of shape.
_NOT_FOR_SUMMARY = frozenset({"response_format", "text", "tool_choice", "parallel_tool_calls"})
REPLY_BUDGET_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def summary_line(message: Message) -> str:
    """One message as a line of the transcript the summarizer reads."""
    text = (
        text_of(message.get("content"))
        if not isinstance(message.get("content"), str)
        else message["content"]
    )
    if COMPACTION_KEY in message:
        return f"Summary of what came before: {text}"
    role = message.get("role")
    if role == "assistant":
        lines = [f"Assistant: {text}"] if text else []
        for call in calls_of(message):
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                lines.append(f"Assistant called the tool {fn.get('name')}({fn.get('arguments')})")
        return "\n".join(lines)
    label = {"user": "User", "tool": "Tool result", "system": "System"}.get(str(role), "Note")
    return f"{label}: {text}"


def summary_request(lines: list[str], instructions: str | None) -> str:
    also = f" Also: {instructions.strip()}" if instructions and instructions.strip() else ""
    body = "\n\n".join(lines)
    return f"Summarize the conversation below.{also}\n\n<conversation>\n{body}\n</conversation>"


async def ask_model(
    settings: ModelTarget, control: RunControl, system: str, text: str, max_tokens: int
) -> ModelReply:
    """One non-streaming request without tools (the summary), outside the agent loop:
    no hooks, no turn; its reply asked to be at most `max_tokens` (under the budget key
    the client's own options use, else the style's)."""
    wire = settings.wire
    params = {k: v for k, v in settings.request_params.items() if k not in _NOT_FOR_SUMMARY}
    budget_key = next((k for k in REPLY_BUDGET_KEYS if k in params), wire.reply_budget_key)
    params = {k: v for k, v in params.items() if k not in REPLY_BUDGET_KEYS}
    params[budget_key] = max_tokens
    body = wire.build_body(
        model=settings.model,
        messages=[{"role": "user", "content": text}],
        system=system,
        tools=[],
        stream=False,
        # asked once: writing it to a prompt cache would only cost more
        options=RequestOptions(params=params, prompt_cache=False),
    )
    assembler = None
    replies = settings.transport.send(
        settings.url,
        settings.headers,
        body,
        control,
        stream_error=wire.stream_error,
        preamble=wire.preamble_events,
        stream_end=wire.stream_end,
    )
    async with contextlib.aclosing(replies):
        async for reply in replies:
            if isinstance(reply, JsonReply):
                return wire.parse_reply(reply.data)
            if isinstance(reply, StreamEvents):  # a server that streams whatever it was asked
                assembler = assembler or wire.new_stream()
                for event, data in reply.events:
                    assembler.feed(event, data)
    if assembler is None:
        raise ProviderError("the endpoint sent no reply to the summary request")
    return assembler.finish()


def record_text(summary: str | None, dropped: int, total: int, limit: int) -> str:
    """A compaction record's text, at most `limit` characters when there is a summary: one
    longer than the share it was asked for (a verbose model) is cut to fit."""
    if summary is None:
        return (
            f"{LEFT_OUT_HEADER}\n{total} earlier messages were left out: they did not "
            "fit the model's context window, even to be summarized."
        )
    head = SUMMARY_HEADER + "\n"
    if dropped:
        head += (
            f"(The {dropped} oldest of these messages did not fit the model's context "
            "window and were left out.)\n"
        )
    if len(head) + len(summary) > limit:
        summary = summary[: max(0, limit - len(head) - len(CUT_MARK))].rstrip() + CUT_MARK
    return head + summary
