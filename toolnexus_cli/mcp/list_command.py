"""`toolnexus mcp list`: what `/mcp` shows in the chat, outside it. Every server is started,
shown once it runs or has failed (its state, tools, resources, prompts, the last lines of
its stderr), and ended."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from toolnexus import ToolnexusError

from ..config.file import Config
from ..config.keys import mcp_tokens_path
from ..errors import UsageError
from ..session.options import ToolFlags
from ..tools.toolbox import mcp_config, quiet_mcp_sdk
from ..tools.workspace import mcp_roots, workspace_root
from .view import as_json, details


def list_servers(config: Config, flags: ToolFlags, *, json_out: bool) -> int:
    """0 when every server that is not disabled runs, else 1."""
    path = mcp_config(config, flags)
    if path is None:
        raise UsageError(
            'no MCP servers are configured: give --mcp mcp.json, or mcp = "mcp.json" in the config'
        )
    quiet_mcp_sdk()
    return asyncio.run(_show(path, mcp_roots(workspace_root(config, flags)), json_out))


async def _show(path: str, roots: list[Path], json_out: bool) -> int:
    from rich.console import Console

    from toolnexus.mcp import ServerPool

    try:
        pool = ServerPool(path, roots=roots, tokens=mcp_tokens_path())
    except ToolnexusError as exc:
        raise UsageError(str(exc)) from None
    pool.start()
    try:
        await pool.started()
        if json_out:
            print(json.dumps([as_json(server) for server in pool.servers], ensure_ascii=False))
        else:
            console = Console(highlight=False, soft_wrap=True)  # a line a server, for grep
            for server in pool.servers:
                console.print(details(server))
        failed = [s for s in pool.statuses() if not s.ok and s.state.state != "disabled"]
    finally:
        await pool.close()
    return 1 if failed else 0
