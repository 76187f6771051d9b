"""What a person types at the chat, in a real pseudo-terminal against the stub endpoint
(issue 22, "The chat for daily work"): shell mode and pasted `!` lines, lines starting with
`/` that are not commands, one-key answers, typing while an answer streams, and how to come
back to a thread. Each test's docstring holds the steps a newcomer took to find its bug."""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Callable, Iterator

import pytest

from tests.support.chat_session import CTRL_D, PROMPT, Chat, conversation, numbered_answers
from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream, png_bytes
from tests.support.waiting import WAIT_S


def at_prompt(chat: Chat, text: str) -> None:
    """Until the prompt line holds `text`, typed but not sent."""
    chat.wait(lambda: chat.term.cursor_line() == f"{PROMPT} {text}", f"{text!r} at the prompt")


# --------------------------------------------------------------------- one-key answers


def test_a_yes_no_takes_one_key_and_what_is_typed_next_goes_to_the_prompt(stub, cli, open_chat):
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
        ("user", "```console\n$ echo hi\nhi\n```\n\nwhat is this?")
    ]

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
        chat.term.lines()
    )
    chat.say("what is in it?")
    chat.wait_text("answer 3.")
    assert [conversation(request)[-1] for request in stub.requests[:2]] == [
        ("user", "/usr/bin/env python3 -V prints nothing, why?"),
        ("user", "/help"),
    ]
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
    chat.wait(
        lambda: shows(chat, "shell mode: Enter runs this line with your shell"),
        "the shell mode toolbar",
    )
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


# ------------------------------------------------------- typing while an answer streams

INTERRUPTED = "(interrupted: the partial answer is kept)"


def first_answer_held(stub: StubProvider, go_on: threading.Event) -> None:
    """The first answer streams "w01 w02" and waits for `go_on` to end with " w03."; the
    n-th after it is "answer n."."""

    def handler(request: Recorded) -> Reply:
        if len(stub.requests) > 1:
            return openai_stream(f"answer {len(stub.requests)}.")
        reply = openai_stream("w01 w02 w03.")
        parts = list(reply.parts)  # the role, then a part a word, then the end

        def stream() -> Iterator[bytes]:
            yield from parts[:3]
            go_on.wait(WAIT_S)
            yield from parts[3:]

        reply.parts = stream()  # type: ignore[assignment]
        return reply

    stub.handler = handler


@pytest.fixture
def go_on() -> Iterator[threading.Event]:
    """Set to let a held answer end (and set after the test, so the stub is not held)."""
    event = threading.Event()
    yield event
    event.set()


def queued_while_held(
    stub: StubProvider, open_chat: Callable[..., Chat], go_on: threading.Event, line: str
) -> Chat:
    """A chat whose first answer is held (see first_answer_held), `line` typed and
    queued meanwhile."""
    first_answer_held(stub, go_on)
    chat = open_chat()
    chat.send_line("count")
    chat.wait_text("w02")
    chat.child.send(line + "\r")
    chat.wait(lambda: shows(chat, f"queued: {line}"), "the queued line")
    return chat


def test_what_is_typed_while_an_answer_streams_is_queued_and_sent_after_it(stub, open_chat, go_on):
    """The newcomer's steps: while a long answer streamed, type the next question and
    press Enter, as in Claude Code: nothing showed what was typed, nor that it would be
    sent."""
    chat = queued_while_held(stub, open_chat, go_on, "and then?")
    chat.child.send("half typed")
    chat.wait(lambda: shows(chat, "typing: half typed"), "the line being typed")
    go_on.set()
    chat.wait_text("answer 2.")
    at_prompt(chat, "half typed")  # not queued: it waits at the prompt
    assert f"{PROMPT} and then?" in chat.term.lines()
    assert conversation(stub.requests[1])[-2:] == [
        ("assistant", "w01 w02 w03."),
        ("user", "and then?"),
    ]
    assert len(stub.requests) == 2


def test_esc_drops_the_queue_and_after_ctrl_c_it_waits_at_the_prompt(stub, open_chat, go_on):
    """The newcomer's steps: while an answer streamed, type "never mind" and Enter,
    think better of it, press Esc; paste two lines and Enter; then stop the answer with
    Ctrl-C: what was typed during the answer could be neither seen nor taken back."""
    chat = queued_while_held(stub, open_chat, go_on, "never mind")
    chat.child.send("\x1b")
    chat.wait(lambda: not shows(chat, "queued:"), "the queue dropped")
    chat.child.send(PASTE_START + "two\nlines" + PASTE_END + "\r")
    chat.wait(lambda: shows(chat, "queued: two (+1 line)"), "the paste queued whole")
    chat.interrupt()
    chat.wait_text(INTERRUPTED)
    chat.wait(lambda: chat.term.cursor_line() == "lines", "the queue back at the prompt")
    assert f"{PROMPT} two" in chat.term.display()
    assert len(stub.requests) == 1, "something queued was sent after Ctrl-C"
    chat.send_line("")
    chat.wait_text("answer 2.")
    assert conversation(stub.requests[1])[-1] == ("user", "two\nlines")


