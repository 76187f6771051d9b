"""Tool search: when the MCP tools' schemas would take more than a share of the model's
context window, a request names those tools (one line each, in the description of a
`tool_search` tool) instead of carrying their schemas, and `tool_search` loads the full
schemas of the tools it finds. A tool once loaded stays offered for the rest of the thread,
after the tools offered from the start and in the order it was loaded: the tools list only
grows, so a provider's prompt cache of it stays valid. Built-in and other registered
tools are never deferred.

What a search loaded is kept on its result message in the thread (`LOADED_KEY`, never sent),
so a thread continued later, or on another client, offers the same tools."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..context._estimate import text_tokens
from ..types import Message
from ..wire import ToolSpec, WireStyle
from .tool import Tool, ToolResult

TOOL_SEARCH = "tool_search"
LOADED_KEY: Final = "loaded_tools"  # on a tool_search result: the tools it loaded
DEFAULT_SHARE = 0.10  # MCP schemas above this share of the window are deferred
UNKNOWN_WINDOW = 128_000  # the window assumed while the model's is not known
MAX_MATCHES = 5
LINE_CHARS = 100  # a deferred tool's one line of description, at most


@dataclass(frozen=True)
class Offer:
    """The tools one request carries; `deferred` tools are named only, their schemas
    (`saved_tokens`, about) left out."""

    specs: list[ToolSpec]
    searchable: list[Tool]
    deferred: int = 0
    saved_tokens: int = 0


def offer(
    tools: Sequence[Tool],
    messages: Sequence[Message],
    wire: WireStyle,
    *,
    share: float | None,
    window: int | None,
) -> Offer:
    """What to send: every tool, or, when the MCP tools' schemas would take more than
    `share` of `window` (None: tool search off), the others, `tool_search` and the MCP
    tools this thread has loaded."""
    specs = [_spec(tool) for tool in tools]
    mcp = [tool for tool in tools if tool.source.startswith("mcp")]
    if share is None or not mcp:
        return Offer(specs, [])
    cost = schema_tokens(wire, [_spec(tool) for tool in mcp])
    if cost <= share * (window or UNKNOWN_WINDOW):
        return Offer(specs, [])
    by_name = {tool.name: tool for tool in mcp}
    names = [name for name in loaded(messages) if name in by_name]
    kept = [_spec(tool) for tool in tools if not tool.source.startswith("mcp")]
    added = [search_spec(mcp), *(_spec(by_name[name]) for name in names)]
    saved = cost - schema_tokens(wire, added)
    return Offer([*kept, *added], mcp, len(mcp) - len(names), max(0, saved))


def loaded(messages: Iterable[Message]) -> list[str]:
    """The tools the thread's searches loaded, in the order they were first loaded."""
    names: dict[str, None] = {}
    for message in messages:
        found = message.get(LOADED_KEY)
        for name in found if isinstance(found, list) else ():
            names.setdefault(str(name), None)
    return list(names)


def schema_tokens(wire: WireStyle, specs: list[ToolSpec]) -> int:
    """About what `specs` cost in a request, in `wire`'s shape."""
    return text_tokens(json.dumps(wire.tool_schemas(specs), ensure_ascii=False)) if specs else 0


def search_spec(tools: Sequence[Tool]) -> ToolSpec:
    """`tool_search`, its description naming every tool it can load."""
    listed = "\n".join(f"- {tool.name}: {_one_line(tool.description)}" for tool in tools)
    description = (
        "Load the full schemas of tools that are only named here, so that you can call "
        "them: give words to look for in their names and descriptions, or "
        '"select:NAME,NAME" for tools by name. Loaded tools stay available. The tools:\n'
        f"{listed}"
    )
    schema = {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": 'Words to look for, or "select:NAME,NAME".',
            }
        },
        "required": ["query"],
    }
    return ToolSpec(TOOL_SEARCH, description, schema)


def search(tools: Sequence[Tool], args: Any) -> ToolResult:
    """Run a `tool_search` call: the tools it found are loaded (`LOADED_KEY` in metadata)."""
    query = args.get("query") if isinstance(args, dict) else None
    if not isinstance(query, str) or not query.strip():
        return ToolResult('error: tool_search needs a "query"', is_error=True)
    found = _matches(tools, query.strip())
    if not found:
        return ToolResult(
            f"No tool matches {query.strip()!r}: try other words, or select:NAME with a "
            "name from tool_search's description."
        )
    lines = "\n".join(f"- {tool.name}: {_one_line(tool.description)}" for tool in found)
    return ToolResult(
        f"Loaded {len(found)} tool(s); you can call them now:\n{lines}",
        metadata={LOADED_KEY: [tool.name for tool in found]},
    )


def _matches(tools: Sequence[Tool], query: str) -> list[Tool]:
    if query.lower().startswith("select:"):
        wanted = [name.strip() for name in query[7:].split(",") if name.strip()]
        by_name = {tool.name: tool for tool in tools}
        return [by_name[name] for name in dict.fromkeys(wanted) if name in by_name]
    terms = [term for term in re.split(r"[\s,]+", query.lower()) if term]
    scored = []
    for at, tool in enumerate(tools):
        name, description = tool.name.lower(), tool.description.lower()
        score = sum(2 * (term in name) + (term in description) for term in terms)
        if score:
            scored.append((-score, at, tool))
    return [tool for _, _, tool in sorted(scored, key=lambda item: item[:2])[:MAX_MATCHES]]


def _one_line(description: str) -> str:
    line = description.strip().split("\n", 1)[0]
    return line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"


def _spec(tool: Tool) -> ToolSpec:
    return ToolSpec(tool.name, tool.description, tool.input_schema)
