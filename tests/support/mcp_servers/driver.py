"""Stands in for a chat that gets killed: opens a toolkit with the stdio server, prints
the server's PID, then waits forever. tests/library/test_mcp.py SIGKILLs it.

    python driver.py PID_FILE
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from toolnexus import create_toolkit  # noqa: E402
from toolnexus.mcp import add_mcp_servers  # noqa: E402


async def main(pid_file: str) -> None:
    config = {
        "mcpServers": {
            "calc": {
                "command": sys.executable,
                "args": [str(Path(__file__).with_name("stdio_server.py"))],
                "env": {"MCP_PID_FILE": pid_file, "MCP_LINGER": "1"},  # stdin closing won't end it
            }
        }
    }
    toolkit = await create_toolkit()
    statuses = await add_mcp_servers(toolkit, config, timeout=30)
    if not statuses[0].ok:
        print(f"failed {statuses[0].state}", flush=True)
        return
    result = await toolkit.execute("calc_add", {"a": 1, "b": 2})
    print(f"pid {Path(pid_file).read_text()} add {result.output}", flush=True)
    while True:
        await asyncio.sleep(3600)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