def test_esc_says_what_it_dropped(stub, open_chat, go_on):
    """The newcomer's steps: while an answer streamed, type "never mind" and Enter (it
    shows as queued), type "half" without Enter, then press Esc: both vanished without a
    word, and nothing said afterwards whether they had been sent. Now a dim line says what
    was dropped, under the answer at once and above the next prompt once it ends."""
    chat = queued_while_held(stub, open_chat, go_on, "never mind")
    chat.child.send("half")
    chat.wait(lambda: shows(chat, "typing: half"), "the line being typed")
    chat.child.send("\x1b")
    chat.wait(lambda: shows(chat, "queued message dropped: never mind"), "the drop said")
    assert shows(chat, "unsent line dropped: half") and not shows(chat, "queued:")
    go_on.set()
    chat.wait_prompt()
    lines = chat.term.lines()
    answer = lines.index("w01 w02 w03.")
    said = [line for line in lines[answer:] if "dropped" in line]
    assert said == ["queued message dropped: never mind", "unsent line dropped: half"], lines
    assert len(stub.requests) == 1, "a dropped message was sent"
    assert chat.term.cursor_line().strip() == PROMPT


def test_keys_typed_while_an_answer_streams_edit_the_line_as_at_the_prompt():
    """Arrows and function keys do nothing, even when a read cuts their sequence; Esc
    Enter starts a new line; Backspace and Ctrl-U edit; a paste is one message even when
    it comes in pieces; Enter on a blank line queues nothing; Esc alone drops it all."""
    from toolnexus_cli.chat.terminal import TypeAhead

    typed = TypeAhead(io.StringIO())
    for keys in [
        "ab\x1b[A\x1b[",
        "D\x1bOPc\x7f\x1b\r",
        "d\r\r",
        "x\x15",
        PASTE_START + "one\r\n",
        "two" + PASTE_END + "!\r",
        "!éh",
    ]:
        typed.feed(keys)
    assert typed.queued == ["ab\nd", "one\ntwo!"] and typed.line == "!éh"
    assert typed.shown().splitlines()[:3] == [
        "queued: ab (+1 line)",
        "queued: one (+1 line)",
        "typing (shell mode): !éh",
    ]
    typed.feed("\x1b")
    assert (typed.queued, typed.line) == ([], "")
    assert typed.take_dropped() == [
        "queued message dropped: ab (+1 line)",
        "queued message dropped: one (+1 line)",
        "unsent line dropped (shell mode): !éh",
    ]
    assert typed.shown() == "" and typed.take_dropped() == []


def test_ctrl_d_typed_while_an_answer_streams_leaves_once_the_queue_is_done():
    """Ctrl-D pressed just as an answer ends (before the prompt is drawn) must not be lost:
    on an empty line it leaves, as at the prompt, after what was queued before it; with
    text typed, it is no key; Esc takes it back."""
    from toolnexus_cli.chat.terminal import TypeAhead

    typed = TypeAhead(io.StringIO())
    typed.feed("first\r\x04")
    assert typed.next_queued() == "first"
    with pytest.raises(EOFError):
        typed.next_queued()
    assert typed.next_queued() is None  # once
    typed.feed("half\x04")
    assert not typed.leaving and typed.line == "half"
    typed.feed("\x15\x04\x1b")
    assert not typed.leaving


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


def test_the_way_back_names_the_config_the_chat_used(stub, cli, open_chat):
    """Repro: `toolnexus chat --config "my configs/work.toml"`, a question, Ctrl-D: the
    line on leaving said `toolnexus chat --id T`, which opens the thread with the default
    config (another endpoint, maybe another store). It names the config now, quoted for
    the shell."""
    numbered_answers(stub)
    config = cli.root / "my configs" / "work.toml"
    config.parent.mkdir()
    config.write_text("max_turns = 5\n")
    config.chmod(0o600)
    chat = open_chat("--config", str(config), cols=240)  # the line on one row
    chat.say("hello")
    chat.child.send(CTRL_D)
    assert chat.exit_code() == 0
    thread = re.search(r"thread (t-[0-9a-f]{8})", chat.term.text())[1]
    last = [line for line in chat.term.lines() if line.strip()][-1]
    assert last == (
        f"to go on with this thread: toolnexus chat --id {thread} --config '{config}'"
    ), chat.term.text()
