"""How `toolnexus ask` waits for its MCP servers: it starts them all at once and sends its
request as soon as each runs or has failed, not after a fixed wait; a server still starting
after `mcp_wait` seconds is left out, and stderr says so. Slow servers wait for files the
test creates (tests/support/mcp_servers/stdio_server.py), so no step waits for a time.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.support import cli_helpers, prefork
from tests.support.mcp_helpers import calc, mcp_file
from tests.support.stub_provider import Recorded, openai_stream
from tests.support.waiting import WAIT_S, pid_in, wait_until

cli, stub = cli_helpers.cli, cli_helpers.stub

pytest.importorskip("mcp")

LONG_WAIT = "mcp_wait = 3600\n"  # far longer than any test waits


def tool_names(request: Recorded) -> list[str]:
    return [tool["function"]["name"] for tool in request.json.get("tools", [])]


def test_ask_sends_its_request_once_every_server_is_ready_not_after_a_fixed_wait(
    cli, stub, tmp_path
):
    """Repro: an mcp.json with two servers, one slow to start, and `mcp_wait = 3600` in the
    config; `toolnexus ask --mcp mcp.json hi`. The request goes as soon as the slow one
    is ready (not an hour later), with the tools of both."""
    cli.write_config(LONG_WAIT)
    gate = tmp_path / "gate"
    config = mcp_file(
        tmp_path / "mcp.json",
        {
            "quick": calc(tmp_path / "quick.pid"),
            "slow": calc(tmp_path / "slow.pid", env={"MCP_START_GATE": str(gate)}),
        },
    )
    stub.handler = lambda rec: openai_stream("answered")
    process = subprocess.Popen(
        prefork.command("toolnexus", "ask", "--mcp", str(config), "hi"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli.merged_env(),
        cwd=cli.home,
    )
    wait_until(lambda: pid_in(tmp_path / "slow.pid"), "the slow server to be started")
    wait_until(lambda: pid_in(tmp_path / "quick.pid"), "the quick server to be started")
    assert stub.requests == []  # the slow one holds the request
    gate.touch()
    out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0 and out == "answered\n", err
    assert err == ""
    assert {"quick_add", "slow_add"} <= set(tool_names(stub.requests[0]))


def test_ask_goes_without_a_server_still_starting_after_mcp_wait_and_says_so(cli, stub, tmp_path):
    """Repro: `mcp_wait = 0.2` in the config and a server that never finishes starting;
    `toolnexus ask --mcp mcp.json hi` answers without its tools, and stderr says which
    server it went without."""
    cli.write_config("mcp_wait = 0.2\n")
    config = mcp_file(
        tmp_path / "mcp.json",
        {"stuck": calc(env={"MCP_START_GATE": str(tmp_path / "never")})},
    )
    stub.handler = lambda rec: openai_stream("answered")
    result = cli.run("ask", "--mcp", str(config), "hi")
    assert result.code == 0 and result.stdout == "answered\n", result
    assert result.stderr == "toolnexus: asked without MCP server stuck (still starting)\n"
    assert tool_names(stub.requests[0]) == []


def test_mcp_wait_must_be_seconds(cli):
    """Repro: `mcp_wait = "soon"` in the config: one line says what it must be."""
    cli.write_config('mcp_wait = "soon"\n')
    result = cli.run("ask", "hi")
    assert result.code == 2, result
    assert "mcp_wait" in result.stderr and "Traceback" not in result.stderr
