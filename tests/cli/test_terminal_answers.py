"""The terminal's answers to the chat's questions (its background colour, its device
attributes) are dropped from what is typed, however the reads cut them
(toolnexus_cli/render/terminal_answers.py); keys pass untouched; keys typed ahead of `ask` are not
read to find the answers (toolnexus_cli/render/theme.py)."""

from __future__ import annotations

import os
import select
import sys
import termios

import pytest

from tests.support.waiting import WAIT_S
from toolnexus_cli.render import theme
from toolnexus_cli.render.terminal_answers import AnswerFilter

OSC_11 = "\x1b]11;rgb:ffff/ffff/f0f0\x1b\\"
DA1 = "\x1b[?64;1;2;6;9;15;18;21;22c"


def typed(*reads: str) -> str:
    answers = AnswerFilter()
    return "".join(answers.feed(read) for read in reads)


@pytest.mark.parametrize(
    "reads",
    [
        [OSC_11 + DA1 + "hi"],
        ["h" + OSC_11, DA1 + "i"],
        ["\x1b]11;rgb:ff", "ff/ffff/f0f0\x1b", "\\\x1b[?6", "4;1c", "hi"],  # cut anywhere
        ["\x1b]11;rgb:0000/0000/0000\x07hi"],  # BEL ends it on some terminals
        ["\x1b[?6chi"],  # a VT102's DA1
    ],
)
def test_answers_are_dropped_wherever_the_reads_cut_them(reads):
    assert typed(*reads) == "hi"


@pytest.mark.parametrize(
    "keys",
    [
        "\x1b",  # Escape, alone in its read: passed at once, never held
        "\x1b]",  # Alt-]
        "\x1b[A\x1b[1;5D",  # arrows
        "\x1b[12;40R",  # the cursor position prompt_toolkit asks for
        "\x1b[200~[?6c]11;\x1b[201~",  # a paste that only looks like answers
        "\x1b[?x",
    ],
)
def test_keys_pass_untouched(keys):
    assert typed(keys) == keys


def test_what_starts_like_an_answer_but_runs_on_is_typing():
    endless = "\x1b]11;" + "x" * 300
    assert typed(endless[:100], endless[100:]) == endless


@pytest.fixture
def pty_pair():
    """A pty without echo: (the terminal's side, the program's)."""
    terminal, program = os.openpty()
    mode = termios.tcgetattr(program)
    mode[3] &= ~termios.ECHO
    termios.tcsetattr(program, termios.TCSANOW, mode)
    yield terminal, program
    os.close(terminal)
    os.close(program)


def test_ask_leaves_keys_typed_ahead_to_the_shell_and_asks_nothing(pty_pair, monkeypatch):
    terminal, program = pty_pair
    # In the test itself: pytest puts its own sys.stdout back between a fixture and the test.
    monkeypatch.setattr(sys, "stdin", open(program, encoding="utf-8", closefd=False))  # noqa: SIM115
    monkeypatch.setattr(sys, "stdout", open(program, "w", encoding="utf-8", closefd=False))  # noqa: SIM115
    os.write(terminal, b"echo next\n")  # the next shell command, typed while `ask` starts
    assert select.select([program], [], [], WAIT_S)[0]
    assert theme.ask_background() is None
    os.write(program, b"END")
    written = b""
    while not written.endswith(b"END"):
        assert select.select([terminal], [], [], WAIT_S)[0]
        written += os.read(terminal, 1024)
    assert written == b"END"  # no question went to the terminal
    assert os.read(program, 1024) == b"echo next\n"  # and the shell still gets its line
