"""Questions an MCP server asks while it keeps talking, in `toolnexus chat` in a real
pseudo-terminal against the stub endpoint: tests/support/mcp_servers/asking_server.py sends
a log message and a progress report every 10 ms for as long as its question is open. The
question stands still and gets the keys, Ctrl-C cancels it (the server hears "cancel"),
and the chat goes on."""

from __future__ import annotations

import pytest

from tests.support import chat_session, cli_helpers
from tests.support.chat_session import Chat
from tests.support.cli_helpers import tool_results
from tests.support.mcp_helpers import SERVERS, mcp_file, server_command
from tests.support.stub_provider import Recorded, openai_stream

cli, stub = cli_helpers.cli, cli_helpers.stub
open_chat = chat_session.open_chat

pytest.importorskip("mcp")

READY = "1 of 1 MCP servers ready"
SLOW = 120.0  # seconds a step may take: a loaded machine starts a server slowly
pytestmark = pytest.mark.timeout(600)


def asking_chat(open_chat, tmp_path, *args: str, env: dict | None = None) -> Chat:
    entry = {**server_command(SERVERS / "asking_server.py"), "env": env or {}}
    config = mcp_file(tmp_path / "mcp.json", {"asking": entry})
    chat = open_chat("--mcp", str(config), *args, timeout=SLOW)
    chat.wait(lambda: READY in chat.term.text(), "the server")
    return chat


def calls_then(stub, name: str, args: dict | None = None, answer: str = "done.") -> None:
    """The first request calls the tool `name`; a sampling request is answered
    "sampled."; every other request gets `answer`."""

    def handler(request: Recorded):
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[(name, args or {})])
        if not request.json.get("tools"):  # the server's sampling request: no tools
            return openai_stream("sampled.")
        return openai_stream(answer)

    stub.handler = handler


def approve_call(chat: Chat) -> None:
    chat.expect(r"\[y\]es / \[n\]o / \[a\]lways")
    chat.child.send("y")


def at_field(chat: Chat, label: str) -> None:
    chat.wait(lambda: chat.term.cursor_line().startswith(label), f"the field {label!r}")


def test_a_question_asked_while_the_server_logs_gets_the_keys_and_its_answer(
    open_chat, stub, tmp_path
):
    """Repro: an MCP server whose tool asks for your name while it sends a log message
    every 10 ms; ask the model to call it, approve the call, answer the form."""
    calls_then(stub, "asking_ask_name")
    ticks = tmp_path / "ticks"
    chat = asking_chat(open_chat, tmp_path, env={"MCP_TICKS": str(ticks)})
    chat.send_line("who am I?")
    approve_call(chat)
    chat.wait_text("asking asks you for input")
    chat.wait_text("[a]nswer / [d]ecline / [c]ancel")
    shown = chat.term.text()
    sent = int(ticks.read_text())
    chat.wait(lambda: int(ticks.read_text()) > sent + 20, "more log messages")
    assert chat.term.text() == shown  # the question stands still: the logs wait
    chat.child.send("a")
    at_field(chat, "Name:")
    chat.send_line("Ann")
    chat.wait_text("done.")
    assert tool_results(stub.requests[1]) == ['action=accept content={"name": "Ann"}']


def test_ctrl_c_at_a_question_cancels_it_and_the_chat_goes_on(open_chat, stub, tmp_path):
    """Repro: as above, but press Ctrl-C at the question's first line and again at
    a field of the form; then ask something else."""
    calls_then(stub, "asking_ask_name")
    chat = asking_chat(open_chat, tmp_path)
    chat.send_line("who am I?")
    approve_call(chat)
    chat.wait_text("[a]nswer / [d]ecline / [c]ancel")
    chat.child.send("\x03")
    chat.wait_text("done.")
    assert tool_results(stub.requests[1]) == ["action=cancel content=null"]
    chat.wait_prompt()
    calls_then(stub, "asking_ask_name", answer="done again.")
    stub.requests.clear()
    chat.send_line("once more")
    approve_call(chat)
    chat.wait_text("[a]nswer / [d]ecline / [c]ancel")
    chat.child.send("a")
    at_field(chat, "Name:")
    chat.child.send("An\x03")
    chat.wait_text("done again.")
    assert tool_results(stub.requests[1])[-1] == "action=cancel content=null"
    chat.wait_prompt()
    stub.handler = lambda request: openai_stream("still here.")
    chat.send_line("hello")
    chat.wait_text("still here.")


