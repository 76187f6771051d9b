"""A tool that the sandbox stops and that asks to leave it as the built-in `bash` does
(toolnexus.tools._leaving), with the output it is given: for `--functions` in the tests of
that question."""

from toolnexus import ToolContext
from toolnexus.tools._leaving import ask_to_leave
from toolnexus.tools.builtins import guarded
from toolnexus.tools.workspace import approved


@guarded
def stopped(command: str, output: str, context: ToolContext) -> str:
    """Run a command that the sandbox stops after it printed `output`."""
    leaving = f"outside:{command}"
    if approved(context, leaving):
        return f"ran outside the sandbox: {command}"
    ask_to_leave(context, leaving, command, output, fallback=f"exit code 1\n{output}")
    return f"exit code 1\n{output}"
