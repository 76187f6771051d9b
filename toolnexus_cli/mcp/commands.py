"""The chat's /mcp command: the MCP servers, one in detail, and restarting, disabling or
enabling one for this session, or logging in to one (OAuth)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console

from toolnexus import ToolnexusError

from ..session.session import Session
from ..tools.toolbox import mcp_servers
from .prompts import run_prompt_command
from .view import details, overview

if TYPE_CHECKING:
    from toolnexus.content import Attachment
    from toolnexus.mcp import McpServer

COMMANDS = {
    "/mcp": "MCP servers: /mcp [NAME] shows them, /mcp restart|disable|enable|login NAME",
}
USAGE = "usage: /mcp [NAME], or /mcp restart|disable|enable|login NAME"


class McpCommands:
    """Mixed into Commands, which gives `session`, `console` and `say`."""

    session: Session
    console: Console
    say: Callable[..., None]
    attached: list[Attachment]

    async def mcp_prompt(self, name: str, arg: str) -> str | None:
        """`/server:prompt arg=value ...`: the message the server's prompt makes, to send
        (its attachments with it)."""
        try:
            text, attachments = await run_prompt_command(self.session.toolkit, name, arg)
        except ToolnexusError as exc:
            self.say(f"error: {exc}", "bold red")
            return None
        self.attached.extend(attachments)
        return text or None

    async def mcp(self, arg: str) -> None:
        servers = mcp_servers(self.session.toolkit)
        if not servers:
            self.say(
                'no MCP servers are configured (--mcp FILE, or mcp = "mcp.json" in the config)'
            )
            return
        action, _, name = arg.partition(" ")
        if not arg:
            self.console.print(overview(servers))
            self.say(f"/mcp NAME: its tools, resources, prompts and stderr; {USAGE[7:]}")
        elif action in ("restart", "disable", "enable", "login"):
            if not name.strip():
                self.say(USAGE, "yellow")
                return
            server = _named(servers, name.strip())
            if action == "login":
                from .chat_login import login_in_chat

                await login_in_chat(server, self.console, self.say)
            else:
                await self._change(action, server)
        else:
            self.console.print(details(_named(servers, arg)))

    async def _change(self, action: str, server: McpServer) -> None:
        if action == "restart":
            await server.restart()
            self.say(f"{server.name} is starting again")
        elif action == "disable":
            await server.disable()
            self.say(f"{server.name} is disabled for this session: its tools are not offered")
        elif server.status.state.state in ("ok", "starting"):
            self.say(f"{server.name} is {server.status.state} already")
        else:
            server.enable()
            self.say(f"{server.name} is starting")


def _named(servers: list[McpServer], name: str) -> McpServer:
    for server in servers:
        if server.name == name:
            return server
    known = ", ".join(server.name for server in servers)
    raise ToolnexusError(f"no MCP server named {name!r} (there are: {known})")
