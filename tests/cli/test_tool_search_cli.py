"""Tool search from the config: on by default when a server's many tools would take more
than 10 % of the window; `tool_search = false` sends every schema."""

from __future__ import annotations

import pytest

from tests.support import cli_helpers
from tests.support.mcp_helpers import SERVERS, mcp_file, server_command

cli, stub = cli_helpers.cli, cli_helpers.stub

pytest.importorskip("mcp")


@pytest.mark.parametrize(
    ("setting", "offered"), [("", ["tool_search"]), ("tool_search = false\n", None)]
)
def test_the_config_turns_tool_search_off(cli, stub, tmp_path, setting, offered):
    cli.write_config(f"context_window = 8192\n{setting}")
    config = mcp_file(
        tmp_path / "mcp.json", {"many": server_command(SERVERS / "many_tools_server.py")}
    )
    result = cli.run("ask", "--mcp", str(config), "hi")
    assert result.code == 0, result
    [request] = [r for r in stub.requests if r.method == "POST"]
    names = [tool["function"]["name"] for tool in request.json["tools"]]
    assert names == (offered or [f"many_op{n}" for n in range(100)])
