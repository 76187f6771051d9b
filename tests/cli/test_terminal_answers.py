"""The terminal's answers to the chat's questions (its background colour, its device
attributes) are dropped from what is typed, however the reads cut them
(toolnexus_cli/terminal_answers.py); keys pass untouched."""

from __future__ import annotations

import pytest

from toolnexus_cli.terminal_answers import AnswerFilter

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
