"""What an MCP server offers, in `toolnexus chat` in a real pseudo-terminal against the
stub endpoint (tests/support/mcp_servers/offers_server.py): a form the server asks for is filled
in at the chat, a sampling request is shown and, once approved, answered by the model,
a server prompt is a command that completes, and `@server:uri` attaches a resource."""

from __future__ import annotations

import pytest

from tests.support import chat_session, cli_helpers
from tests.support.chat_session import Chat
from tests.support.cli_helpers import tool_results, user_text
from tests.support.mcp_helpers import SERVERS, mcp_file, server_command
from tests.support.stub_provider import Recorded, openai_stream

cli, stub = cli_helpers.cli, cli_helpers.stub
open_chat = chat_session.open_chat

pytest.importorskip("mcp")

READY = "1 of 1 MCP servers ready"
SLOW = 120.0  # seconds a step may take: a loaded machine starts a server slowly
# each test starts a server and waits on several steps of SLOW: past pytest's 60 s default
pytestmark = pytest.mark.timeout(600)


def offers_chat(open_chat, tmp_path) -> Chat:
    config = mcp_file(
        tmp_path / "mcp.json",
        {"offers": server_command(SERVERS / "offers_server.py")},
    )
    chat = open_chat("--mcp", str(config), timeout=SLOW)
    chat.wait(lambda: READY in chat.term.text(), "the server")
    return chat


def at_field(chat: Chat, label: str) -> None:
    chat.wait(lambda: chat.term.cursor_line().startswith(label), f"the field {label!r}")


def calls_then(stub, name: str, args: dict, answer: str = "done.") -> None:
    def handler(request: Recorded):
        said = request.json["messages"][-1]
        if said["role"] == "user" and "Summarize:" in str(said["content"]):
            return openai_stream("a short summary")  # the server's sampling request
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[(name, args)])
        return openai_stream(answer)

    stub.handler = handler


def test_a_form_the_server_asks_for_is_filled_in_at_the_chat(open_chat, stub, tmp_path):
    calls_then(stub, "offers_who", {})
    chat = offers_chat(open_chat, tmp_path)
    chat.send_line("who am I?")
    chat.expect(r"\[y\]es / \[n\]o / \[a\]lways")
    chat.wait_text("Ask who you are")  # its title, above the call
    chat.child.send("y")
    chat.wait_text("offers asks you for input")
    chat.wait_text("Who are you?")
    chat.wait_text("Age: a whole number")
    chat.wait_text("[a]nswer / [d]ecline / [c]ancel")  # on the screen: the wait read it
    chat.child.send("a")
    at_field(chat, "Name:")
    chat.send_line("Ann")
    at_field(chat, "Age:")
    chat.send_line("forty")
    chat.wait_text("Age: a whole number is needed")
    at_field(chat, "Age:")
    chat.send_line("41")
    at_field(chat, "Member [no]:")
    chat.send_line("")
    chat.wait_text("done.")
    assert tool_results(stub.requests[1]) == ["hello Ann, 41, member=False"]


def test_a_sampling_request_is_shown_and_once_approved_answered_by_the_model(
    open_chat, stub, tmp_path
):
    calls_then(stub, "offers_summarize", {"text": "the report"})
    chat = offers_chat(open_chat, tmp_path)
    chat.send_line("summarize the report")
    chat.expect(r"\[y\]es / \[n\]o / \[a\]lways")
    chat.child.send("y")
    chat.wait_text("let offers use the model")
    chat.wait_text("the MCP server offers asks the model for a message (at most 50 tokens)")
    chat.wait_text("user: Summarize: the report")
    chat.wait_text("[y]es / [n]o:")  # on the screen: the wait may have read it already
    chat.child.send("y")
    chat.wait_text("done.")
    assert user_text(stub.requests[1])[-1] == "Summarize: the report"
    assert tool_results(stub.requests[2]) == ["summary from stub-model: a short summary"]


def test_a_declined_sampling_request_never_reaches_the_model(open_chat, stub, tmp_path):
    calls_then(stub, "offers_summarize", {"text": "the report"})
    chat = offers_chat(open_chat, tmp_path)
    chat.send_line("summarize the report")
    chat.expect(r"\[y\]es / \[n\]o / \[a\]lways")
    chat.child.send("y")
    chat.expect(r"\[y\]es / \[n\]o:")
    chat.child.send("n")
    chat.wait_text("done.")
    assert len(stub.requests) == 2
    [result] = tool_results(stub.requests[1])
    assert "the user declined" in result


def test_a_server_prompt_is_a_command_and_a_resource_attaches(open_chat, stub, tmp_path):
    stub.handler = lambda request: openai_stream("noted.")
    chat = offers_chat(open_chat, tmp_path)
    chat.child.send("/offers:rev\t")
    chat.wait(lambda: "/offers:review" in chat.term.cursor_line(), "the command completed")
    chat.child.send(" code=x style=st\t")  # the server completes it
    chat.wait(lambda: "style=strict" in chat.term.cursor_line(), "the value completed")
    chat.send_line("")
    chat.wait_text("noted.")
    assert user_text(stub.requests[0])[-1] == "Review this (strict):\nx"
    chat.wait_prompt()
    chat.say("/offers:review")
    chat.wait_text("error: review needs code=...")
    chat.send_line("what does @offers:note://readme say?")
    chat.wait_text("noted.", count=2)
    sent = stub.requests[1].json["messages"][-1]["content"]
    assert sent[0] == {"type": "text", "text": "what does @offers:note://readme say?"}
    assert "the offers server reads fine" in str(sent[1:])
