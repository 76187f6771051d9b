"""What a person sees of MCP servers: the chat's one-line status, the table `/mcp` shows,
and each server's details (state, tools, resources, prompts, roots, the last lines of its
stderr and log) for `/mcp NAME` and `toolnexus mcp list`. Everything a server said (names,
descriptions, stderr) is made `visible` and goes into Rich as Text, never as markup."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from toolnexus.app_support import visible

if TYPE_CHECKING:
    from rich.console import RenderableType

    from toolnexus.mcp import McpServer, ServerStatus

STDERR_LINES = 5  # of a server's stderr, in its details
LOG_LINES = 5  # of its log messages
INSTRUCTION_LINES = 5  # of its instructions


def status_line(servers: list[ServerStatus]) -> str:
    """ "2 of 3 MCP servers ready · slow starting": for the chat's toolbar."""
    shown = [server for server in servers if server.state.state != "disabled"]
    if not shown:
        return "every MCP server is disabled (/mcp)"
    ready = sum(server.ok for server in shown)
    others = [
        f"{server.name} needs 'toolnexus mcp login {server.name}'"
        if server.needs_login
        else f"{server.name} {server.state.state}"
        for server in shown
        if not server.ok
    ]
    return visible(" · ".join([f"{ready} of {len(shown)} MCP servers ready", *others]))


def overview(servers: list[McpServer]) -> RenderableType:
    """One row a server: its name, transport, state and what it offers."""
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, padding=(0, 2), show_edge=False)
    for column in ("SERVER", "TRANSPORT", "STATE", "TOOLS", "RESOURCES", "PROMPTS", "ROOTS"):
        table.add_column(column, no_wrap=column not in ("STATE", "ROOTS"), overflow="fold")
    for server in servers:
        counts = [
            str(len(server.status.tools)),
            str(len(server.offer.resources)),
            str(len(server.offer.prompts)),
        ]
        table.add_row(
            Text(visible(server.name), style="bold"),
            server.status.transport,
            Text(visible(str(server.status.state)), style=_style(server.status)),
            *counts,
            Text(visible(", ".join(_roots(server)) or "none")),
        )
    return table


def details(server: McpServer) -> RenderableType:
    """All there is to know of one server, in a few labelled lines."""
    from rich.console import Group
    from rich.text import Text

    status = server.status
    lines: list[RenderableType] = [
        Text.assemble(
            (visible(server.name), "bold"),
            f"  {status.transport}  ",
            (visible(str(status.state)), _style(status)),
        )
    ]
    lines += _listed("tools", status.tools)
    lines += _listed("resources", [_resource(entry) for entry in server.offer.resources])
    lines += _listed("resource templates", _templates(server))
    lines += _listed(
        "prompts", [f"/{server.name}:{entry.get('name', '')}" for entry in server.offer.prompts]
    )
    lines += _listed("not offered (they run only as tasks)", server.task_only)
    lines += _listed("roots", _roots(server)) or [Text("  roots: none")]
    lines += _tail("instructions", _instructions(server))
    lines += _tail("stderr", server.stderr.lines(STDERR_LINES))
    lines += _tail("log", list(server.logs)[-LOG_LINES:])
    return Group(*lines)


def as_json(server: McpServer) -> dict[str, Any]:
    return {
        "name": server.name,
        "transport": server.status.transport,
        "status": str(server.status.state),
        "tools": server.status.tools,
        "resources": [_resource(entry) for entry in server.offer.resources],
        "resource_templates": _templates(server),
        "prompts": [str(entry.get("name", "")) for entry in server.offer.prompts],
        "task_only_tools": server.task_only,
        "roots": _roots(server),
        "instructions": server.offer.instructions,
        "stderr": server.stderr.lines(STDERR_LINES),
        "log": list(server.logs),
    }


def _style(status: ServerStatus) -> str:
    return {"ok": "green", "failed": "red", "disabled": "dim", "stopped": "dim"}.get(
        status.state.state, "yellow"
    )


def _resource(entry: dict[str, Any]) -> str:
    name, uri = str(entry.get("name", "")), str(entry.get("uri", ""))
    return f"{name} ({uri})" if name and uri and name != uri else name or uri


def _roots(server: McpServer) -> list[str]:
    """The folders the server is told are its roots."""
    return [str(root) for root in server.roots()]


def _templates(server: McpServer) -> list[str]:
    return [str(entry.get("uriTemplate", "")) for entry in server.offer.templates]


def _instructions(server: McpServer) -> list[str]:
    """Its instructions (they join the system prompt), the first INSTRUCTION_LINES lines."""
    lines = server.offer.instructions.strip().splitlines()
    cut = lines[:INSTRUCTION_LINES]
    return cut + ["…"] if len(lines) > INSTRUCTION_LINES else cut


def _listed(label: str, names: list[str]) -> list[RenderableType]:
    from rich.text import Text

    if not names:
        return []
    return [Text.assemble(f"  {label} ({len(names)}): ", (visible(", ".join(names)), "dim"))]


def _tail(label: str, lines: list[str]) -> list[RenderableType]:
    from rich.text import Text

    if not lines:
        return []
    return [Text(f"  {label}:"), *(Text(f"    {visible(line)}", style="dim") for line in lines)]
