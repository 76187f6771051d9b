"""Security promise: what the endpoint, a tool or a server sends reaches a terminal without
control sequences (no clipboard write, title change, screen clear, BEL) or Rich markup (no
hyperlink, no style); an approval question shows the whole command; `/copy` puts no control
character on the clipboard; a pipe gets the model's exact bytes. The real CLI runs in
pseudo-terminals against a hostile stub."""

from __future__ import annotations

import asyncio
import io
import json
import os
import sys
import textwrap
from pathlib import Path

import pexpect

from tests.support import cli_helpers, pty_screen
from tests.support.cli_helpers import CLI
from tests.support.pty_screen import PtySession
from tests.support.stub_provider import Recorded, Reply, openai_stream
from toolnexus import create_toolkit
from toolnexus._visible import visible

stub = cli_helpers.stub  # the one that answers by default, not conftest.py's

CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
TITLE = "\x1b]0;pwned\x07"
CLEAR = "\x1b[2J"
HOSTILE = f"Look {CLIPBOARD}here {TITLE}and {CLEAR}there \x9b2J\x07 done."
ATTACKS = (CLIPBOARD, "\x1b]52", TITLE, "\x1b]0;", CLEAR, "\x9b", "\x07")


def assert_harmless(screen: str) -> None:
    found = [attack for attack in ATTACKS if attack in screen]
    assert not found, f"{found} reached the terminal:\n{screen!r}"


def spawn(cli: CLI, *args: str) -> pexpect.spawn:
    child = pty_screen.spawn(cli, *args, rows=40, cols=120, timeout=20)
    child.logfile_read = io.StringIO()  # every byte the terminal got, escape codes too
    return child


def finish(child: pexpect.spawn) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus, child.logfile_read.getvalue()


def test_a_piped_ask_prints_the_models_bytes_exactly(cli, stub):
    stub.handler = lambda rec: openai_stream(HOSTILE)
    result = cli.call("ask", "hi")
    assert result.code == 0, result
    assert result.stdout == HOSTILE + "\n"


def test_ask_on_a_terminal_shows_hostile_text_without_control_sequences(cli, stub):
    stub.handler = lambda rec: openai_stream(HOSTILE, reasoning=f"think {TITLE}{CLEAR} hard")
    code, screen = finish(spawn(cli, "ask", "hi"))
    assert code == 0, screen
    assert_harmless(screen)
    text = cli_helpers.plain(screen)
    assert "^[]52;c;ZWNobyBwd25lZA==^G" in text and "^[]0;pwned^G" in text  # shown, inert
    assert "think" in text and "done." in text


def test_markdown_structures_let_no_escape_through(cli, stub):
    answer = (
        f"# Title {TITLE}\n\n- item {CLIPBOARD}\n\n```\ncode {CLEAR}\n```\n\n"
        f"[a link](http://x/{TITLE}) and `{CLEAR}` &#x1b;]0;entity&#7;\n"
    )
    stub.handler = lambda rec: openai_stream(answer)
    code, screen = finish(spawn(cli, "ask", "hi"))
    assert code == 0, screen
    assert_harmless(screen)


def test_tool_calls_and_tool_output_in_panels_are_harmless(cli, stub, tmp_path):
    tools = tmp_path / "tools.py"
    tools.write_text(
        textwrap.dedent(f'''
        def shout(text: str) -> str:
            """Return the text with something hostile added."""
            return text + {TITLE!r} + {CLEAR!r}
    '''),
        encoding="utf-8",
    )

    def handler(request: Recorded) -> Reply:
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[("shout", {"text": f"arg {CLIPBOARD}"})])
        return openai_stream("all done")

    stub.handler = handler
    code, screen = finish(spawn(cli, "ask", "--functions", str(tools), "go"))
    assert code == 0, screen
    assert_harmless(screen)
    assert "shout" in cli_helpers.plain(screen)


def test_an_endpoint_error_message_is_harmless_on_stderr(cli, stub):
    stub.handler = lambda rec: Reply.error(400, f"bad request {TITLE}{CLEAR}")
    result = cli.call("ask", "hi")
    assert result.code == 1, result
    assert "bad request ^[]0;pwned^G^[[2J" in result.stderr
    assert_harmless(result.stderr)


def test_verbose_side_channel_is_harmless(cli, stub):
    stub.handler = lambda rec: openai_stream("ok", reasoning=f"hmm {CLIPBOARD}")
    result = cli.call("ask", "-v", "hi")
    assert result.code == 0, result
    assert_harmless(result.stderr)
    assert "hmm ^[]52;" in result.stderr


def test_chat_shows_hostile_answers_and_titles_without_control_sequences(cli, stub):
    stub.handler = lambda rec: openai_stream(HOSTILE)
    cli.call("ask", "--id", "evil", f"title {TITLE}")  # a thread whose title is hostile
    child = spawn(cli, "chat")
    child.expect("›")
    child.send("hello\r")
    child.expect("done\\.")
    child.expect("›")
    child.send("/threads\r")
    child.expect("evil")
    child.expect("›")
    child.sendeof()
    code, screen = finish(child)
    assert code == 0, screen
    assert_harmless(screen)


def test_threads_list_and_show_on_a_terminal_are_harmless(cli, stub):
    stub.handler = lambda rec: openai_stream(HOSTILE)
    assert cli.call("ask", "--id", "evil", f"title {TITLE}").code == 0
    for args in (
        ("threads", "list"),
        ("threads", "show", "evil"),
        ("threads", "export", "evil"),
        ("threads", "search", "Look"),
    ):
        code, screen = finish(spawn(cli, *args))
        assert code == 0, screen
        assert_harmless(screen)
    # a pipe still gets the stored text exactly
    assert HOSTILE in cli.call("threads", "export", "evil").stdout


