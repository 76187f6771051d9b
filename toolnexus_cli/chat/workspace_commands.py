"""The chat's /workspace command: the folder the tools work in, shown or changed (the
built-in tools, their sandbox and the MCP servers' roots move together)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path

from ..session.session import Session
from ..tools.toolbox import sandbox_line, tools_summary
from ..tools.workspace import CHAT_WAY_OUT, home_line, move_tools, workspace_root

COMMANDS = {
    "/workspace": "show or change the folder the tools work in: /workspace [PATH]",
}


class WorkspaceCommands:
    """Mixed into Commands, which gives `session` and `say`."""

    session: Session
    say: Callable[..., None]

    async def workspace(self, arg: str) -> None:
        session = self.session
        flags = session.options.tools
        if arg:
            folder = Path(arg).expanduser()
            if not folder.is_absolute():  # as `cd` would take it, from the workspace
                folder = workspace_root(session.config, flags) / folder
            if not folder.is_dir():
                self.say(f"no folder {folder}: /workspace takes an existing folder", "yellow")
                return
            flags = dataclasses.replace(flags, root=os.path.realpath(folder))
            await move_tools(session.toolkit, session.config, flags)
            await session.use_tools(flags)
        root = os.path.realpath(workspace_root(session.config, flags))
        self.say(f"workspace: {root}")
        for line in (tools_summary(session.toolkit), sandbox_line(session.toolkit)):
            if line:
                self.say(line)
        note = home_line(session.config, flags, CHAT_WAY_OUT)
        if note:
            self.say(note, "yellow")
