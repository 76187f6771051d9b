"""`/mcp login NAME` in the chat: a remote MCP server's OAuth login (as `toolnexus mcp
login`), then the server started again with its new tokens. Ctrl-C gives up."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from toolnexus import ToolnexusError
from toolnexus.app_support import visible

from ..config.keys import mcp_tokens_path
from ..tools.toolbox import quiet_mcp_sdk
from .login import WAIT_LINE, open_browser

if TYPE_CHECKING:
    from toolnexus.mcp import McpServer

LOGIN_WAIT = 300.0  # seconds the chat waits for the browser


async def login_in_chat(server: McpServer, console: Console, say: Callable[..., None]) -> None:
    from toolnexus.mcp.auth import TokenFile
    from toolnexus.mcp.login import login

    quiet_mcp_sdk()

    def show(url: str) -> None:
        say(f"Open this URL in a browser to log in to {server.name}:")
        console.print(Text(visible(url)), soft_wrap=True)  # whole, to copy it
        open_browser(url)
        say(WAIT_LINE.format(wait=LOGIN_WAIT))

    given_up = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, given_up.set)
    logging_in = asyncio.ensure_future(
        login(server.spec, TokenFile(mcp_tokens_path()), show, timeout=LOGIN_WAIT)
    )
    stopped = asyncio.ensure_future(given_up.wait())
    try:
        await asyncio.wait({logging_in, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        stopped.cancel()
    if not logging_in.done():
        logging_in.cancel()
        await asyncio.gather(logging_in, return_exceptions=True)
        say("(login given up: nothing was kept)")
        return
    try:
        logging_in.result()
    except ToolnexusError as exc:
        say(f"error: {exc}", "bold red")
        return
    await server.restart()
    say(f"logged in to {server.name}: it is starting again")
