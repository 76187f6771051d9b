"""An MCP server whose `report` tool returns content for both, for the person alone
(`audience: ["user"]`) and for the model alone (`audience: ["assistant"]`)."""

from __future__ import annotations

import warnings

from mcp.server.mcpserver import MCPServer
from mcp.types import Annotations, TextContent

server = MCPServer("audience", log_level="WARNING")
warnings.simplefilter("ignore")  # the SDK's deprecation notes (log messages): not for stderr


@server.tool()
def report() -> list[TextContent]:
    """A report with parts for the person and for the model."""
    return [
        TextContent(type="text", text="for you both"),
        TextContent(
            type="text", text="a summary for the person", annotations=Annotations(audience=["user"])
        ),
        TextContent(
            type="text",
            text="raw rows for the model",
            annotations=Annotations(audience=["assistant"]),
        ),
    ]


if __name__ == "__main__":
    server.run()