def test_a_form_shows_titles_checks_each_field_and_asks_again(open_chat, stub, tmp_path):
    """Repro: an MCP server asks for an order form (an email, a score from 0 to 1000, a
    size from titled choices, one or two toppings, and optional fields); type a bad email,
    a score of 5000 and three toppings: each says why under its field and is asked again."""
    calls_then(stub, "asking_fill_form")
    chat = asking_chat(open_chat, tmp_path)
    chat.send_line("order")
    approve_call(chat)
    chat.wait_text("Size (optional): one of: Small | Medium | Large")
    chat.wait_text("Toppings: 1 to 2 of: Ham, Egg, Kale (separated by commas)")
    chat.wait_text("[a]nswer / [d]ecline / [c]ancel")
    chat.child.send("a")
    at_field(chat, "Email:")
    chat.send_line("ann")
    chat.wait_text("Email: an email address is needed")
    at_field(chat, "Email:")
    chat.send_line("ann@example.org")
    for optional in ("Site:", "Born:", "Meeting:", "Code:"):
        at_field(chat, optional)
        chat.send_line("")
    at_field(chat, "Score:")
    chat.send_line("5000")
    chat.wait_text("Score: 5000 is not from 0 to 1000")
    at_field(chat, "Score:")
    chat.send_line("42")
    for optional in ("Ratio:", "Agree:"):
        at_field(chat, optional)
        chat.send_line("")
    at_field(chat, "Size:")
    chat.send_line("Large")
    at_field(chat, "Color:")
    chat.send_line("")
    at_field(chat, "Toppings:")
    chat.send_line("ham, egg, kale")
    chat.wait_text("Toppings: choose 1 to 2 of: Ham, Egg, Kale")
    at_field(chat, "Toppings:")
    chat.send_line("Ham, Kale")
    at_field(chat, "Tags:")
    chat.send_line("")
    chat.wait_text("done.")
    content = '{"email": "ann@example.org", "score": 42, "size": "l", "toppings": ["ham", "kale"]}'
    assert tool_results(stub.requests[1]) == [f"action=accept content={content}"]


def test_a_sampling_approval_asked_while_the_server_logs_takes_ctrl_c_and_yes(
    open_chat, stub, tmp_path
):
    """Repro: an MCP server asks the model for a message (at most 20 tokens, a system
    prompt) while it logs every 10 ms; press Ctrl-C at the approval, then have it asked
    again and press y."""
    args = {"text": "Summarize: abc", "max_tokens": 20, "system": "Be brief."}
    calls_then(stub, "asking_sample", args)
    chat = asking_chat(open_chat, tmp_path)
    chat.send_line("summarize")
    approve_call(chat)
    # the whole frame in one wait: read in one piece on a busy machine, the question's bytes
    # would be gone from the stream before a later expect() looked for them
    chat.wait(
        lambda: (
            "the MCP server asking asks the model for a message (at most 20 tokens)"
            in chat.term.text()
            and "system: Be brief." in chat.term.text()
            and chat.term.cursor_line().rstrip().endswith("[y]es / [n]o:")
        ),
        "the sampling question",
    )
    chat.child.send("\x03")
    chat.wait_text("done.")
    [refused] = tool_results(stub.requests[1])
    assert "the user declined" in refused  # the server's request ended in an error
    chat.wait_prompt()
    calls_then(stub, "asking_sample", args, answer="done again.")
    stub.requests.clear()
    chat.send_line("summarize again")
    approve_call(chat)
    chat.wait(
        lambda: chat.term.cursor_line().rstrip().endswith("[y]es / [n]o:"),
        "the sampling question again",
    )
    chat.child.send("y")
    chat.wait_text("done again.")
    sampled = stub.requests[1].json
    assert sampled["max_tokens"] == 20 and sampled["messages"][0]["content"] == "Be brief."
    assert tool_results(stub.requests[2])[-1] == "model=stub-model stop=endTurn text=sampled."


def test_a_question_that_comes_between_turns_takes_the_keys_from_the_prompt(
    open_chat, stub, tmp_path
):
    """Repro: an MCP server that asks your name a while after its tool returned, while
    the chat waits at its prompt with something typed; answer it, then go on typing."""
    trigger, answer = tmp_path / "trigger", tmp_path / "answer"
    calls_then(stub, "asking_ask_later")
    env = {"MCP_TRIGGER": str(trigger), "MCP_ANSWER": str(answer)}
    chat = asking_chat(open_chat, tmp_path, env=env)
    chat.send_line("ask me later")
    approve_call(chat)
    chat.wait_text("done.")
    chat.wait_prompt()
    chat.child.send("half a li")
    chat.wait(lambda: "half a li" in chat.term.cursor_line(), "the typing")
    trigger.touch()
    chat.wait_text("[a]nswer / [d]ecline / [c]ancel")
    chat.child.send("a")
    at_field(chat, "Name:")
    chat.send_line("Ann")
    chat.wait(answer.exists, "the server's answer")
    assert answer.read_text() == 'action=accept content={"name": "Ann"}'
    chat.wait(lambda: "half a li" in chat.term.cursor_line(), "the prompt back")
    stub.handler = lambda request: openai_stream("still here.")
    chat.send_line("ne")
    chat.wait_text("still here.")
    assert stub.requests[-1].json["messages"][-1]["content"] == "half a line"
