"""The chat's conveniences in a real pseudo-terminal against the stub endpoint (issue 17,
"Chat features"): /copy, /fork and /edit last, !command, vi keys, themes, resizing."""

from __future__ import annotations

import base64
import os
import re
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.chat_session import COLS, PROMPT, ROWS, Chat, conversation, numbered_answers
from tests.support.cli_helpers import CLI
from tests.support.pty_screen import PtySession
from tests.support.stub_provider import Reply, StubProvider, openai_stream
from tests.support.waiting import WAIT_S, alive, pids_in

LONG_LINE = "x = [" + ", ".join(str(n) for n in range(60)) + "]  # wider than the screen"
SECOND_BLOCK = f"def f(a):\n\treturn a  \n\n\n{LONG_LINE}\n"  # a tab, trailing spaces, blanks
ANSWER = (
    "Two blocks.\n\n```sh\necho one\n```\n\nAnd:\n\n```python\n" + SECOND_BLOCK + "```\n\nDone."
)


def only_on_path(cli: CLI, scripts: dict[str, str]) -> Path:
    """PATH holds only a folder of these shell scripts (and /bin for their shell)."""
    folder = cli.root / "bin"
    folder.mkdir(exist_ok=True)
    for name, body in scripts.items():
        path = folder / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    cli.env["PATH"] = f"{folder}{os.pathsep}/bin"
    return folder


# ----------------------------------------------------------------------------- /copy


def test_copy_code_2_puts_exactly_the_second_block_on_the_native_clipboard(stub, cli, open_chat):
    clipboard = cli.root / "clipboard"
    only_on_path(cli, {"xclip": f'cat > "{clipboard}"'})
    stub.handler = lambda request: openai_stream(ANSWER)
    chat = open_chat()
    chat.say("show me code")
    chat.say("/copy code 2")
    assert clipboard.read_bytes() == SECOND_BLOCK.encode()
    assert "copied code block 2 of 2 (xclip)" in chat.term.text()
    chat.say("/copy code")  # the last block by default
    assert clipboard.read_bytes() == SECOND_BLOCK.encode()
    chat.say("/copy code 1")
    assert clipboard.read_bytes() == b"echo one\n"
    chat.say("/copy")
    assert clipboard.read_bytes() == ANSWER.encode()
    assert "copied the last answer (xclip)" in chat.term.text()
    chat.say("/copy code 3")
    assert "the last answer has 2 code blocks" in chat.term.text()
    assert "]52;" not in chat.term.raw_text()


NINE_LINES = '''
def nine_lines() -> str:
    """Nine numbered lines."""
    return "\\n".join(f"row {n}" for n in range(1, 10))
'''


def test_counts_of_one_read_as_one(stub, cli, open_chat):
    """Repro: a tool printed one line more than its panel shows, and the panel ended
    "... 1 more lines"; /copy code 2 after an answer with one code block said "the last
    answer has 1 code blocks". Every count in the chat's words now agrees with its noun."""
    tools = cli.root / "rows.py"
    tools.write_text(NINE_LINES)
    replies = iter(
        [
            openai_stream(tool_calls=[("nine_lines", {})]),
            openai_stream("One block:\n\n```sh\necho one\n```\n"),
        ]
    )
    stub.handler = lambda request: next(replies)
    chat = open_chat("--functions", str(tools))
    chat.say("count rows")
    chat.wait_text("row 8")
    assert "... 1 more line" in chat.term.text() and "1 more lines" not in chat.term.text()
    assert "row 9" not in chat.term.text()
    chat.say("/copy code 2")
    assert "the last answer has 1 code block" in chat.term.text()
    assert "1 code blocks" not in chat.term.text()


def test_copy_without_a_clipboard_tool_writes_osc_52(stub, cli, open_chat):
    only_on_path(cli, {})
    stub.handler = lambda request: openai_stream(ANSWER)
    chat = open_chat()
    chat.say("show me code")
    chat.say("/copy code 2")
    encoded = base64.b64encode(SECOND_BLOCK.encode()).decode()
    assert f"\x1b]52;c;{encoded}\x07" in chat.term.raw_text()
    assert "copied code block 2 of 2 (OSC 52)" in chat.term.text()


# --------------------------------------------------------------------------- !command


