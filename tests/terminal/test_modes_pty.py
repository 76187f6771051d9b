"""Tools on in the chat, and the modes you can see, in a real pseudo-terminal against the stub
model: an old config's banner says the tools are off and the line that turns them on; the
banner names the tools, their workspace and the mode; Shift-Tab cycles the modes in the
toolbar; each mode once (ask: a write asks; auto-edit: an edit runs, a command asks; auto: a
command runs in the sandbox without a question, its change in the journal; plan: a write is
refused, a command cannot write, and one key carries the plan out)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.chat_session import CTRL_D, Chat
from tests.support.cli_helpers import CLI, tool_results, user_text, write_files
from tests.support.pty_screen import PtySession
from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream
from toolnexus.tools.sandbox import support

COLS = 240  # a banner line with a temporary path stays on one row
QUESTION = "[y]es / [n]o / [a]lways (this session):"
PANEL_TITLE = "approve this tool call?"
SHIFT_TAB, CTRL_G = "\x1b[Z", "\x07"
TOOLS_ON = "[tools]\nchat = true\n"
needs_sandbox = pytest.mark.skipif(support().abi == 0, reason=f"no Landlock: {support().why_not}")


def script(stub: StubProvider, *replies: Reply) -> None:
    """Request n (from 1) gets replies[n-1]."""

    def handler(request: Recorded) -> Reply:
        return replies[len(stub.requests) - 1]

    stub.handler = handler


def calls(*made: tuple[str, dict[str, Any]]) -> Reply:
    return openai_stream(tool_calls=list(made))


def tool_names(request: Recorded) -> set[str]:
    return {tool["function"]["name"] for tool in request.json.get("tools", [])}


def system_prompt(request: Recorded) -> str:
    return "".join(m["content"] for m in request.json["messages"] if m["role"] == "system")


def toolbar(chat: Chat) -> str:
    """The screen's last row that holds anything: the toolbar under the prompt."""
    rows = [row for row in chat.term.display() if row.strip()]
    return rows[-1].strip() if rows else ""


def wait_toolbar(chat: Chat, text: str) -> None:
    chat.wait(lambda: toolbar(chat).startswith(text), f"the toolbar to say {text!r}")


@pytest.fixture
def project(cli: CLI) -> Path:
    """The chat starts in a project folder, its config turning the chat's tools on."""
    cli.write_config(TOOLS_ON)
    return cli.in_project()


@pytest.fixture
def chat_in(open_chat: Callable[..., Chat]) -> Callable[..., Chat]:
    return lambda *args: open_chat(*args, cols=COLS)


def test_an_old_config_says_tools_are_off_and_the_line_that_turns_them_on(cli, stub, chat_in):
    """Repro: a config written before setup asked about tools (here it only sets [ui]); in a
    project folder, "run the tests" got text back: no tool was offered, and nothing said
    so. Now the banner says the built-in tools are off and gives the one line to add; with
    it at the top of the config, the next chat offers them, and its banner says which, in
    which workspace, in which mode, and how to change each."""
    project = cli.in_project()
    old = "[ui]\nfooter = false\n"
    config = cli.write_config(old)
    script(stub, openai_stream("No tools here."), openai_stream("Tools now."))
    chat = chat_in()
    chat.wait_text(
        f"built-in tools are off: add `tools.chat = true` at the top of {config} "
        "(or pass --builtins)"
    )
    chat.say("run the tests")
    assert tool_names(stub.requests[0]) == set()
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0

    config.write_text("tools.chat = true\n" + old, encoding="utf-8")  # the line, as said
    chat = chat_in()
    banner = chat.term.text()
    assert "tools are off" not in banner
    assert re.search(r"tools: read_file, .* \(8 built-in\)", banner), banner
    assert f"workspace: {project} (/workspace PATH moves the tools, /tools lists them)" in banner
    assert (
        "mode: ask: every write and command asks first (Shift-Tab or /mode NAME changes it: "
        "ask, auto-edit, auto, plan)"
    ) in banner
    chat.say("run the tests")
    assert {"read_file", "write_file", "bash"} <= tool_names(stub.requests[1])


