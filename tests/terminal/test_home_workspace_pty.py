"""`cd ~ && toolnexus chat` (issue 33), in a real pseudo-terminal against the stub endpoint:
a chat whose workspace holds the home starts without the built-in file and command tools
and its banner says why in one line; `/workspace PATH` moves the tools, their sandbox and the
MCP servers' roots to another folder (and back), and tools brought back still ask first;
`/workspace` alone shows where they work."""

from __future__ import annotations

import re

import pytest

from tests.support.chat_session import CTRL_D, Chat
from tests.support.cli_helpers import tool_results, write_files
from tests.support.mcp_helpers import calc, mcp_file
from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream
from tests.support.waiting import wait_until
from toolnexus.tools.sandbox import support

WORKSPACE_TOOLS = {"read_file", "list_dir", "glob", "grep", "write_file", "edit_file", "bash"}
QUESTION = "[y]es / [n]o / [a]lways (this session):"


def tool_names(request: Recorded) -> set[str]:
    return {tool["function"]["name"] for tool in request.json.get("tools", [])}


def shown(chat: Chat, text: str) -> int:
    """How many times the screen shows `text`, wrapped however the width wraps it (a path
    in a line is as long as the test's tmp_path)."""
    return "".join(chat.term.text().split()).count("".join(text.split()))


def shows(chat: Chat, text: str) -> bool:
    return shown(chat, text) > 0


def script(stub: StubProvider, *replies: Reply) -> None:
    """Request n (from 1) gets replies[n-1]; any later one "ok."."""

    def handler(request: Recorded) -> Reply:
        n = len(stub.requests)
        return replies[n - 1] if n <= len(replies) else openai_stream("ok.")

    stub.handler = handler


def off_line(root: object, relation: str = "is") -> str:
    return (
        f"file and command tools are off: the workspace {root} {relation} your home folder, "
        "where they would reach every key and secret; /workspace PATH (or --root PATH) picks "
        "a project folder"
    )


def test_a_chat_in_the_home_has_no_file_tools_until_workspace_moves_them(cli, stub, open_chat):
    home = cli.home
    sub = home / "sub"
    write_files(home, {".ssh/id_rsa": "PRIVATE-KEY", "sub/notes.txt": "buy milk\n"})
    script(
        stub,
        openai_stream("nothing to read."),
        openai_stream(tool_calls=[("read_file", {"path": "notes.txt"})]),
        openai_stream("read them."),
    )
    chat = open_chat("--builtins", "--yes")
    assert shows(chat, off_line(home))
    chat.say("hello")
    assert tool_names(stub.requests[0]) == {"fetch_url"}

    chat.say("/workspace")
    assert shows(chat, f"workspace: {home}")
    assert shown(chat, off_line(home)) == 2  # the banner's line, and again
    chat.say("/workspace nowhere")
    assert shows(chat, f"no folder {home}/nowhere: /workspace takes an existing folder")

    chat.say("/workspace sub")
    assert shows(chat, f"workspace: {sub}")
    assert re.search(r"tools: read_file, .* \(8 built-in\)", chat.term.text())
    chat.send_line("read my notes")
    chat.wait_text("read them.")
    chat.wait_prompt()
    assert WORKSPACE_TOOLS <= tool_names(stub.requests[1])
    assert tool_results(stub.requests[2]) == ["     1\tbuy milk"]  # sub/notes.txt

    said = shown(chat, off_line(home))
    chat.say("/workspace ..")  # the home again: the tools go
    assert shown(chat, off_line(home)) == said + 1
    chat.say("and now?")
    assert tool_names(stub.requests[-1]) == {"fetch_url"}
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0
    assert "Traceback" not in chat.term.text()


def test_a_root_holding_the_home_is_refused_the_same_way(cli, stub, open_chat):
    script(stub)
    chat = open_chat("--builtins", "--root", "/")
    assert shows(chat, off_line("/", "holds"))
    chat.say("hello")
    assert tool_names(stub.requests[0]) == {"fetch_url"}


