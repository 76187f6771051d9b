"""Tokens per request with 100 MCP tools, with and without tool search.

A real MCP server offering 100 tools (tests/support/mcp_servers/many_tools_server.py,
schemas as the SDK makes them) beside two built-in tools, and a scripted endpoint (an
in-process transport that records each request body). Without tool search the model calls
`many_op42` and answers (2 requests); with it, it first loads that tool with tool_search
(3 requests). Printed, in each style: the first request and the last (the answer's) in
bytes and in tokens at 4 characters a token (the estimate the context keeper uses), side
by side.

    .venv/bin/python bench/tool_search.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx2  # noqa: E402
from results import record  # noqa: E402

from toolnexus import create_client, create_toolkit  # noqa: E402

SERVER = Path(__file__).resolve().parents[1] / "tests/support/mcp_servers/many_tools_server.py"
WINDOW = 32_768
STYLES = ("openai", "anthropic")


CALLS = {
    "search": [("tool_search", {"query": "select:many_op42"}), ("many_op42", {"path": "a.txt"})],
    "direct": [("many_op42", {"path": "a.txt"})],
}


def _reply(style: str, calls: list[tuple[str, dict[str, Any]]], step: int) -> dict[str, Any]:
    """The scripted answers: the calls in order, then an answer."""
    if style == "openai":
        message: dict[str, Any] = {"role": "assistant", "content": "done"}
        if step < len(calls):
            name, args = calls[step]
            function = {"name": name, "arguments": json.dumps(args)}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": f"c{step}", "type": "function", "function": function}],
            }
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return {"id": "x", "object": "chat.completion", "model": "m", "choices": [choice]}
    content: list[dict[str, Any]] = [{"type": "text", "text": "done"}]
    if step < len(calls):
        name, args = calls[step]
        content = [{"type": "tool_use", "id": f"c{step}", "name": name, "input": args}]
    return {
        "id": "x",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": content,
        "stop_reason": "tool_use" if step < len(calls) else "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


async def _run(style: str, tool_search: float | None, toolkit: Any) -> list[int]:
    sizes: list[int] = []
    calls = CALLS["direct" if tool_search is None else "search"]

    def answer(request: httpx2.Request) -> httpx2.Response:
        sizes.append(len(request.content))
        return httpx2.Response(200, json=_reply(style, calls, len(sizes) - 1))

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(answer)) as http:
        client = create_client(
            base_url="http://bench.test/v1",
            style=style,
            model="m",
            api_key="k",
            http_client=http,
            context_window=WINDOW,
            tool_search=tool_search,
        )
        await client.run("run operation 42 on a.txt", toolkit)
        await client.aclose()
    return sizes


async def main() -> None:
    command = [sys.executable, str(SERVER)]
    config = {"mcpServers": {"many": {"command": command[0], "args": command[1:]}}}
    toolkit = await create_toolkit(mcp_config=config, builtins=["read_file", "grep"])
    try:
        await toolkit.started()
        results: dict[str, Any] = {"tools": len(toolkit.tools()), "window": WINDOW}
        print(f"{len(toolkit.tools())} tools (100 MCP, 2 built-in); window {WINDOW:,} tokens")
        print(f"{'style':10} {'request':8} {'all schemas':>18} {'tool search':>18} {'saved':>7}")
        for style in STYLES:
            off = await _run(style, None, toolkit)
            on = await _run(style, 0.1, toolkit)
            results[style] = {"without": off, "with": on}
            for label, full, searched in (("first", off[0], on[0]), ("last", off[-1], on[-1])):
                saved = 100 * (1 - searched / full)
                print(
                    f"{style:10} {label:8} {full:>8,} B {full // 4:>6,} t "
                    f"{searched:>8,} B {searched // 4:>6,} t {saved:>6.0f}%"
                )
        record("tool_search", results)
    finally:
        await toolkit.close()


if __name__ == "__main__":
    asyncio.run(main())
