"""An MCP server's log messages during a call are its log, not the call's progress: `ask -v`
labels them `[log] SERVER:` on stderr."""

from __future__ import annotations

import pytest

from tests.support import cli_helpers
from tests.support.mcp_helpers import calc, mcp_file
from tests.support.stub_provider import openai_stream

cli, stub = cli_helpers.cli, cli_helpers.stub

pytest.importorskip("mcp")


def test_ask_verbose_labels_a_servers_log_as_its_log(cli, stub, tmp_path):
    config = mcp_file(tmp_path / "mcp.json", {"calc": calc()})

    def handler(rec):
        if rec.json["messages"][-1]["role"] == "tool":
            return openai_stream("done")
        return openai_stream(tool_calls=[("calc_steps", {"count": 1})])

    stub.handler = handler
    result = cli.run("ask", "-v", "--yes", "--mcp", str(config), "take a step")
    assert result.code == 0, result
    lines = result.stderr.splitlines()
    assert "[log] calc: info: finished step 1" in lines, result.stderr
    progress = [line for line in lines if line.startswith("[progress]")]
    assert progress and not any("finished" in line for line in progress), result.stderr