def test_shift_tab_cycles_the_modes_and_the_toolbar_shows_the_one_on(project, stub, chat_in):
    """Repro: tools on; under the prompt the toolbar says "ask mode (Shift-Tab changes
    it)"; each Shift-Tab shows the next mode (auto-edit, auto, plan) and the fourth comes
    back to ask. /mode says what the mode on does, /mode NAME picks one by name, and
    /tools shows the approval each call meets in it."""
    chat = chat_in()
    wait_toolbar(chat, "ask mode (Shift-Tab changes it)")
    for name in ("auto-edit", "auto", "plan", "ask"):
        chat.child.send(SHIFT_TAB)
        wait_toolbar(chat, f"{name} mode (Shift-Tab changes it)")
    chat.say("/mode")
    chat.wait_text("mode: ask: every write and command asks first")
    chat.say("/mode auto")
    chat.wait_text("mode: auto: commands run in the sandbox and edits without asking")
    wait_toolbar(chat, "auto mode (Shift-Tab changes it)")
    chat.say("/tools")  # the approval each call meets, in this mode
    assert re.search(r"write_file\s+builtin\s+allow \(auto mode\)", chat.term.text())
    chat.say("/mode pln")
    chat.wait_text("no mode 'pln': did you mean plan? use one of ask, auto-edit, auto, plan")
    wait_toolbar(chat, "auto mode")


def test_ask_mode_asks_before_a_write(project, stub, chat_in):
    """Repro: tools on, the chat in ask mode (where it starts); the model writes a file:
    the question shows before anything is written, and y writes it."""
    script(
        stub,
        calls(("write_file", {"path": "notes.txt", "content": "buy milk\n"})),
        openai_stream("Wrote your notes."),
    )
    chat = chat_in()
    chat.send_line("write my notes")
    chat.wait_text(QUESTION)
    assert not (project / "notes.txt").exists()
    chat.child.send("y")
    chat.wait_text("Wrote your notes.")
    assert (project / "notes.txt").read_text() == "buy milk\n"
    assert chat.term.text().count(PANEL_TITLE) == 1


def test_auto_edit_mode_edits_without_asking_and_asks_before_a_command(project, stub, chat_in):
    """Repro: tools on, Shift-Tab once (auto-edit); the model edits a file, then runs a
    command: the edit is made without a question, the command asks first."""
    write_files(project, {"notes.txt": "buy milk\n"})
    script(
        stub,
        calls(("edit_file", {"path": "notes.txt", "old": "milk", "new": "bread"})),
        calls(("bash", {"command": "echo ran-it"})),
        openai_stream("Edited and ran."),
    )
    chat = chat_in()
    chat.child.send(SHIFT_TAB)
    wait_toolbar(chat, "auto-edit mode")
    chat.send_line("change my notes, then run the echo")
    chat.wait_text("bash: echo ran-it")
    chat.wait_text(QUESTION)
    assert (project / "notes.txt").read_text() == "buy bread\n"  # edited before any question
    assert chat.term.text().count(PANEL_TITLE) == 1  # the command's question alone
    chat.child.send("y")
    chat.wait_text("Edited and ran.")
    assert tool_results(stub.requests[2])[-1] == "exit code 0\nran-it\n"


@needs_sandbox
def test_auto_mode_runs_a_command_in_the_sandbox_without_asking_and_journals_it(
    project, stub, chat_in
):
    """Repro: tools on, /mode auto; the model runs `echo made > made.txt`: no question, the
    file is made, and /diff shows the change from the journal (undoable with /rewind)."""
    script(
        stub,
        calls(("bash", {"command": "echo made > made.txt"})),
        openai_stream("Made the file."),
    )
    chat = chat_in()
    chat.say("/mode auto")
    chat.send_line("make the file")
    chat.wait_text("Made the file.")
    chat.wait_prompt()
    assert PANEL_TITLE not in chat.term.text()
    assert (project / "made.txt").read_text() == "made\n"
    chat.say("/diff")
    chat.wait_text("+made")
    assert "made.txt" in chat.term.text()


@needs_sandbox
def test_plan_mode_refuses_writes_keeps_commands_read_only_and_one_key_runs_the_plan(
    project, stub, chat_in
):
    """Repro: tools on, /mode auto-edit then /mode plan; asked for a change, the model
    tries to write a file and to `touch` one: the write is refused with a line saying plan
    mode, the command runs read-only and cannot make its file (and nothing offers to run
    it outside the sandbox); the model was told it is in plan mode, and answers with a
    plan. Under it the screen says Ctrl-G carries it out: that key goes back to auto-edit
    and sends "go ahead with the plan", and the model is no longer told it plans."""
    script(
        stub,
        calls(
            ("write_file", {"path": "plan.txt", "content": "x"}),
            ("bash", {"command": "touch made.txt"}),
        ),
        openai_stream("1. Write plan.txt.\n2. Make made.txt."),
        openai_stream("Going ahead."),
    )
    chat = chat_in()
    chat.say("/mode auto-edit")
    chat.say("/mode plan")
    chat.send_line("make the files")
    chat.wait_text("Make made.txt.")
    chat.wait_text("plan mode: Ctrl-G carries out this plan in auto-edit mode")
    chat.wait_prompt()
    wait_toolbar(chat, "plan mode · Ctrl-G carries out the plan in auto-edit mode")
    assert PANEL_TITLE not in chat.term.text()
    assert "[y]es / [n]o" not in chat.term.text()
    refused, touched = tool_results(stub.requests[1])
    assert refused.startswith("Error: refused: plan mode is read-only"), refused
    assert touched.startswith("Error: exit code 1\ntouch: cannot touch"), touched  # failed
    assert not (project / "plan.txt").exists() and not (project / "made.txt").exists()
    assert "You are in plan mode" in system_prompt(stub.requests[0])

    chat.child.send(CTRL_G)
    chat.wait_text("Going ahead.")
    chat.wait_prompt()
    assert user_text(stub.requests[2])[-1] == "go ahead with the plan"
    assert "plan mode" not in system_prompt(stub.requests[2])
    wait_toolbar(chat, "auto-edit mode (Shift-Tab changes it)")


@needs_sandbox
@pytest.mark.parametrize("mode", ["ask", "auto"])
def test_with_review_on_a_command_is_asked_about_once_after_it_ran(project, stub, chat_in, mode):
    """Repro: tools on, /review on, in ask mode or /mode auto; the model runs `echo made >
    made.txt`. In ask mode it was asked about before it ran, then its changes again after:
    twice for one command. Now, in either mode, it is asked once, after it ran in the
    sandbox, with what it changed; nothing is in the workspace before the y."""
    script(
        stub,
        calls(("bash", {"command": "echo made > made.txt"})),
        openai_stream("Made it."),
    )
    chat = chat_in()
    chat.say("/review on")
    chat.say(f"/mode {mode}")
    chat.send_line("make the file")
    chat.wait_text("apply what this command changed in the workspace")
    chat.wait_text("[y]es / [n]o:")
    assert not (project / "made.txt").exists()
    chat.child.send("y")
    chat.wait_text("Made it.")
    assert (project / "made.txt").read_text() == "made\n"
    assert PANEL_TITLE not in chat.term.text()
    assert chat.term.text().count("[y]es / [n]o") == 1


def test_ask_keeps_tools_off_unless_asked_and_its_help_says_so(project, cli, stub):
    """Repro: tools on for the chat (setup said yes), then `toolnexus ask "run the tests"`
    in the project: a question in a pipe or a script must not start writing files or
    running commands. It offers no tool, and `toolnexus ask --help` says that tools are
    off unless --builtins asks for them."""
    stub.handler = lambda request: openai_stream("An answer.")
    helped = PtySession(cli, "ask", "--help", rows=40, cols=120)
    try:
        helped.wait_text("and web tools (the chat offers them when the config says")
    finally:
        helped.close()
    assert "Tools are off unless asked for: --builtins offers the built-in file" in (
        helped.term.text()
    )
    assert cli.call("ask", "run the tests").code == 0
    assert tool_names(stub.requests[-1]) == set()
    assert cli.call("ask", "--builtins", "run the tests").code == 0
    assert {"read_file", "bash"} <= tool_names(stub.requests[-1])