def test_visible_shows_every_control_character_and_keeps_text():
    assert visible("a\tb\nc\r\n") == "a\tb\nc\n"
    assert visible("\x1b[2J\x07\x00\x7f\x9b") == "^[[2J^G^@^?^[["
    assert visible("naïve — ünïcode ✓") == "naïve — ünïcode ✓"


SPAMMER = Path(__file__).parents[1] / "support" / "mcp_servers" / "stderr_spammer.py"


def test_mcp_server_stderr_is_a_bounded_harmless_tail(tmp_path):
    """A server that floods stderr with escape sequences, then dies: its status shows the
    last line, inert, and only a bounded tail was kept."""

    async def main() -> tuple[str, int]:
        toolkit = await create_toolkit()
        from toolnexus.mcp import add_mcp_servers

        config = {"mcpServers": {"spam": {"command": sys.executable, "args": [str(SPAMMER)]}}}
        try:
            [status] = await add_mcp_servers(toolkit, config, timeout=20)
            return str(status.state), 0
        finally:
            await toolkit.close()

    status, _ = asyncio.run(main())
    assert status.startswith("failed"), status
    assert "last words ^[]0;pwned^G" in status, status
    assert "\x1b" not in status and "\x07" not in status


def test_the_stderr_tail_is_bounded():
    from toolnexus.mcp._process import STDERR_TAIL, StderrTail

    tail = StderrTail()
    for _ in range(1000):
        tail.add(b"x" * 1000 + b"\n")
    tail.add(b"the end\x1b[2J\n")
    assert len(tail.data) <= STDERR_TAIL
    assert tail.last_line() == "the end^[[2J"


MARKUP = "[link=https://evil.example]click[/link] and [bold red]LOUD[/bold red]"
HYPERLINK = "\x1b]8;"  # OSC 8: the terminal makes the text a link


def test_tools_shows_markup_from_tools_and_servers_literally(cli, stub, tmp_path):
    tools = tmp_path / "tools.py"
    tools.write_text(f'def lure() -> str:\n    """{MARKUP}"""\n    return ""\n')
    mcp = tmp_path / "mcp.json"  # a server that cannot start: /tools lists its name
    mcp.write_text(json.dumps({"mcpServers": {"[link=https://evil.example]srv[/link]": {}}}))
    chat = PtySession(cli, "chat", "--functions", str(tools), "--mcp", str(mcp), rows=40, cols=160)
    try:
        chat.expect("›")
        chat.send_line("/tools")
        chat.wait(
            lambda: "mcp:" in chat.term.text() and chat.term.cursor_line() == "›",
            "the tools listed and a new prompt",
        )
    finally:
        chat.close()
    assert HYPERLINK not in chat.term.raw_text()
    assert MARKUP in chat.term.text()
    assert "mcp:[link=https://evil.example]srv[/link]" in chat.term.text()


def test_an_approval_question_shows_the_command_between_runs_of_blank_lines(cli, stub):
    cli.in_project()
    """Blank lines cannot push a command off a 40-row screen, above or below it."""
    command = "echo hi\n" + "\n" * 500 + "rm -rf ~/precious\n" + "  \t\n" * 500 + "echo done"
    replies = [openai_stream(tool_calls=[("bash", {"command": command})]), openai_stream("not run")]
    stub.handler = lambda rec: replies[len(stub.requests) - 1]
    chat = PtySession(cli, "chat", "--builtins", rows=40, cols=100)
    try:
        chat.expect("›")
        chat.send_line("go")
        chat.expect(r"\[y\]es / \[n\]o / \[a\]lways")
        screen = "\n".join(chat.term.display())
        chat.child.send("n")
        chat.expect("not run")
    finally:
        chat.close()
    for line in ("bash: echo hi", "rm -rf ~/precious", "echo done"):
        assert line in screen, screen
    assert screen.count("(500 blank lines)") == 2, screen


def fake_clipboard(cli: CLI, folder: Path) -> Path:
    """A `wl-copy` first on `cli`'s PATH that keeps what it is given in the file returned."""
    tool, kept = folder / "bin" / "wl-copy", folder / "clipboard"
    tool.parent.mkdir()
    tool.write_text(f"#!/bin/sh\ncat > '{kept}'\n")
    tool.chmod(0o755)
    cli.env["PATH"] = f"{tool.parent}{os.pathsep}{cli.env['PATH']}"
    return kept


def test_copy_puts_no_control_characters_on_the_clipboard(cli, stub, tmp_path):
    paste_out = "\x1b[201~"  # ends a bracketed paste: what follows would run in a shell
    answer = f"{HOSTILE}\n{paste_out}rm -rf ~/precious\r\n```\nls {TITLE}\n```\n"
    stub.handler = lambda rec: openai_stream(answer)
    clipboard = fake_clipboard(cli, tmp_path)
    chat = PtySession(cli, "chat", rows=40, cols=120)
    try:
        chat.expect("›")
        chat.send_line("hello")
        chat.expect("precious")
        chat.send_line("/copy")
        chat.expect("copied the last answer \\(wl-copy\\)")
        copied = clipboard.read_text()
        chat.send_line("/copy code")
        chat.expect("copied code block 1")
        code = clipboard.read_text()
    finally:
        chat.close()
    assert copied == "Look here and there  done.\nrm -rf ~/precious\n```\nls \n```\n"
    assert code == "ls \n"
