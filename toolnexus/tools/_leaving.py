"""Asking a person to let a command leave the sandbox, after the sandbox stopped it.

The question carries the command apart from what it printed (`data`, a CommandQuestion of
types.py), so a host shows the command whole and exact, the end of its output marked as
output, and asks the question in its own words: neither the command nor its output writes
any part of the question. At most MAX_QUESTIONS such questions are asked in one run (a
person's turn); past them the call is not asked about, and the model reads that it should
stop asking.
"""

from __future__ import annotations

from ..types import CommandQuestion
from .tool import ToolContext, ToolResult
from .workspace import ApprovalNeeded, approved, ask

MAX_QUESTIONS = 3  # in one run
OUTPUT_LINES = 5  # of what the command printed, its last
OUTPUT_CHARS = 2000  # of those, at most (their end)
FAILED = "this command failed in the sandbox"
# What the sandbox saw it try (its own network counted it), where that is why it may have failed
NO_NETWORK = (
    "this command tried to reach the network, which is off in the sandbox (servers on "
    "the host's localhost are not reachable from it)"
)
RUN_OUTSIDE = "run it again outside the sandbox, with your files and the network?"
QUESTION = f"{FAILED}: {RUN_OUTSIDE}"
_ASKED = "leave the sandbox"  # what ToolContext.questions counts these as


def ask_to_leave(
    context: ToolContext | None,
    subject: str,
    command: str,
    output: str,
    *,
    fallback: str,
    why: str = FAILED,
) -> None:
    """Go on if the person already said yes to `subject` (the command's leaving) in this
    call, else ask them whether `command`, which printed `output` in the sandbox, may run
    outside it (`why`: what happened there, FAILED or NO_NETWORK). Only a person answers,
    never `--yes`; on no, the model reads `fallback` and the refusal. Past MAX_QUESTIONS
    questions in the run, nobody is asked: the model reads `fallback` and that it should
    stop asking this turn."""
    if approved(context, subject):
        return
    if context is not None and not context.questions.take(_ASKED, MAX_QUESTIONS):
        raise ApprovalNeeded(ToolResult(f"{fallback}\n\n{_stop_asking()}", is_error=True))
    question = f"{why}: {RUN_OUTSIDE}"
    data: CommandQuestion = {"command": command, "output": _tail(output), "question": question}
    ask(
        context,
        subject,
        f"{why}:\n{command}\n{RUN_OUTSIDE}",
        needs_person=True,
        fallback=fallback,
        data=data,
    )


def _tail(output: str) -> str:
    """The last OUTPUT_LINES lines of `output`, at most OUTPUT_CHARS of them."""
    end = output.rstrip("\n")[-OUTPUT_CHARS:]
    return "\n".join(end.split("\n")[-OUTPUT_LINES:])


def _stop_asking() -> str:
    return (
        f"[not asked: {MAX_QUESTIONS} questions about leaving the sandbox were asked this "
        "turn already; do not ask to leave the sandbox again this turn: do what you can "
        "inside it, or tell the user what you need and why]"
    )
