"""`toolnexus mcp login NAME` and `toolnexus mcp logout NAME`: a remote MCP server's OAuth
login, kept beside the keys (keys.mcp_tokens_path, 0600), and forgetting it."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import TYPE_CHECKING

from toolnexus import ToolnexusError

from ..config.file import Config
from ..config.keys import mcp_tokens_path
from ..errors import UsageError
from ..session.options import ToolFlags
from ..tools.toolbox import mcp_config, quiet_mcp_sdk

if TYPE_CHECKING:
    from toolnexus.mcp.config import ServerSpec


def login_server(
    config: Config,
    flags: ToolFlags,
    name: str,
    *,
    browser: bool,
    port: int | None,
    wait: float = 300.0,
) -> int:
    from toolnexus.mcp.auth import TokenFile
    from toolnexus.mcp.login import login

    spec = _spec(config, flags, name)
    quiet_mcp_sdk()

    def show(url: str) -> None:
        print(f"Open this URL in a browser to log in to {name}:\n\n  {url}\n", flush=True)
        if browser:
            open_browser(url)
        print(WAIT_LINE.format(wait=wait), file=sys.stderr, flush=True)

    try:
        offer = asyncio.run(
            login(spec, TokenFile(mcp_tokens_path()), show, port=port, timeout=wait)
        )
    except ToolnexusError as exc:
        raise UsageError(str(exc)) from None
    tools = [str(tool.get("name")) for tool in offer.tools]
    print(
        f"logged in to {name}: {len(tools)} tool{'' if len(tools) == 1 else 's'}"
        + (f" ({', '.join(tools[:8])}{', …' if len(tools) > 8 else ''})" if tools else "")
    )
    return 0


WAIT_LINE = (
    "Waiting for the browser to come back to this machine (on another machine, forward the "
    "port of the redirect_uri in the URL with ssh -L), at most {wait:g} s; Ctrl-C gives up."
)


def open_browser(url: str) -> None:
    """Show `url` in a browser, when one can be shown here."""
    if _has_display():
        import webbrowser

        webbrowser.open(url)


def logout_server(name: str) -> int:
    from toolnexus.mcp.auth import TokenFile

    if TokenFile(mcp_tokens_path()).forget(name):
        print(f"forgot the login of {name}")
        return 0
    print(f"{name} had no login", file=sys.stderr)
    return 1


def _spec(config: Config, flags: ToolFlags, name: str) -> ServerSpec:
    from toolnexus.mcp.config import read_specs

    path = mcp_config(config, flags)
    if path is None:
        raise UsageError(
            'no MCP servers are configured: give --mcp mcp.json, or mcp = "mcp.json" in the config'
        )
    try:
        specs = read_specs(path)
    except ToolnexusError as exc:
        raise UsageError(str(exc)) from None
    for spec in specs:
        if spec.name == name:
            return spec
    known = ", ".join(spec.name for spec in specs) or "none"
    raise UsageError(f"no MCP server named {name!r} (there are: {known})")


def _has_display() -> bool:
    """A browser can be shown here (else webbrowser may start a text browser in this
    terminal)."""
    return sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )
