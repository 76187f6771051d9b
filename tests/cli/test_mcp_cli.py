"""MCP servers in `toolnexus ask` and `toolnexus mcp list` against the loopback stub (real
processes where a test needs one: its signals, its exit, its stderr while it waits; else in
process): `ask` waits for the servers it starts, saying so; it exits at once after
its answer, and after Ctrl-C during a call, whatever a server still does (the order of
events is tested, never a time: bench/mcp_exit.py measures it); `mcp list` shows each
server as `/mcp` does.
"""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from tests.support import cli_helpers, prefork
from tests.support.mcp_helpers import calc, mcp_file
from tests.support.stub_provider import openai_stream
from tests.support.waiting import WAIT_S, alive, pid_in, wait_until

cli, stub = cli_helpers.cli, cli_helpers.stub

pytest.importorskip("mcp")

LINGER_S = "3"  # how long the busy server goes on once its stdin closes


def start(cli, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        prefork.command("toolnexus", *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli.merged_env(),
        cwd=cli.home,
    )


def busy_server(tmp_path, **env: str) -> tuple[str, dict]:
    """A server that, told to end (stdin closed, SIGTERM), goes on for LINGER_S seconds
    and then writes the file this returns; and its mcp.json."""
    finished = tmp_path / "finished"
    config = mcp_file(
        tmp_path / "mcp.json",
        {
            "calc": calc(
                tmp_path / "pid",
                env={"MCP_FINISH_FILE": str(finished), "MCP_FINISH_AFTER": LINGER_S, **env},
            )
        },
    )
    return str(config), finished


def test_ask_exits_after_its_answer_before_a_busy_server_would_have_finished(cli, stub, tmp_path):
    config, finished = busy_server(tmp_path)
    stub.handler = lambda rec: openai_stream("answered")
    result = cli.run("ask", "--mcp", config, "hi")
    assert result.code == 0 and result.stdout == "answered\n", result
    assert not finished.exists()  # it was ended, not waited for
    assert not alive(pid_in(tmp_path / "pid"))


def test_ask_exits_after_ctrl_c_during_a_call_before_the_server_would_have_finished(
    cli, stub, tmp_path
):
    called = tmp_path / "called"
    config, finished = busy_server(
        tmp_path, MCP_CALLED_FILE=str(called), MCP_STEPS_GATE=str(tmp_path / "never")
    )
    stub.handler = lambda rec: openai_stream(tool_calls=[("calc_steps", {"count": 1})])
    process = start(cli, "ask", "--mcp", config, "--yes", "go")
    wait_until(called.exists, "the call to reach the server")
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 130, err
    assert not finished.exists()
    assert not alive(pid_in(tmp_path / "pid"))
    assert "Traceback" not in err


def test_ask_waits_for_its_servers_to_start_and_says_so(cli, stub, tmp_path):
    gate = tmp_path / "gate"
    config = mcp_file(
        tmp_path / "mcp.json", {"calc": calc(tmp_path / "pid", env={"MCP_START_GATE": str(gate)})}
    )
    cli.write_config("mcp_wait = 3600\n")  # far longer than the test waits
    stub.handler = lambda rec: openai_stream("answered")
    process = start(cli, "ask", "-v", "--mcp", str(config), "hi")
    line = process.stderr.readline()
    assert line == "[waiting] waiting for MCP server calc to start (at most 3600 s)\n"
    wait_until(lambda: pid_in(tmp_path / "pid"), "the server to start")
    assert stub.requests == []  # the model call waits
    gate.touch()
    out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 0 and out == "answered\n", err
    assert "calc_add" in [tool["function"]["name"] for tool in stub.requests[0].json["tools"]]


def test_a_server_that_fails_while_ask_waits_is_one_warning_line(cli, stub, tmp_path):
    config = mcp_file(
        tmp_path / "mcp.json",
        {"crashes": {"command": "sh", "args": ["-c", "echo 'no config file' >&2; exit 2"]}},
    )
    stub.handler = lambda rec: openai_stream("answered anyway")
    result = cli.call("ask", "--mcp", str(config), "hi")
    assert result.code == 0 and result.stdout == "answered anyway\n", result
    assert result.stderr.splitlines() == [
        "warning: MCP server crashes failed: it exited with status 2 while waiting for the "
        "initialize answer (stderr: no config file); its tools are unavailable ('toolnexus "
        "tools' shows every status)"
    ]


def test_mcp_list_shows_each_server_like_slash_mcp(cli, tmp_path):
    config = mcp_file(
        tmp_path / "mcp.json",
        {
            "calc": calc(),
            "crashes": {"command": "sh", "args": ["-c", "echo 'bad \x1b[31mconfig' >&2; exit 2"]},
            "off": {"command": "sh", "disabled": True},
        },
    )
    result = cli.call("mcp", "list", "--mcp", str(config))
    assert result.code == 1, result  # one server failed
    lines = result.stdout.splitlines()
    assert lines[0] == "calc  stdio  ok"
    assert lines[1].startswith("  tools (9): calc_add, calc_echo,")
    assert "  resources (1): readme (note://readme)" in lines
    assert "  prompts (1): /calc:review" in lines
    crashed = lines.index(
        "crashes  stdio  failed: it exited with status 2 while waiting for "
        "the initialize answer (stderr: bad ^[[31mconfig)"
    )
    assert lines[crashed + 1 : crashed + 4] == [
        "  roots: none",  # what it was told (none in the home)
        "  stderr:",
        "    bad ^[[31mconfig",
    ]
    assert lines[-2:] == ["off  stdio  disabled", "  roots: none"]

    listed = cli.call("mcp", "list", "--json", "--mcp", str(config))
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["calc"]["status"] == "ok" and rows["calc"]["prompts"] == ["review"]
    assert rows["crashes"]["stderr"] == ["bad ^[[31mconfig"]


def test_mcp_list_without_servers_is_a_usage_error(cli):
    result = cli.call("mcp", "list")
    assert result.code == 2
    assert result.stderr.startswith("error: no MCP servers are configured")
