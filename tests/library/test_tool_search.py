"""Tool search: with many MCP tools, a request names them only and offers `tool_search`;
what a search loads is sent from then on, in this run and the thread's later runs, after
the tools sent before (the list only grows); it can be turned off."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.scripted import calling, scripted_client
from toolnexus import create_toolkit
from toolnexus.tools.tool import Tool

pytestmark = pytest.mark.usefixtures("no_keys_in_env")

WINDOW = 32_000


def _many_mcp_tools(count: int = 100) -> list[Tool]:
    """MCP-like tools (source mcp:big), each with a schema of a few described fields."""
    schema = {
        "type": "object",
        "properties": {
            field: {"type": "string", "description": f"The {field} to act on, as a full name."}
            for field in ("path", "owner", "branch", "message")
        },
        "required": ["path"],
    }
    return [
        Tool(
            f"big_op{n}",
            f"Operation {n} of the big server: does thing {n}.\nMore details nobody needs.",
            schema,
            lambda **args: f"ran with {sorted(args)}",
            source="mcp:big",
        )
        for n in range(count)
    ]


def _echo(text: str) -> str:
    """Say it back."""
    return text


def _names(request: Any) -> list[str]:
    return [tool["function"]["name"] for tool in (request.body or {}).get("tools", [])]


async def _toolkit():
    toolkit = await create_toolkit(functions=[_echo])
    return toolkit.register(*_many_mcp_tools())


async def test_many_mcp_tools_are_named_only_and_a_search_loads_them_for_the_thread(scripted):
    scripted.add(
        calling(("tool_search", {"query": "select:big_op42,big_op7"})),
        calling(("big_op42", {"path": "a"})),
        "done",
        "and again",
    )
    toolkit = await _toolkit()
    client = scripted_client(scripted, context_window=WINDOW)
    try:
        first = await client.run("work", toolkit)
        await client.run("more", toolkit, history=first.messages)
    finally:
        await client.aclose()
    first_request, after_search, after_call, next_run = scripted.requests
    assert _names(first_request) == ["_echo", "tool_search"]
    search = first_request.body["tools"][1]["function"]
    assert "- big_op42: Operation 42 of the big server: does thing 42." in search["description"]
    assert "More details" not in search["description"]
    loaded = ["_echo", "tool_search", "big_op42", "big_op7"]
    assert _names(after_search) == loaded  # appended, in the order asked for
    assert _names(after_call) == loaded
    assert _names(next_run) == loaded  # the thread's next run still carries them
    assert after_call.body["messages"][-1]["content"] == "ran with ['path']"
    assert all("loaded_tools" not in m for m in next_run.body["messages"])  # kept home


async def test_a_search_by_words_loads_the_best_matches(scripted):
    scripted.add(
        calling(("tool_search", {"query": "op13"})),
        "done",
    )
    toolkit = await _toolkit()
    client = scripted_client(scripted, context_window=WINDOW)
    try:
        result = await client.run("work", toolkit)
    finally:
        await client.aclose()
    assert _names(scripted.requests[1]) == ["_echo", "tool_search", "big_op13"]
    said = scripted.requests[1].body["messages"][-1]["content"]
    assert said.startswith("Loaded 1 tool(s)") and "big_op13" in said, said
    assert result.text == "done"


async def test_few_mcp_tools_or_tool_search_off_send_every_schema(scripted):
    scripted.add("one", "two")
    toolkit = await _toolkit()
    roomy = scripted_client(scripted, context_window=2_000_000)
    off = scripted_client(scripted, context_window=WINDOW, tool_search=None)
    try:
        await roomy.run("work", toolkit)
        await off.run("work", toolkit)
    finally:
        await roomy.aclose()
        await off.aclose()
    for request in scripted.requests:
        assert len(_names(request)) == 101 and "tool_search" not in _names(request)
