"""Usage arithmetic, why a run ended incomplete, and the makers of the events the loop
yields (their types, and RunResult, are in toolnexus.types)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from .journal.changes import ChangeSet
from .types import (
    CompactingEvent,
    CompactionEvent,
    CompactionMethod,
    CompactionReason,
    DoneEvent,
    IncompleteReason,
    McpLogEvent,
    PendingEvent,
    ReasoningEvent,
    Request,
    RetryEvent,
    RunResult,
    TextEvent,
    ToolCallEvent,
    ToolOutputEvent,
    ToolProgressEvent,
    ToolResultEvent,
    Usage,
    UsageEvent,
    WaitingEvent,
)

__all__ = [
    "CONTEXT_FULL",
    "CUT_OFF",
    "FILTERED",
    "MAX_TOKENS",
    "MAX_TURNS",
    "REFUSED",
    "add_usage",
    "compacting_event",
    "compaction_event",
    "done_event",
    "empty_usage",
    "mcp_log_event",
    "pending_event",
    "reasoning_event",
    "retry_event",
    "text_event",
    "tool_call_event",
    "tool_output_event",
    "tool_progress_event",
    "tool_result_event",
    "usage_event",
    "waiting_event",
]


def empty_usage() -> Usage:
    return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def add_usage(total: Usage, turn: Usage) -> None:
    """Add one turn's usage into `total` in place (every numeric key is summed)."""
    for key, value in turn.items():
        if isinstance(value, int):
            total[key] = total.get(key, 0) + value


# why a run ended incomplete (RunResult.incomplete_reason)
MAX_TURNS: Final[IncompleteReason] = "max_turns"
MAX_TOKENS: Final[IncompleteReason] = "max_tokens"  # cut off by the reply's length limit
CONTEXT_FULL: Final[IncompleteReason] = "context_window"  # the context window filled up
FILTERED: Final[IncompleteReason] = "content_filter"  # stopped or emptied by the content filter
# the model refused: the exchange is kept, marked, and not sent again
REFUSED: Final[IncompleteReason] = "refused"
# stopped by the provider for another reason (finish_reason says which)
CUT_OFF: Final[IncompleteReason] = "cut_off"


def text_event(delta: str) -> TextEvent:
    return {"type": "text", "delta": delta}


def reasoning_event(delta: str) -> ReasoningEvent:
    return {"type": "reasoning", "delta": delta}


def tool_call_event(call_id: str, name: str, args: Any) -> ToolCallEvent:
    return {"type": "tool_call", "id": call_id, "name": name, "args": args}


def tool_result_event(
    call_id: str,
    name: str,
    output: str,
    is_error: bool,
    attachments: list[str] | None = None,
    changes: ChangeSet | None = None,
    exit_code: int | None = None,
    signal: str | None = None,
    shown: str | None = None,
) -> ToolResultEvent:
    """`attachments` (short labels such as "image 512x512 png") and `changes` (the files
    the call changed) only when there are any; `exit_code` and `signal` only for a call
    that ran a command (how it ended); `shown` only when the person is shown something
    else than the model gets (MCP content annotated for one of them)."""
    event: ToolResultEvent = {
        "type": "tool_result",
        "id": call_id,
        "name": name,
        "output": output,
        "is_error": is_error,
    }
    if attachments:
        event["attachments"] = attachments
    if changes is not None and changes.changes:
        event["changes"] = changes
    if exit_code is not None:
        event["exit_code"] = exit_code
    if signal is not None:
        event["signal"] = signal
    if shown is not None:
        event["shown"] = shown
    return event


def pending_event(request: Request) -> PendingEvent:
    return {"type": "pending", "request": request}


def retry_event(attempt: int, max_attempts: int, delay: float, reason: str) -> RetryEvent:
    """Retry number `attempt` of at most `max_attempts` comes after `delay` seconds."""
    return {
        "type": "retry",
        "attempt": attempt,
        "max_attempts": max_attempts,
        "delay": delay,
        "reason": reason,
    }


def compacting_event(messages: int) -> CompactingEvent:
    """A compaction of `messages` older thread messages starts (a summary is asked for);
    a `compaction` event follows when it is made."""
    return {"type": "compacting", "messages": messages}


def compaction_event(
    before_tokens: int,
    after_tokens: int,
    summarized: int,
    *,
    method: CompactionMethod,
    dropped: int,
    reason: CompactionReason,
) -> CompactionEvent:
    """Older turns were summarized (or, with method "dropped", partly left out) for
    sending; `summarized` counts the thread messages the summary stands in for, `dropped`
    those of them left out without a summary. Token counts are estimates."""
    return {
        "type": "compaction",
        "before_tokens": before_tokens,
        "after_tokens": after_tokens,
        "summarized": summarized,
        "method": method,
        "dropped": dropped,
        "reason": reason,
    }


def waiting_event(
    sources: list[str], limit: float | None = None, late: list[str] | None = None
) -> WaitingEvent:
    return {"type": "waiting", "sources": sources, "limit": limit, "late": late or []}


def tool_progress_event(
    call_id: str, name: str, message: str, progress: float | None, total: float | None
) -> ToolProgressEvent:
    return {
        "type": "tool_progress",
        "id": call_id,
        "name": name,
        "message": message,
        "progress": progress,
        "total": total,
    }


def mcp_log_event(server: str, message: str) -> McpLogEvent:
    return {"type": "mcp_log", "server": server, "message": message}


def tool_output_event(call_id: str, name: str, text: str) -> ToolOutputEvent:
    return {"type": "tool_output", "id": call_id, "name": name, "text": text}


def usage_event(usage: Usage) -> UsageEvent:
    return {"type": "usage", "usage": dict(usage)}


def done_event(result: RunResult) -> DoneEvent:
    return {"type": "done", "result": result}
