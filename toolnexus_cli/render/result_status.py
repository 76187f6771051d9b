"""How a tool result's outcome shows: its panel's title and colour on a terminal, its tag
on stderr. A command that exited nonzero never shows as a success (`bash · exit 3`); an
error, and a command a signal killed, show as failures (`✗ bash · killed by SIGTERM`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from toolnexus.types import ToolResultEvent


class ResultStatus(NamedTuple):
    mark: str  # before the tool's name: "✓", "✗", or none
    words: str  # after it: how its command ended, when that is no success
    style: str  # the panel's border

    def title(self, name: str) -> str:
        """The panel's title for the tool `name` (or a longer label of the call)."""
        head = f"{self.mark} {name}" if self.mark else name
        return f"{head} · {self.words}" if self.words else head

    def tag(self) -> str:
        """What stands before the result on stderr: `[result]`, `[error]`, `[exit 3]`."""
        mark = "error" if self.mark == "✗" else "result"
        return f"[{self.words}]" if self.words else f"[{mark}]"


def result_status(event: ToolResultEvent) -> ResultStatus:
    """The status of a tool_result event."""
    signal, code = event.get("signal"), event.get("exit_code")
    if signal is not None:
        return ResultStatus("✗", f"killed by {signal}", "red")
    failed = f"exit {code}" if code is not None and code != 0 else ""
    if event["is_error"]:  # a command's exit code too, when one ran before a question
        return ResultStatus("✗", failed, "red")
    if failed:
        return ResultStatus("", failed, "yellow")
    return ResultStatus("✓", "", "green")