def test_bang_runs_a_command_here_and_its_output_can_go_with_the_next_message(stub, open_chat):
    numbered_answers(stub)
    chat = open_chat()
    chat.send_line("!echo hi; printf 'esc:\\033[31m red'")
    chat.wait_text("add this output to your next message? [y/N]")
    lines = chat.term.lines()
    assert "$ echo hi; printf 'esc:\\033[31m red'" in lines
    assert "hi" in lines and "esc:^[[31m red" in lines, "the output is shown visible"
    assert not stub.requests, "the model was involved"
    chat.child.send("y")  # one key answers
    chat.wait_prompt()
    chat.say("what is this?")
    assert conversation(stub.requests[0]) == [
        (
            "user",
            "```console\n$ echo hi; printf 'esc:\\033[31m red'\nhi\nesc:\x1b[31m red\n```"
            "\n\nwhat is this?",
        )
    ]
    chat.send_line("!echo again")
    chat.wait_text("add this output to your next message? [y/N]", count=2)
    chat.child.send("\r")  # N by default
    chat.wait_prompt()
    chat.say("and now?")
    assert conversation(stub.requests[1])[-1] == ("user", "and now?")


def test_ctrl_c_kills_the_process_group_of_a_bang_command(stub, cli, open_chat):
    pids = cli.root / "pids"
    chat = open_chat()
    chat.send_line(f"!sleep 300 & echo $$ $! > {pids}; echo ready$((6*7)); wait")
    chat.wait_text("ready42")
    shell, sleeper = pids_in(pids)
    chat.interrupt()
    chat.wait_text("its process group was killed")
    chat.wait_text("add this output to your next message? [y/N]")
    chat.child.send("n")
    chat.wait_prompt()
    chat.wait(lambda: not alive(sleeper) and not alive(shell), "the command's processes to end")
    assert not stub.requests


# ------------------------------------------------------------------- /fork, /edit last


def thread_ids(chat: Chat) -> list[str]:
    return re.findall(r"thread (t-[0-9a-f]{8})", chat.term.text())


def after_one_and_two(stub: StubProvider, open_chat: Callable[..., Chat]) -> tuple[Chat, str]:
    """A chat that said "one" and "two" ("answer 1.", "answer 2."), and its thread's id."""
    numbered_answers(stub)
    chat = open_chat()
    origin = thread_ids(chat)[0]
    chat.say("one")
    chat.say("two")
    return chat, origin


def test_fork_goes_on_in_a_new_thread_and_leaves_this_one_as_it_was(stub, cli, open_chat):
    chat, origin = after_one_and_two(stub, open_chat)
    chat.say("/fork 2")
    forked = re.search(
        rf"forked {origin} at message 2: now on thread (t-[0-9a-f]{{8}})", chat.term.text()
    )
    assert forked, chat.term.text()
    chat.say("three")
    assert conversation(stub.requests[2]) == [
        ("user", "one"),
        ("assistant", "answer 1."),
        ("user", "three"),
    ]
    assert [m["content"] for m in cli.thread(forked[1])] == [
        "one",
        "answer 1.",
        "three",
        "answer 3.",
    ]
    assert [m["content"] for m in cli.thread(origin)] == ["one", "answer 1.", "two", "answer 2."]
    chat.say("/fork")  # all of it by default
    chat.say("four")
    assert conversation(stub.requests[3])[:-1] == conversation(stub.requests[2]) + [
        ("assistant", "answer 3.")
    ]
    chat.say("/fork 9")
    assert "has 6 messages: a fork keeps 1 to 6 of them, not 9" in chat.term.text()