def test_tools_brought_back_by_workspace_still_ask_first(cli, stub, open_chat):
    """With only write_file configured, the chat in the home starts with no tool at all;
    the write that /workspace brings back is asked about, not run unasked."""
    cli.write_config('builtins = ["write_file"]\n')
    (cli.home / "sub").mkdir()
    script(
        stub,
        openai_stream(tool_calls=[("write_file", {"path": "new.txt", "content": "hi\n"})]),
        openai_stream("not written."),
    )
    chat = open_chat()
    chat.say("/tools")  # none offered: it says why, not "no tools are enabled"
    assert shows(chat, off_line(cli.home))
    assert "no tools are enabled" not in chat.term.text()
    chat.say("/workspace sub")
    chat.send_line("write it")
    chat.wait_text(QUESTION)
    assert "write_file new.txt →" in chat.term.text()
    assert f"{cli.home}/sub/new.txt" in chat.term.text()  # where the write would land
    chat.child.send("n")
    chat.wait_text("not written.")
    assert not (cli.home / "sub" / "new.txt").exists()
    assert tool_results(stub.requests[1]) == ["Error: denied by the user"]


@pytest.mark.skipif(support().abi == 0, reason=f"no Landlock: {support().why_not}")
def test_workspace_moves_the_sandbox_with_the_tools(cli, stub, open_chat):
    first, second = cli.home / "first", cli.home / "second"
    first.mkdir()
    second.mkdir()
    command = f"touch made-here; touch {first}/escaped; pwd; exit 0"
    script(stub, openai_stream(tool_calls=[("bash", {"command": command})]))
    chat = open_chat("--builtins", "--yes", "--root", str(first))
    chat.say(f"/workspace {second}")
    chat.say("run it")
    wait_until(lambda: len(stub.requests) == 2, "the command's output to reach the model")
    [output] = tool_results(stub.requests[1])
    assert f"\n{second}\n" in output  # it ran in the new workspace
    assert (second / "made-here").exists()
    assert not (first / "escaped").exists()  # the old one is outside the sandbox now


def test_workspace_moves_the_mcp_servers_roots_and_slash_mcp_shows_them(
    cli, stub, open_chat, tmp_path
):
    pytest.importorskip("mcp")
    told = tmp_path / "roots-told"
    sub = cli.home / "sub"
    sub.mkdir()
    config = mcp_file(
        tmp_path / "mcp.json",
        {"calc": calc(env={"MCP_ROOTS_FILE": str(told)}), "own": calc(roots=["/srv/data"])},
    )
    chat = open_chat("--mcp", str(config))
    chat.wait(
        lambda: any(line.startswith("2 of 2 MCP servers ready") for line in chat.term.display()),
        "both servers to run",
    )
    chat.say("/mcp")
    rows = {line.split()[0]: line.split()[-1] for line in chat.term.lines() if "  stdio  " in line}
    assert rows == {"calc": "none", "own": "/srv/data"}  # the home gives no roots

    chat.say("/workspace sub")
    wait_until(told.exists, "the server to hear its roots changed")
    assert told.read_text() == f"{sub.as_uri()}\n"
    chat.say("/mcp calc")
    assert shows(chat, f"roots (1): {sub}")
    chat.say("/mcp own")
    assert shows(chat, "roots (1): /srv/data")


def test_help_lists_workspace_in_line_with_the_other_commands(cli, stub, open_chat):
    chat = open_chat()
    chat.say("/help")
    lines = chat.term.lines()
    helped = next(line for line in lines if line.startswith("/help "))
    workspace = next(line for line in lines if line.startswith("/workspace "))
    assert workspace.endswith("show or change the folder the tools work in: /workspace [PATH]")
    assert helped.index("show this list") == workspace.index("show or change")
