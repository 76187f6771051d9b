"""What a person types at the chat, in a real pseudo-terminal against the stub endpoint
(issue 22, "The chat for daily work"): shell mode and pasted `!` lines, lines starting with
`/` that are not commands, one-key answers, typing while an answer streams, and how to come
back to a thread. Each test's docstring holds the steps a newcomer took to find its bug."""

from __future__ import annotations

from tests import chat_session, cli_helpers
from tests.chat_session import PROMPT, Chat, conversation, numbered_answers
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
