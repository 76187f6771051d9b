"""What a person types at the chat, in a real pseudo-terminal against the stub endpoint
(issue 22, "The chat for daily work"): shell mode and pasted `!` lines, lines starting with
`/` that are not commands, one-key answers, typing while an answer streams, and how to come
back to a thread. Each test's docstring holds the steps a newcomer took to find its bug."""

from __future__ import annotations

import re

from tests import chat_session, cli_helpers
from tests.chat_session import CTRL_D, PROMPT, Chat, conversation, numbered_answers
from tests.stub_provider import png_bytes

cli = cli_helpers.cli  # fixture; its `stub` is the plain one of conftest.py
open_chat = chat_session.open_chat  # fixture


def at_prompt(chat: Chat, text: str) -> None:
    """Until the prompt line holds `text`, typed but not sent."""
    chat.wait(lambda: chat.term.cursor_line() == f"{PROMPT} {text}", f"{text!r} at the prompt")


# --------------------------------------------------------------------- one-key answers


def test_a_yes_no_takes_one_key_and_what_is_typed_next_goes_to_the_prompt(stub, cli,
                                                                          open_chat):
    """The newcomer's steps: `!git log -3`, then at "add this output to your next message?
    [y/N]" press y and type the question straight away. Nothing happened until Enter, and
    then "ywhat changed?" was the answer, which meant no: the output was not added."""
    numbered_answers(stub)
    chat = open_chat()
    chat.send_line("!echo hi")
    chat.wait_text("add this output to your next message? [y/N]")
    chat.child.send("ywhat is this?")
    at_prompt(chat, "what is this?")
    chat.send_line("")
    chat.wait_text("answer 1.")
    assert conversation(stub.requests[0]) == [
        ("user", "```console\n$ echo hi\nhi\n```\n\nwhat is this?")]

    (cli.home / "cat.png").write_bytes(png_bytes())
    chat.send_line("cat.png")
    chat.wait_text("attach cat.png? [Y/n]")
    chat.child.send("nthe file name")  # no: the line goes as text; the rest is the next line
    at_prompt(chat, "the file name")


# ------------------------------------------------------------ lines starting with "/"


def test_a_line_starting_with_a_slash_that_is_no_command_is_a_message(stub, cli, open_chat):
    """The newcomer's steps: ask "/usr/bin/env python3 -V prints nothing, why?", paste the
    path of a screenshot (/home/me/shot.png), and try "//help" for the word itself: each
    said "unknown command", though the README promises that a pasted image path offers to
    attach it. A mistyped command (/hepl) still says it is one."""
    numbered_answers(stub)
    (cli.home / "shot.png").write_bytes(png_bytes())
    chat = open_chat()
    chat.say("/usr/bin/env python3 -V prints nothing, why?")
    chat.wait_text("answer 1.")
    chat.say("//help")
    chat.wait_text("answer 2.")
    chat.send_line(str(cli.home / "shot.png"))
    chat.wait_text("attach shot.png? [Y/n]")
    chat.child.send("y")
    chat.wait_prompt()
    chat.say("/hepl")
    assert "unknown command /hepl - did you mean /help? (//hepl sends it as text)" in (
        chat.term.lines())
    chat.say("what is in it?")
    chat.wait_text("answer 3.")
    assert [conversation(request)[-1] for request in stub.requests[:2]] == [
        ("user", "/usr/bin/env python3 -V prints nothing, why?"), ("user", "/help")]
    content = stub.requests[2].json["messages"][-1]["content"]
    assert content[0] == {"type": "text", "text": "what is in it?"}
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert len(stub.requests) == 3


# ------------------------------------------------------------------------ shell mode

PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"  # how a terminal brackets a paste


def shows(chat: Chat, text: str) -> bool:
    """Whether the screen (not its scrollback) shows `text` now."""
    return any(text in line for line in chat.term.display())


def test_a_line_starting_with_a_bang_shows_shell_mode(stub, open_chat):
    """The newcomer's steps: type "!ls" at the prompt: nothing on the screen says that
    Enter will run it with the shell rather than send it."""
    chat = open_chat()
    chat.child.send("hello")
    at_prompt(chat, "hello")
    assert not shows(chat, "shell mode")
    chat.child.send("\x15!echo single")  # Ctrl-U, then a shell line
    chat.wait(lambda: shows(chat, "shell mode: Enter runs this line with your shell"),
              "the shell mode toolbar")
    chat.send_line("")
    chat.wait_text("add this output to your next message? [y/N]")
    assert not shows(chat, "shell mode"), "the toolbar outlived its line"
    assert "single" in chat.term.lines()
    assert not stub.requests


def test_a_pasted_paragraph_starting_with_a_bang_asks_before_running(stub, cli, open_chat):
    """The newcomer's steps: copy a paragraph of a code review that starts with "!" (its
    next line was "rm is not used here") and paste it at the prompt, then Enter: every
    line ran in bash at once, and nothing asked."""
    ran = cli.root / "ran"
    paste = f"!! wrong, see below\necho line two >> {ran}\necho line three >> {ran}"
    chat = open_chat()
    chat.child.send(PASTE_START + paste + PASTE_END + "\r")
    chat.wait_text("run these 3 lines with your shell? [y/N]")
    assert all(any(line in row for row in chat.term.lines()) for line in paste.splitlines())
    chat.child.send("\r")  # no, by default
    chat.wait_prompt()
    assert "(not run)" in chat.term.lines() and not ran.exists()

    chat.child.send(PASTE_START + paste + PASTE_END + "\r")
    chat.wait_text("run these 3 lines with your shell? [y/N]", 2)
    chat.child.send("y")
    chat.wait_text("add this output to your next message? [y/N]")
    assert ran.read_text() == "line two\nline three\n"
    assert not stub.requests


# --------------------------------------------------------------------------- leaving


def test_leaving_says_how_to_go_on_with_the_thread(stub, cli, open_chat):
    """The newcomer's steps: a long talk, Ctrl-D for the night, and the next morning no
    idea how to get back to it (the id was in the first line, scrolled away long ago)."""
    numbered_answers(stub)
    chat = open_chat()
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0
    assert "to go on with this thread" not in chat.term.text(), "an empty thread offered"

    chat = open_chat()
    chat.say("hello")
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0
    thread = re.search(r"thread (t-[0-9a-f]{8})", chat.term.text())[1]
    last = [line for line in chat.term.lines() if line.strip()][-1]
    assert last == f"to go on with this thread: toolnexus chat --id {thread}", chat.term.text()
    chat = open_chat("--id", thread)
    chat.send_line("/exit")  # /exit says it too
    assert chat.exit_code() == 0
    assert f"to go on with this thread: toolnexus chat --id {thread}" in chat.term.lines()
    assert conversation(stub.requests[0]) == [("user", "hello")]
