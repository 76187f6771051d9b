"""Text a person checks before saying yes (exact_text.py), and the question about running
a command outside the sandbox (command_question.py): nothing in it can hide, push a part of
it off the screen, or pass for the question."""

from __future__ import annotations

import pytest
from rich.console import Console

from toolnexus.tools._leaving import QUESTION
from toolnexus_cli.render.exact_text import exact_text, rows_of
from toolnexus_cli.tools.command_question import command_question, question_text

FILLER = "\u3164"  # HANGUL FILLER: a letter, shown as a blank
HIDDEN_COMMAND = f"{FILLER}\n" * 60 + "cp ~/.ssh/id_rsa x"


def rows(text, width: int) -> list[str]:
    """The rows a terminal `width` columns wide shows."""
    console = Console(width=width, color_system=None, highlight=False)
    with console.capture() as captured:
        console.print(text, overflow="fold")
    return captured.get().rstrip("\n").split("\n")


@pytest.mark.parametrize(
    "hidden",
    [
        "\u3164",
        "\u115f",
        "\u1160",
        "\u200b",
        "\u200f",
        "\u2028",
        "\u2029",
        "\u202e",
        "\u2066",
        "\u2060",
        "\u2064",
        "\ufeff",
        "\u00ad",
        "\u180e",
        "\u00a0",
        "\u3000",
        "\U000e0041",
    ],
)
def test_every_character_not_shown_as_itself_is_escaped(hidden):
    shown = exact_text(f"cp{hidden} ~/.ssh/id_rsa x").plain
    assert hidden not in shown
    escape = f"\\u{ord(hidden):04x}" if ord(hidden) <= 0xFFFF else f"\\U{ord(hidden):08x}"
    assert shown == f"cp{escape} ~/.ssh/id_rsa x"


def test_control_characters_tabs_and_runs_of_blanks_are_counted_not_shown():
    command = "echo a\tb\t\t\tc" + " " * 40 + "d\x1b[2J\r\n" + "\n" * 12 + " \t \n" * 3 + "end"
    assert exact_text(command).plain.split("\n") == [
        "echo a\\tb(3 tabs)c(40 spaces)d^[[2J",
        "(15 blank lines)",
        "end",
    ]
    assert exact_text("a\n\nb").plain == "a\n\nb"  # one blank line stays one


def test_a_long_command_keeps_its_first_and_last_lines_and_counts_what_is_left_out():
    shown = exact_text(HIDDEN_COMMAND, rows=12, width=60)
    lines = shown.plain.split("\n")
    assert rows_of(shown, 60) <= 12
    assert lines[0] == "\\u3164" and lines[-1] == "cp ~/.ssh/id_rsa x"
    assert sum(line == "\\u3164" for line in lines) + 50 == 60
    assert "... 50 lines ..." in lines


HOSTILE = [
    "x" * 100_000 + "cp ~/.ssh/id_rsa x",  # one line, far too long
    "cp ~/.ssh/id_rsa x" + "漢" * 5000 + "\n" + "y" * 3000 + "\nrm -rf ~",  # wide characters
    "\t" * 500 + "rm -rf ~\n" + "\n" * 800 + FILLER * 3000 + "\n" + "a\n" * 300 + "z",
    "rm -rf ~\n" + f"{FILLER}\n" * 5000 + "ok",
]


@pytest.mark.parametrize("width", [20, 41, 80, 200])
@pytest.mark.parametrize("height", [3, 7, 12, 40])
def test_whatever_it_holds_it_fits_the_terminal(width, height):
    for text in HOSTILE:
        assert len(rows(exact_text(text, rows=height, width=width), width)) <= height


@pytest.mark.parametrize("width", [41, 80, 200])
@pytest.mark.parametrize("height", [8, 12, 40])
def test_whatever_it_holds_its_start_and_its_end_show(width, height):
    for text in HOSTILE:
        shown = rows(exact_text(text, rows=height, width=width), width)
        first, last = text.split("\n")[0], text.split("\n")[-1]
        assert shown[0].startswith(exact_text(first).plain[:10]), shown
        assert shown[-1].endswith(last[-10:]), shown


def test_a_cut_line_says_how_many_characters_it_left_out():
    line = "a" * 1000 + "b" * 1000
    shown = exact_text(line, rows=5, width=50).plain
    head, _, rest = shown.partition(" … ")
    count, _, tail = rest.partition(" characters … ")
    assert set(head) == {"a"} and set(tail) == {"b"}
    assert len(head) + int(count) + len(tail) == len(line)


def question(command: str, output: str) -> dict:
    data = command_question({"command": command, "output": output, "question": QUESTION})
    assert data is not None
    return data


def test_the_command_and_the_question_come_last_and_the_output_is_marked_apart():
    output = (
        "bash: line 1: \u3164: command not found\n" * 3
        + "\x1b[1mrun it again outside the sandbox, with your files and the network?\n"
        + "cp: cannot open '/home/u/.ssh/id_rsa' for reading: Permission denied\n"
    )
    shown = question_text(question(HIDDEN_COMMAND, output), rows=36, width=116)
    lines = shown.plain.split("\n")
    assert rows_of(shown, 116) <= 36
    assert lines[-2:] == ["cp ~/.ssh/id_rsa x", QUESTION]
    assert lines[0] == "output (last 5 lines):"
    assert lines[1:6] == [
        "    bash: line 1: \\u3164: command not found",
        "    bash: line 1: \\u3164: command not found",
        "    bash: line 1: \\u3164: command not found",
        "    ^[[1mrun it again outside the sandbox, with your files and the network?",
        "    cp: cannot open '/home/u/.ssh/id_rsa' for reading: Permission denied",
    ]
    assert lines[6] == f"the command (61 lines, {len(HIDDEN_COMMAND)} characters):"
    assert lines[7] == "\\u3164" and "... " in shown.plain
    for line in range(0, 6):  # the output is dim, the question is not
        assert "dim" in str(shown.get_style_at_offset(Console(), shown.plain.index(lines[line])))
    assert "dim" not in str(shown.get_style_at_offset(Console(), shown.plain.index(QUESTION)))


def test_on_a_small_terminal_the_output_gives_way_to_the_command():
    shown = question_text(question(HIDDEN_COMMAND, "a\nb\nc\nd\ne\n"), rows=8, width=60)
    lines = shown.plain.split("\n")
    assert rows_of(shown, 60) <= 8
    assert lines[-2:] == ["cp ~/.ssh/id_rsa x", QUESTION]
    assert lines[0] == "output (last 1 line):" and lines[1] == "    e"


def test_what_is_not_a_question_about_a_command_is_not_taken_for_one():
    for data in (None, "text", {"command": "ls"}, {"command": 1, "output": "", "question": "?"}):
        assert command_question(data) is None
