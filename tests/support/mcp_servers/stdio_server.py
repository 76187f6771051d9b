"""A real MCP server over stdio, written with the SDK, for tests/library/test_mcp.py.

Writes its PID to $MCP_PID_FILE (when set) before serving, so tests can check that the
process ends with the toolkit or with the chat that started it. With MCP_LINGER=1 it does
not exit when its stdin closes (as some real servers do not): then only a signal ends it.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import BlobResourceContents, EmbeddedResource

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.support.stub_provider import pdf_bytes, png_bytes  # noqa: E402

server = MCPServer("calc", log_level="WARNING")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(f"cannot do that: {reason}")


@server.tool()
def picture() -> list:
    """A caption and a tiny image."""
    return ["a red dot", Image(data=png_bytes(4, 3), format="png")]


@server.tool()
def report() -> list:
    """A PDF, as an embedded resource."""
    blob = BlobResourceContents(uri="file:///reports/q3.pdf", mime_type="application/pdf",
                                blob=base64.b64encode(pdf_bytes("q3")).decode())
    return ["the report", EmbeddedResource(type="resource", resource=blob)]


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then say so."""
    await anyio.sleep(seconds)
    return f"slept {seconds:g} s"


@server.tool()
def secret_env() -> str:
    """Whether the secret from the config's env arrived."""
    return "token ok" if os.environ.get("CALC_TOKEN") == os.environ.get("CALC_EXPECTED") else "no"


def pid_on_this_machine() -> int:
    """This process's PID as the machine sees it (it may run in a PID namespace of its own,
    where os.getpid() is that namespace's number)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return os.getpid()


if __name__ == "__main__":
    pid_file = os.environ.get("MCP_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(pid_on_this_machine()))
    server.run()
    if os.environ.get("MCP_LINGER") == "1":
        time.sleep(3600)
