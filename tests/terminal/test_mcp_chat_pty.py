"""MCP servers in `toolnexus chat`, in a real pseudo-terminal against the stub endpoint: the
prompt comes at once while servers start (a status line under it says how many are
ready) and a question is answered while a slow server still starts; a server killed
mid-chat loses its tools and gets them back when it is running again; a long tool shows
its progress, its messages and the seconds it has run, also after an approval; `/mcp`
shows and restarts, disables and enables servers.

The slow parts of a server wait for files the test creates (tests/support/mcp_servers/), so every
step waits for what shows on the screen, never for a time.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest

from tests.support import chat_session, cli_helpers
from tests.support.chat_session import Chat, conversation, numbered_answers
from tests.support.mcp_helpers import calc, mcp_file
from tests.support.stub_provider import Recorded, Reply, openai_stream
from tests.support.waiting import pid_in, wait_until

cli, stub = cli_helpers.cli, cli_helpers.stub
open_chat = chat_session.open_chat

pytest.importorskip("mcp")

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"  # the frames of Rich's "dots"


def tool_names(request: Recorded) -> list[str]:
    return [tool["function"]["name"] for tool in request.json.get("tools", [])]


def status(chat: Chat) -> str:
    """The status line under the prompt: the last line on the screen that is not blank."""
    return next((line for line in reversed(chat.term.display()) if line), "")


def wait_status(chat: Chat, wanted: Callable[[str], bool], what: str) -> None:
    chat.wait(lambda: wanted(status(chat)), what)


def test_the_prompt_comes_at_once_and_an_answer_while_a_server_still_starts(
    open_chat, stub, tmp_path
):
    """Acceptance: three servers, one slow to start. The prompt shows while it starts, and
    a question needing no tool is answered before it is ready."""
    gate = tmp_path / "gate"
    config = mcp_file(
        tmp_path / "mcp.json",
        {"one": calc(), "two": calc(), "slow": calc(env={"MCP_START_GATE": str(gate)})},
    )
    numbered_answers(stub)
    chat = open_chat("--mcp", str(config))
    wait_status(
        chat, lambda line: line == "2 of 3 MCP servers ready · slow starting", "the status line"
    )
    chat.send_line("hello")
    chat.wait(
        lambda: "waiting for MCP server slow to start (at most 5 s)… " in chat.term.raw_text(),
        "the line saying what the model call waits for, and how long at most",
    )
    chat.wait_text("answer 1.")
    chat.wait_prompt()
    wait_status(
        chat,
        lambda line: line.endswith("MCP servers ready · slow starting"),
        "the status line at the next prompt",
    )  # answered, and it still starts
    gate.touch()
    wait_status(chat, lambda line: line == "3 of 3 MCP servers ready", "every server")
    chat.say("and now?")
    chat.wait_text("answer ", count=2)
    assert "slow_add" in tool_names(stub.requests[-1])


def test_a_server_killed_mid_chat_loses_its_tools_and_gets_them_back(open_chat, stub, tmp_path):
    """Acceptance: its tools vanish (from requests and /tools, the model told why once),
    it comes back, its tools return."""
    pid_file, gate = tmp_path / "pid", tmp_path / "gate"
    gate.touch()
    config = mcp_file(
        tmp_path / "mcp.json", {"calc": calc(pid_file, env={"MCP_START_GATE": str(gate)})}
    )
    numbered_answers(stub)
    chat = open_chat("--mcp", str(config))
    wait_status(chat, lambda line: line == "1 of 1 MCP servers ready", "the server")
    chat.say("hello")
    chat.wait_text("answer 1.")
    assert "calc_add" in tool_names(stub.requests[0])
    chat.say("/tools")
    chat.wait_text("calc_add")

    gate.unlink()  # it starts again only when the test says
    os.kill(pid_in(pid_file), signal.SIGKILL)
    wait_status(chat, lambda line: "calc restarting" in line, "the restart")
    chat.say("are you there?")
    chat.wait_text("answer 2.")
    down = stub.requests[1]
    assert tool_names(down) == []
    assert conversation(down)[-1][1].startswith(
        "(toolnexus, not the user: The MCP server calc is not running (restarting: it was "
        "killed by SIGKILL)"
    )
    chat.say("/tools")
    chat.wait_text("restarting: it was killed by SIGKILL")

    gate.touch()
    wait_status(chat, lambda line: line == "1 of 1 MCP servers ready", "the comeback")
    chat.say("and now?")
    chat.wait_text("answer 3.")
    assert "calc_add" in tool_names(stub.requests[2])
    chat.say("/tools")
    chat.wait_text("calc_add", count=2)


def test_a_long_tool_shows_its_progress_and_seconds_after_the_approval(open_chat, stub, tmp_path):
    gate = tmp_path / "steps"
    config = mcp_file(tmp_path / "mcp.json", {"calc": calc(env={"MCP_STEPS_GATE": str(gate)})})

    def handler(request: Recorded) -> Reply:
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[("calc_steps", {"count": 2})])
        return openai_stream("all done.")

    stub.handler = handler
    chat = open_chat("--mcp", str(config))
    wait_status(chat, lambda line: line == "1 of 1 MCP servers ready", "the server")
    chat.send_line("take two steps")
    chat.expect(r"\[y\]es / \[n\]o / \[a\]lways")
    shown_before = len(chat.term.raw_text())
    chat.child.send("y")
    chat.wait(lambda: "info: finished step 2" in chat.term.text(), "the server's log panel")
    screen = chat.term.text()
    assert "⚙ calc_steps · " in screen and "2/2" in screen
    assert "calc · log" in screen  # its log under the server's name, not the tool's
    tool_panel = screen[screen.index("⚙ calc_steps · ") : screen.index("calc · log")]
    assert "finished step" not in tool_panel
    assert "running calc_steps… " in screen
    chat.wait(
        lambda: len(set(chat.term.raw_text()[shown_before:]) & set(SPINNER)) >= 2,
        "the spinner to turn",
    )
    gate.touch()
    chat.wait_text("all done.")
    chat.wait_text("2 steps done")


def test_slash_mcp_shows_servers_and_restarts_disables_and_enables_one(open_chat, tmp_path):
    pid_file = tmp_path / "pid"
    config = mcp_file(
        tmp_path / "mcp.json",
        {
            "calc": calc(pid_file),
            "crashes": {"command": "sh", "args": ["-c", "echo 'no such \x1b]0;title' >&2; exit 2"]},
        },
    )
    chat = open_chat("--mcp", str(config))
    wait_status(chat, lambda line: line.startswith("1 of 2 MCP servers ready"), "the servers")
    chat.say("/mcp")
    chat.wait_text("SERVER")
    chat.say("/mcp calc")
    chat.wait_text("resources (1): readme (note://readme)")
    chat.wait_text("prompts (1): /calc:review")
    chat.say("/mcp crashes")
    chat.wait_text("    no such ^[]0;title")  # its stderr, made visible

    first = pid_in(pid_file)
    chat.say("/mcp disable calc")
    wait_status(
        chat, lambda line: line == "0 of 1 MCP servers ready · crashes failed", "calc disabled"
    )
    chat.say("/mcp enable calc")
    wait_status(chat, lambda line: line.startswith("1 of 2"), "calc enabled")
    pid_file.unlink()
    chat.say("/mcp restart calc")
    wait_until(lambda: pid_in(pid_file), "a new server")
    assert pid_in(pid_file) != first
    wait_status(chat, lambda line: line.startswith("1 of 2"), "calc restarted")
