"""How the context window shows: token counts, the line an automatic compaction prints,
`/context`, and the rule that marks a compaction record in a transcript. Message
numbers are 1-based thread positions, as `threads show` numbers them and `/pin` takes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolnexus.app_support import COMPACTION_KEY

from .words import counted

if TYPE_CHECKING:
    from collections.abc import Mapping

    from toolnexus.context.keeper import ContextReport
    from toolnexus.types import CompactingEvent, CompactionEvent

    from ..session.instructions import Instructions

SOURCES = {
    "explicit": "set in the config",
    "overflow": "learned from an overflow error of the endpoint",
    "endpoint": "from the endpoint's model listing",
    "table": "from the built-in table of common models",
}


def tokens(count: float) -> str:
    """3,900 -> "3.9k"; below a thousand the number itself."""
    return f"{count / 1000:.1f}k" if count >= 1000 else f"{round(count)}"


def span(numbers: list[int]) -> str:
    """Thread indices as 1-based message numbers: "3–17", or "3" alone."""
    first, last = min(numbers) + 1, max(numbers) + 1
    return f"{first}–{last}" if last > first else f"{first}"


def _how(method: str, summarized: int, dropped: int) -> str:
    if method == "summary" or not dropped:
        return "summary"
    if dropped >= summarized:
        return "dropped: the summary did not fit"
    return f"summary; the {dropped} oldest dropped: they did not fit"


def compacting_note(event: CompactingEvent) -> str:
    """What the live line says while an automatic compaction asks for its summary."""
    count = event["messages"]
    return f"compacting {counted(count, 'earlier message')}"


def compaction_note(event: CompactionEvent) -> str:
    """The one line an automatic compaction prints."""
    summarized = event["summarized"]
    return (
        f"compacted {counted(summarized, 'earlier message')}: "
        f"{tokens(event['before_tokens'])} → {tokens(event['after_tokens'])} tokens "
        f"({_how(event['method'], summarized, event['dropped'])})"
    )


def fill_text(report: ContextReport) -> str:
    """ "~3.1k / 4.1k tokens, 76%" ("~": partly estimated); without a window, the fill."""
    fill = ("~" if report.estimated else "") + tokens(report.fill)
    if not report.window or report.percent is None:
        return f"{fill} tokens"
    return f"{fill} / {tokens(report.window)} tokens, {report.percent:.0f}%"


def context_lines(report: ContextReport) -> list[str]:
    """What `/context` says: the window and where it came from, the fill, what the next
    compaction would summarize."""
    if report.window:
        source = SOURCES.get(report.window_source, report.window_source)
        window = f"window: {report.window:,} tokens ({source})"
    else:
        window = (
            "window: unknown (the endpoint does not say; the first overflow error "
            "will tell, or set context_window in the config)"
        )
    fill = f"fill: {fill_text(report)} in {counted(report.sent_messages, 'message')}"
    if report.estimated:
        fill += (
            f" (~: {tokens(report.fill - report.counted)} of it estimated at 4 characters a token)"
        )
    lines = [window, fill]
    if report.tools_deferred:
        lines.append(
            f"tool search: {counted(report.tools_deferred, 'MCP tool')} named only, "
            f"~{tokens(report.tools_saved)} tokens of schemas not sent"
        )
    if report.limit is not None:
        reply = f", less {tokens(report.reply_budget)} for the reply" if report.reply_budget else ""
        lines.append(f"compacts before a request above {tokens(report.limit)} tokens{reply}")
    if report.would_summarize:
        count = len(report.would_summarize)
        kept = f"; {len(report.kept)} in that range stay verbatim" if report.kept else ""
        lines.append(
            f"next compaction would summarize {counted(count, 'message')} "
            f"({span(report.would_summarize)}){kept}"
        )
    else:
        lines.append(
            "next compaction would summarize nothing: every message sent is "
            "recent, pinned or the first prompt"
        )
    return lines


def instruction_lines(instructions: Instructions) -> list[str]:
    """Each project instruction file in the system prompt, with its tokens (estimated at
    4 characters a token, its imports included)."""
    if not instructions.files:
        return ["project instructions: none found"]
    lines = ["project instructions (in the system prompt):"]
    for found in instructions.files:
        imports = len(found.sources) - 1
        also = f", with {counted(imports, 'import')}" if imports else ""
        lines.append(f"  {found.path}: ~{tokens(-(-len(found.text) // 4))} tokens{also}")
    return lines


def record_rule(record: Mapping[str, Any]) -> str:
    """ "── summary of messages 3–17 (3.9k → 1.2k tokens, model) ──" for a record."""
    info = record.get(COMPACTION_KEY)
    info = info if isinstance(info, dict) else {}
    bounds = info.get("summarized")
    where = (
        span([bounds[0], bounds[1]])
        if isinstance(bounds, list) and len(bounds) == 2 and all(type(b) is int for b in bounds)
        else "?"
    )
    figures = [
        f"{tokens(info['before_tokens'])} → {tokens(info['after_tokens'])} tokens"
        if type(info.get("before_tokens")) is int and type(info.get("after_tokens")) is int
        else "",
        str(info.get("model") or ""),
    ]
    kept = info.get("kept")
    if isinstance(kept, list) and kept:
        figures.append(f"{len(kept)} kept verbatim")
    detail = ", ".join(f for f in figures if f)
    left_out = info.get("method") == "dropped" and info.get("dropped") == info.get("messages")
    what = "left out: messages" if left_out else "summary of messages"
    return f"── {what} {where}" + (f" ({detail})" if detail else "") + " ──"
