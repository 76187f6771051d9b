"""Whether the chat offers the built-in tools: --builtins, else the config's `builtins`,
else its `[tools] chat` (setup asks, for every folder). A config written before setup asked
has no such key: the tools are off, and the banner says so with the line that turns them on.
`ask` offers them only when asked (--builtins)."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

from ..config.file import Config
from ..session.options import RunOptions
from ..tools.workspace import WORKSPACE_TOOLS

if TYPE_CHECKING:
    from toolnexus import Toolkit

TURN_ON = "tools.chat = true"  # the line that turns them on, at the top of the config


def chat_options(config: Config, options: RunOptions) -> RunOptions:
    """`options` with the built-in tools on when the config's [tools] chat says so and
    neither the command line nor the config's `builtins` chose otherwise."""
    tools, settings = options.tools, config.settings
    if tools.off or tools.builtins or settings.builtins is not None or not settings.tools.chat:
        return options
    return dataclasses.replace(options, tools=dataclasses.replace(tools, builtins=True))


def tools_off_line(config: Config, options: RunOptions) -> str | None:
    """Why the built-in tools are off in this chat and how to turn them on, in one line
    (None: they are on)."""
    settings = config.settings
    if options.tools.off:
        return "tools are off (--no-tools)"
    if options.tools.builtins or settings.builtins:
        return None
    path = config.path
    if settings.builtins is not None:
        return f"built-in tools are off (`builtins` in {path}); --builtins turns them on"
    if settings.tools.chat is False:
        return f"built-in tools are off (tools.chat = false in {path}); --builtins turns them on"
    return f"built-in tools are off: add `{TURN_ON}` at the top of {path} (or pass --builtins)"


def workspace_line(toolkit: Toolkit) -> str | None:
    """Where the built-in file and command tools work, and how to change that (None:
    none is offered)."""
    workspace = toolkit.workspace
    if workspace is None or not any(toolkit.get(name) for name in WORKSPACE_TOOLS):
        return None
    return (
        f"workspace: {os.path.realpath(workspace.root)} (/workspace PATH moves the tools, "
        "/tools lists them)"
    )
