"""Running a custom command (commands.py) in a session, for the chat and for
`ask /name`: its commands found where the session works, its message made
(expansion.py) with inline shell run through the session's approval, and the turn
it asks for: its `model`, and only its `allowed-tools` offered (which narrows what the
model may call and never skips a question)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from toolnexus import Toolkit
from toolnexus.app_support import visible

from ..errors import UsageError
from .commands import CommandBook, CustomCommand, find_commands

if TYPE_CHECKING:
    from toolnexus import Tool
    from toolnexus.content import Attachment

    from ..config.file import Config
    from ..session.options import ToolFlags
    from ..session.session import Session


class CommandTurn(NamedTuple):
    """What a custom command sends, and how: the model and tools for that turn alone
    (None: the session's), and lines to say first (names of tools it allows we lack)."""

    prompt: str
    attachments: list[Attachment]
    model: str | None = None
    tools: Toolkit | None = None
    notes: tuple[str, ...] = ()


def command_book(config: Config, flags: ToolFlags, built_in: list[str]) -> CommandBook:
    """The custom commands of the repository the session works in, and the person's."""
    from ..config.file import config_dir
    from ..tools.workspace import workspace_root

    return find_commands(workspace_root(config, flags), config_dir() / "commands", built_in)


async def command_turn(session: Session, command: CustomCommand, arguments: str) -> CommandTurn:
    """The turn `command` asks for with `arguments`; a UsageError of one line (nothing is
    sent) when its message cannot be made: a file it may not include, an inline command
    refused."""
    from ..tools.workspace import workspace_root
    from .expansion import expand

    async def run_shell(line: str) -> str:
        result = await session.run_approved("bash", {"command": line})
        if isinstance(result, str):
            raise UsageError(f"its inline command `{line}` was not run: {result}")
        return result.output

    workspace = session.toolkit.workspace
    root = workspace.root if workspace else workspace_root(session.config, session.options.tools)
    try:
        made = await expand(
            command,
            arguments,
            workspace=Path(root),
            run_shell=run_shell,
            secret_names=tuple(session.config.settings.approval.secret_files),
        )
    except UsageError as exc:
        raise UsageError(visible(f"{command.name} not sent: {exc}")) from None
    tools: Toolkit | None = None
    notes: tuple[str, ...] = ()
    if command.allowed_tools is not None:
        names, unknown = command.tools()
        tools = OnlyTools(session.toolkit, names)
        if unknown:
            notes = (f"{command.name}: allowed-tools names no tool here: {', '.join(unknown)}",)
    return CommandTurn(made.prompt, made.attachments, command.model, tools, notes)


class OnlyTools(Toolkit):
    """`whole` offering only the tools `names` names, for one turn: the same tools, tool
    sources, workspace and instructions; a call of any other is an unknown tool."""

    def __init__(self, whole: Toolkit, names: list[str]) -> None:
        super().__init__(timeout=whole.timeout, max_output=whole.max_output)
        self.whole, self.names = whole, frozenset(names)
        self.instructions = whole.instructions
        self.sources = whole.sources
        self.workspace = whole.workspace

    def tools(self) -> list[Tool]:
        return [tool for tool in self.whole.tools() if tool.name in self.names]

    def get(self, name: str) -> Tool | None:
        return self.whole.get(name) if name in self.names else None
