"""How a question about running a command outside the sandbox (toolnexus.tools._leaving)
shows: first the end of what the command printed, dim, indented and labelled as its output;
then how long the command is and the command itself, exact (exact_text.py) and, if long,
cut in its middle so that it fits the terminal; the question last. The command and the
question stand at the bottom of the screen, right above the answer keys, and nothing the
command printed can pass for either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.text import Text

from ..render.exact_text import DIM, exact_text, line_count, rows_of
from ..render.words import counted

if TYPE_CHECKING:
    from toolnexus.types import CommandQuestion

OUTPUT_INDENT = "    "
MIN_COMMAND_ROWS = 3  # its first line, the count of those left out, its last line


def command_question(data: Any) -> CommandQuestion | None:
    """A request's `data` as a question about a command, if that is what it is."""
    if not isinstance(data, dict):
        return None
    command, output, question = data.get("command"), data.get("output"), data.get("question")
    if not (isinstance(command, str) and isinstance(output, str) and isinstance(question, str)):
        return None
    return {"command": command, "output": output, "question": question}


def question_text(asked: CommandQuestion, rows: int, width: int) -> Text:
    """The question about `asked`, in at most `rows` rows of `width` columns (as far as
    the command's first and last lines and the question leave room)."""
    question = exact_text(asked["question"], width=width)
    question.stylize("bold")
    command = asked["command"]
    label = Text(f"the command ({line_count(command)}, {_characters(len(command))}):")
    room = rows - rows_of(question, width) - rows_of(label, width)
    output = _output(asked["output"], room - MIN_COMMAND_ROWS, width)
    shown = exact_text(command, rows=max(1, room - rows_of(output, width)), width=width)
    return Text("\n").join([output, label, shown, question])


def _output(output: str, rows: int, width: int) -> Text:
    """The end of what the command printed, one row a line, in at most `rows` rows (its
    label and its last lines; none if there is no room)."""
    lines = output.rstrip("\n").split("\n") if output.strip() else []
    kept = lines[-max(0, rows - 1) :] if rows > 1 else []
    if not kept:
        label = "output: none" if not lines else f"output: {line_count(output)} (no room)"
        return Text(label, style=DIM)
    shown = [Text(f"output (last {line_count(chr(10).join(kept))}):", style=DIM)]
    for line in kept:
        row = Text(OUTPUT_INDENT) + exact_text(line, rows=1, width=width - len(OUTPUT_INDENT))
        row.stylize(DIM)
        shown.append(row)
    return Text("\n").join(shown)


def _characters(count: int) -> str:
    return counted(count, "character")
