"""An MCP server offering $MCP_TOOL_COUNT tools (default 100), `op0`, `op1`, ...: for tool
search, which names tools only when their schemas would take too much of the window."""

from __future__ import annotations

import os
import warnings

from mcp.server.mcpserver import MCPServer

server = MCPServer("many", log_level="WARNING")
warnings.simplefilter("ignore")  # the SDK's deprecation notes (log messages): not for stderr


def _make(n: int) -> None:
    def operation(path: str, owner: str = "", branch: str = "main", message: str = "") -> str:
        return f"op{n} on {path}"

    server.add_tool(
        operation,
        name=f"op{n}",
        description=f"Operation {n}: does thing {n} to the file at path, for owner and branch.",
    )


for number in range(int(os.environ.get("MCP_TOOL_COUNT", "100"))):
    _make(number)

if __name__ == "__main__":
    server.run()
