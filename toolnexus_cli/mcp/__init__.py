"""MCP servers as the person meets them: `/mcp`, `toolnexus mcp ...`, logins, questions."""
