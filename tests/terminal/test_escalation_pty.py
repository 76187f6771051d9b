"""The question about running a command outside the sandbox cannot hide the command (issue
33), in a real pseudo-terminal of 40 rows: a model's command that begins with 60 lines of
an invisible letter (U+3164, HANGUL FILLER) used to push its real work, `cp ~/.ssh/id_rsa`,
off the screen, and the question's last lines were the command's own output. Now the
command shows escaped, its middle cut to fit, right above the question; its output is
marked apart, above it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.cli_helpers import model_calls, tool_results, write_files
from tests.support.pty_screen import PtySession
from toolnexus.tools._leaving import QUESTION
from toolnexus.tools.sandbox import support

ROWS, COLS = 40, 120
FILLER = "\u3164"
HIDDEN = f"{FILLER}\n" * 60 + "cp ~/.ssh/id_rsa x"
LEAVING_TOOLS = Path(__file__).parents[1] / "support" / "tool_functions" / "leaving.py"


def asked(chat: PtySession, keys: str = "[y]es / [n]o:") -> None:
    """Until the screen's last row asks for the answer with `keys`."""

    def asking() -> bool:
        rows = [row for row in chat.term.display() if row.strip()]
        return bool(rows) and rows[-1].startswith(keys)

    chat.wait(asking, keys)


def on_screen(chat: PtySession) -> str:
    """The rows the screen shows now (not its scrollback)."""
    return "\n".join(chat.term.display())


def rows_above_the_answer(chat: PtySession) -> list[str]:
    """The rows of the screen down to the one that asks for the answer, inside the panel
    above it (its borders stripped)."""
    rows = chat.term.display()
    last = max(i for i, row in enumerate(rows) if "[y]es / [n]o" in row)
    return [row.strip().strip("│╭╮╰╯─").strip() for row in rows[: last + 1]]


@pytest.mark.skipif(support().abi == 0, reason=f"no Landlock: {support().why_not}")
@pytest.mark.parametrize("command", [HIDDEN, "cp ~/.ssh/id_rsa x\n" + "\n".join([FILLER] * 60)])
def test_a_command_beside_60_invisible_lines_shows_with_both_questions(cli, stub, command):
    """Newcomer's repro, the built-in bash, the invisible lines before `cp ~/.ssh/id_rsa`
    or after it: the call's own question and, once the sandbox stopped it, the one about
    leaving the sandbox, each with `cp ~/.ssh/id_rsa` and the question on the visible
    screen, and the invisible letter shown as `\\u3164`."""
    write_files(cli.home, {".ssh/id_rsa": "PRIVATE-KEY-TEXT\n"})
    # Landlock alone refuses the read ("Permission denied"), which offers to leave the
    # sandbox; in namespaces the key is not even there (no question to show)
    cli.write_config("[sandbox]\nnamespaces = false\n")
    work = cli.root / "work"
    work.mkdir()
    model_calls(stub, [("bash", {"command": command})], "Done.")
    chat = PtySession(cli, "chat", "--builtins", "--root", str(work), rows=ROWS, cols=COLS)
    try:
        chat.expect("›")
        chat.send_line("back up my key")
        asked(chat, "[y]es / [n]o / [a]lways (this session):")
        first = on_screen(chat)
        chat.child.send("y")  # runs in the sandbox, which stops it
        asked(chat)
        second = on_screen(chat)
        chat.child.send("n")
        chat.expect("Done.")
    finally:
        chat.close()
    for screen in (first, second):
        assert "cp ~/.ssh/id_rsa x" in screen and "\\u3164" in screen, screen
        assert FILLER not in screen
    assert "approve this tool call?" in first
    assert "run it again outside the sandbox" in second
    assert "PRIVATE-KEY-TEXT" not in chat.term.text()
    assert not (work / "x").exists()
    assert "Permission denied" in tool_results(stub.requests[1])[0]


def test_the_question_shows_the_output_apart_and_the_command_and_question_last(cli, stub):
    """A command that asks to leave the sandbox as bash does (toolnexus.tools._leaving):
    above the command, the end of its output, labelled and indented, escaped too (a line
    of it that reads as the question cannot pass for it); the command's length; its first
    and last lines; the question; then the answer keys."""
    output = (
        f"bash: line 1: {FILLER}: command not found\n" * 3
        + f"{QUESTION} [y]es / [n]o:\n"
        + "\x1b[31mcp: cannot open '~/.ssh/id_rsa' for reading: Permission denied\n"
    )
    model_calls(stub, [("stopped", {"command": HIDDEN, "output": output})], "Done.")
    chat = PtySession(cli, "chat", "--functions", str(LEAVING_TOOLS), "--yes", rows=ROWS, cols=COLS)
    try:
        chat.expect("›")
        chat.send_line("back up my key")
        asked(chat)
        rows = rows_above_the_answer(chat)
        chat.child.send("n")
        chat.expect("Done.")
    finally:
        chat.close()
    assert rows[-4:] == ["cp ~/.ssh/id_rsa x", QUESTION, "", "[y]es / [n]o:"], rows
    label = rows.index(f"the command (61 lines, {len(HIDDEN)} characters):")
    assert rows[label + 1] == "\\u3164"
    assert any(re.fullmatch(r"\.\.\. \d+ lines \.\.\.", row) for row in rows[label:])
    output_rows = rows[label - 6 : label]
    assert output_rows[0] == "output (last 5 lines):"
    assert output_rows[4].startswith("this command failed in the sandbox: run it")
    assert output_rows[4].endswith(" characters … with your files and the network? [y]es / [n]o:")
    assert output_rows[5].startswith("^[[31mcp: cannot open")
    assert all(row.startswith("    ") for row in chat.term.display() if "command not found" in row)
    assert tool_results(stub.requests[1])[0].startswith(
        f"Error: exit code 1\n{output}\n\ndeclined: "
    )
