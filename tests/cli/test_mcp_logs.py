"""What an MCP server says beside a result: its log messages during a call are its log, not
the call's progress (`ask -v` labels them `[log] SERVER:`); content annotated for the person
or the model alone goes only to them."""

from __future__ import annotations

import pytest

from tests.support import cli_helpers
from tests.support.mcp_helpers import SERVERS, calc, mcp_file, server_command
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


def test_content_for_the_person_alone_is_shown_not_sent_and_the_models_is_not_shown(
    cli, stub, tmp_path
):
    """A tool result annotated by audience: `ask -v` shows the person's parts; the model
    gets its own parts and one line saying something was shown to the person."""
    config = mcp_file(
        tmp_path / "mcp.json", {"aud": server_command(SERVERS / "audience_server.py")}
    )

    def handler(rec):
        if rec.json["messages"][-1]["role"] == "tool":
            return openai_stream("done")
        return openai_stream(tool_calls=[("aud_report", {})])

    stub.handler = handler
    result = cli.run("ask", "-v", "--yes", "--mcp", str(config), "report")
    assert result.code == 0, result
    sent = stub.requests[-1].json["messages"][-1]["content"]
    assert sent == (
        "for you both\nraw rows for the model\n"
        "[content for the person only was shown to them, not to you]"
    )
    assert "a summary for the person" in result.stderr, result.stderr
    assert "raw rows for the model" not in result.stderr, result.stderr