def test_fork_refuses_to_cut_a_tool_call_from_its_results_as_threads_fork_does(
    stub, cli, open_chat
):
    """Repro: a thread whose answer called a tool (prompt, call, result, answer); in the
    chat /fork 2 refused to cut the call from its result, while `toolnexus threads fork ID
    --at 2` made such a fork. Both now say the same one line, and N counts the same
    messages: /fork 3 and `threads fork ID 3` keep the same ones."""
    call = {"id": "c1", "type": "function", "function": {"name": "now", "arguments": "{}"}}
    cli.seed_thread(
        "t-tool",
        [
            {"role": "user", "content": "what time is it?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "12:00"},
            {"role": "assistant", "content": "Noon."},
        ],
    )
    refusal = "message 2 calls a tool whose results end at message 3: fork at 1 or 3, not 2"
    chat = open_chat("--id", "t-tool")
    chat.say("/fork 2")
    assert refusal in chat.term.text()
    assert "now on thread" not in chat.term.text()
    r = cli.call("threads", "fork", "t-tool", "2")
    assert r.code == 1 and r.stderr == f"error: {refusal}\n", r

    chat.say("/fork 3")
    forked = re.search(
        r"forked t-tool at message 3: now on thread (t-[0-9a-f]{8})", chat.term.text()
    )
    assert forked, chat.term.text()
    r = cli.call("threads", "fork", "t-tool", "3")
    assert r.code == 0, r
    assert cli.thread(r.stdout.strip()) == cli.thread(forked[1])
    assert [m["role"] for m in cli.thread(forked[1])] == ["user", "assistant", "tool"]


def test_edit_last_sends_the_edited_prompt_on_a_fork(stub, cli, open_chat):
    editor = only_on_path(cli, {"fake-editor": "sed -i 's/two/TWO, edited/' \"$1\""})
    cli.env["EDITOR"] = str(editor / "fake-editor")
    chat, origin = after_one_and_two(stub, open_chat)
    chat.send_line("/edit last")
    chat.wait_text("send it? [Y/n]")
    chat.child.send("y")  # the edited message is shown and sent only when confirmed
    chat.wait_prompt()
    assert "answer 3." in chat.term.text()
    assert f"forked {origin} before its last prompt" in chat.term.text()
    assert conversation(stub.requests[2]) == [
        ("user", "one"),
        ("assistant", "answer 1."),
        ("user", "TWO, edited"),
    ]
    assert [m["content"] for m in cli.thread(origin)] == ["one", "answer 1.", "two", "answer 2."], (
        "history rewritten"
    )
    chat.say("go on")
    assert conversation(stub.requests[3])[-3:] == [
        ("user", "TWO, edited"),
        ("assistant", "answer 3."),
        ("user", "go on"),
    ]


# ------------------------------------------------------------------ vi keys, themes


def shows(chat: Chat, text: str) -> bool:
    return any(text in line for line in chat.term.display())


def test_vi_mode_edits_with_esc_0_x_and_the_toolbar_shows_the_mode(stub, cli, open_chat):
    cli.write_config('[ui]\nediting_mode = "vi"\n')
    numbered_answers(stub)
    chat = open_chat()
    chat.wait(lambda: shows(chat, "-- INSERT --"), "the INSERT mode toolbar")
    chat.child.send("hello vi")
    chat.wait(lambda: "hello vi" in chat.term.cursor_line(), "the typed text")
    chat.child.send("\x1b")
    chat.wait(lambda: shows(chat, "-- NORMAL --"), "the NORMAL mode toolbar")
    chat.child.send("0")
    chat.child.send("x")
    chat.wait(lambda: chat.term.cursor_line().endswith("› ello vi"), "x to delete at 0")
    chat.send_line("")
    chat.wait_prompt()
    assert conversation(stub.requests[0]) == [("user", "ello vi")]


def code_colour(chat: Chat, word: str) -> str:
    """The foreground colour the screen shows `word` in."""
    screen = chat.term.screen
    for y, line in enumerate(chat.term.display()):
        x = line.find(word)
        if x >= 0:
            return screen.buffer[y][x].fg
    raise AssertionError(f"no {word!r} on the screen:\n{chat.term.text()}")


@pytest.mark.parametrize(
    ("background", "colour"),
    [
        ("rgb:ffff/ffff/f0f0", "blue"),  # a light background answered: light theme
        ("rgb:1e1e/1e1e/1e1e", "cyan"),  # a dark one: Rich's dark Markdown styles
        (None, "cyan"),  # the terminal does not answer OSC 11: dark
    ],
)
def test_auto_theme_asks_the_terminal_for_its_background(stub, open_chat, background, colour):
    stub.handler = lambda request: openai_stream("run `inline_thing` now")
    chat = open_chat(background=background)
    assert "\x1b]11;?\x1b\\" in chat.term.raw_text()
    chat.say("hi")
    chat.wait_text("inline_thing")
    assert code_colour(chat, "inline_thing") == colour


def test_a_terminal_answering_after_the_chat_stopped_waiting_types_nothing(stub, open_chat):
    """A slow terminal (or link) answers the background question after the chat gave up
    waiting: the answers arrive at the prompt, among the keys typed there."""
    stub.handler = lambda request: openai_stream("run `inline_thing` now")
    chat = open_chat(background="rgb:ffff/ffff/f0f0", answers_late=True)
    assert len(chat.term.late) == 2  # OSC 11 and DA1, asked and not answered yet
    chat.term.send_late_answers()
    chat.say("hi")
    assert conversation(stub.requests[-1])[-1] == ("user", "hi")
    chat.wait_text("inline_thing")
    assert code_colour(chat, "inline_thing") == "cyan"  # answered too late: dark


def test_keys_typed_while_the_chat_asks_the_terminal_reach_the_first_prompt(stub, cli):
    stub.handler = lambda request: openai_stream("ok")
    chat = PtySession(
        cli, "chat", rows=ROWS, cols=COLS, background="rgb:1e1e/1e1e/1e1e", answers_late=True
    )
    try:
        chat.wait(lambda: len(chat.term.late) == 2, "the background question")
        chat.child.send("hello there")  # typed before the terminal answers
        chat.term.send_late_answers()
        chat.wait(lambda: f"{PROMPT} hello there" in chat.term.text(), "the keys at the prompt")
        chat.send_line("")
        assert stub.wait_for_requests(1, WAIT_S)
        assert conversation(stub.requests[0])[-1] == ("user", "hello there")
    finally:
        chat.close()


def test_no_color_asks_nothing_and_a_bad_theme_is_one_line(stub, cli, open_chat):
    cli.env["NO_COLOR"] = "1"
    chat = open_chat(background="rgb:ffff/ffff/ffff")
    chat.say("hi")
    assert "]11;?" not in chat.term.raw_text()
    cli.write_config('[ui]\ntheme = "ligth"\nediting_mode = "vim"\n')
    result = cli.call("ask", "hi")
    assert (
        result.code == 2
        and "'ui.theme' = 'ligth' is not a known value: did you mean 'light'?" in result.stderr
    ), result
    cli.write_config('[ui]\nediting_mode = "vim"\n')
    result = cli.call("ask", "hi")
    assert "did you mean 'vi'?" in result.stderr, result


# --------------------------------------------------------------------------- resizing

ABOVE = [f"above {n}: a paragraph printed before the live part" for n in range(1, 4)]
LIVE = [f"live {n:02d}: a line of the block that still streams" for n in range(1, 13)]
HELD = "\n\n".join(ABOVE) + "\n\n" + "\n".join(LIVE[:8])  # on the screen while the stream waits
RESIZED = HELD + "\n" + "\n".join(LIVE[8:]) + "\n\nDone."  # lines 31 to 60 columns wide


def held_after(text: str, shown: str, go_on: threading.Event) -> Reply:
    """`text` streamed a word a chunk, stopping after the words of `shown` (the start of
    `text`, up to the end of a word) until `go_on`."""
    reply = openai_stream(text)
    parts = list(reply.parts)
    held = len(openai_stream(shown).parts) - 3  # not its finish, usage and [DONE]

    def stream() -> Iterator[bytes]:
        yield from parts[:held]
        go_on.wait(WAIT_S)
        yield from parts[held:]

    reply.parts = stream()  # type: ignore[assignment]
    return reply


def joined(rows: list[str]) -> str:
    """The rows as one text, a line wrapped on a space read whole again."""
    return " ".join(row.strip() for row in rows)


# Most terminals re-flow their lines (tests/support/reflow_screen.py): narrowed, they re-wrap the
# live region's lines wider than the new width into more rows. xterm cuts them off instead.
@pytest.mark.parametrize("reflows", [True, False], ids=["re-flowing terminal", "xterm"])
@pytest.mark.parametrize(
    ("before", "after"),
    [((30, 60), (30, 30)), ((30, 30), (30, 60)), ((ROWS, COLS), (40, 140))],
    ids=["narrower", "wider", "taller and wider"],
)
def test_a_resize_while_an_answer_streams_shows_each_line_once(
    stub, open_chat, before, after, reflows
):
    go_on = threading.Event()
    stub.handler = lambda request: held_after(RESIZED, HELD, go_on)
    chat = open_chat(rows=before[0], cols=before[1], reflows=reflows)
    chat.send_line("many rows")
    # the whole frame is on the screen, and nothing changes in it until the stream goes on
    chat.wait(lambda: LIVE[7] in joined(chat.term.display()), "the held lines")
    chat.resize(*after)
    go_on.set()
    chat.wait_prompt()
    text = chat.term.text()
    for line in [*ABOVE, *LIVE, "Done."]:
        start = line.split(":")[0]
        assert text.count(start) == 1, f"{start!r} shown twice or never:\n{text}"
