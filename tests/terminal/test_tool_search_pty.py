"""Tool search in the chat, in a real pseudo-terminal: a server with 100 tools on a model
with a 4,096-token window; the model is sent their names only, loads one with tool_search
and calls it; /context says how much was left out."""

from __future__ import annotations

import re

import pytest

from tests.support import chat_session
from tests.support.mcp_helpers import SERVERS, mcp_file, server_command
from tests.support.stub_provider import Recorded, openai_stream

open_chat = chat_session.open_chat

pytest.importorskip("mcp")


def tool_names(request: Recorded) -> list[str]:
    return [tool["function"]["name"] for tool in request.json.get("tools", [])]


def test_a_hundred_mcp_tools_are_named_only_loaded_on_demand_and_context_says_so(
    cli, stub, open_chat, tmp_path
):
    """Repro: an mcp.json with a server of 100 tools, context_window = 4096 in the config;
    `toolnexus chat --mcp mcp.json`, ask something, then /context."""
    cli.write_config("context_window = 4096\n")
    config = mcp_file(
        tmp_path / "mcp.json", {"many": server_command(SERVERS / "many_tools_server.py")}
    )

    def handler(rec: Recorded):
        last = rec.json["messages"][-1]
        if last["role"] == "tool" and last["content"].startswith("Loaded"):
            return openai_stream(tool_calls=[("many_op42", {"path": "notes.txt"})])
        if last["role"] == "tool":
            return openai_stream(f"it said: {last['content']}")
        return openai_stream(tool_calls=[("tool_search", {"query": "select:many_op42"})])

    stub.handler = handler
    chat = open_chat("--mcp", str(config), "--yes")
    chat.say("run operation 42 on notes.txt")
    chat.wait_text("it said: op42 on notes.txt")
    first, loaded, answered = (r for r in stub.requests if r.method == "POST")
    assert tool_names(first) == ["tool_search"]
    assert "- many_op99: Operation 99" in first.json["tools"][0]["function"]["description"]
    assert tool_names(loaded) == tool_names(answered) == ["tool_search", "many_op42"]
    chat.say("/context")
    chat.wait(
        lambda: re.search(
            r"tool search: 99 MCP tools named only, ~[\d.]+k tokens of schemas not sent",
            chat.term.text(),
        ),
        "the line of /context about tool search",
    )
