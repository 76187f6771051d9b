"""Security promise: no orphans. What the `bash` tool starts and MCP stdio servers (also
grandchildren behind `sh -c`) run in their own process group and are killed whole when
the command ends, and when toolnexus gets SIGTERM or SIGHUP, which end a run like Ctrl-C
(exit 128 + the signal) so that clean-up runs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import cli_helpers
from tests.cli_helpers import ENTRY
from tests.stub_provider import Recorded, Reply, openai_stream
from tests.waiting import WAIT_S, alive, wait_for_pid, wait_until

cli, stub = cli_helpers.cli, cli_helpers.stub

SERVER = Path(__file__).with_name("mcp_servers") / "stdio_server.py"


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes whose process group is `pgid`."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def start(cli, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*ENTRY, *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=cli.merged_env(),
                            cwd=cli.home)


def bash_call_then_answer(stub, command: str) -> None:
    def handler(request: Recorded) -> Reply:
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[("bash", {"command": command})])
        return openai_stream("finished")

    stub.handler = handler


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_signal_kills_the_bash_tools_whole_process_group(cli, stub, tmp_path, signum):
    pid_file = tmp_path / "group"
    bash_call_then_answer(stub, f"echo $$ > {pid_file}; sleep 300 & sleep 300")
    process = start(cli, "ask", "--builtins", "--yes", "--id", "b1", "run it")
    pgid = wait_for_pid(pid_file)
    wait_until(lambda: len(group_members(pgid)) >= 3, "bash and its two sleeps")

    process.send_signal(signum)
    out, err = process.communicate(timeout=WAIT_S)

    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err
    assert group_members(pgid) == []


def test_what_a_bash_command_leaves_in_the_background_ends_with_it(cli, stub, tmp_path):
    pid_file = tmp_path / "group"
    bash_call_then_answer(stub, f"echo $$ > {pid_file}; sleep 300 > /dev/null 2>&1 & echo ok")
    result = cli.run("ask", "--builtins", "--yes", "go")
    assert result.code == 0, result
    assert group_members(wait_for_pid(pid_file)) == []


def mcp_config(tmp_path: Path, pid_file: Path) -> Path:
    """A server behind `sh -c` (so the server is sh's child, a grandchild of toolnexus) that
    does not exit when its stdin closes, as some real servers do not."""
    config = {"mcpServers": {"calc": {
        "command": "sh", "args": ["-c", f"'{sys.executable}' '{SERVER}'; true"],
        "env": {"MCP_PID_FILE": str(pid_file), "MCP_LINGER": "1"}}}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_an_mcp_server_behind_sh_c_ends_when_ask_ends(cli, stub, tmp_path):
    pid_file = tmp_path / "server.pid"
    result = cli.run("ask", "--mcp", str(mcp_config(tmp_path, pid_file)), "hi")
    assert result.code == 0, result
    pid = wait_for_pid(pid_file)
    wait_until(lambda: not alive(pid), "the server to end")  # bounded by the SDK's grace


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_an_mcp_server_behind_sh_c_ends_when_ask_gets_a_signal(cli, stub, tmp_path, signum):
    pid_file = tmp_path / "server.pid"
    stub.handler = lambda rec: Reply.hang()
    process = start(cli, "ask", "--mcp", str(mcp_config(tmp_path, pid_file)), "hi")
    pid = wait_for_pid(pid_file)
    assert stub.wait_for_requests(1, timeout=WAIT_S)  # the run is under way

    process.send_signal(signum)
    out, err = process.communicate(timeout=WAIT_S)

    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err
    wait_until(lambda: not alive(pid), "the MCP server to end with toolnexus")


def test_a_signal_while_mcp_servers_start_ends_them_too(cli, stub, tmp_path):
    pid_file = tmp_path / "server.pid"
    config = mcp_config(tmp_path, pid_file)
    process = start(cli, "ask", "--mcp", str(config), "hi")
    pid = wait_for_pid(pid_file)  # started, perhaps not yet ready
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 143, err
    assert "Traceback" not in err
    wait_until(lambda: not alive(pid), "the server to end")
