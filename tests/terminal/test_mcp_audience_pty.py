"""A tool result's content annotated by audience, in the chat in a real pseudo-terminal: the
person sees the parts for them, the model gets the parts for it."""

from __future__ import annotations

import pytest

from tests.support import chat_session
from tests.support.mcp_helpers import SERVERS, mcp_file, server_command
from tests.support.stub_provider import Recorded, openai_stream

open_chat = chat_session.open_chat

pytest.importorskip("mcp")


def test_the_panel_shows_the_persons_content_and_not_the_models(cli, stub, open_chat, tmp_path):
    """Repro: an mcp.json with a server whose tool returns a part for the user alone and
    one for the assistant alone; `toolnexus chat --mcp mcp.json --yes`, ask for the report."""
    config = mcp_file(
        tmp_path / "mcp.json", {"aud": server_command(SERVERS / "audience_server.py")}
    )

    def handler(rec: Recorded):
        if rec.json["messages"][-1]["role"] == "tool":
            return openai_stream("read it.")
        return openai_stream(tool_calls=[("aud_report", {})])

    stub.handler = handler
    chat = open_chat("--mcp", str(config), "--yes")
    chat.say("the report please")
    chat.wait_text("read it.")
    screen = chat.term.text()
    assert "a summary for the person" in screen and "for you both" in screen, screen
    assert "raw rows for the model" not in screen, screen
    sent = stub.requests[-1].json["messages"][-1]["content"]
    assert "raw rows for the model" in sent and "a summary for the person" not in sent
