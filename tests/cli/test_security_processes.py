"""Security promise: no orphans. What the `bash` tool starts, MCP stdio servers (also
grandchildren behind `sh -c`) and key commands cannot outlive them, not even a process that
called setsid to leave their process group: they run in a PID namespace of their own (or
under a subreaper), which ends with them and with toolnexus. SIGTERM and SIGHUP end a run
like Ctrl-C (exit 128 + the signal) so that clean-up runs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli_helpers import ENTRY
from tests.support.stub_provider import Recorded, Reply, openai_stream
from tests.support.waiting import WAIT_S, alive, running_with, wait_for_pid, wait_until

SERVER = Path(__file__).parents[1] / "support" / "mcp_servers" / "stdio_server.py"


def start(cli, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*ENTRY, *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli.merged_env(),
        cwd=cli.cwd,
    )


def bash_call_then_answer(stub, command: str) -> None:
    def handler(request: Recorded) -> Reply:
        if len(stub.requests) == 1:
            return openai_stream(tool_calls=[("bash", {"command": command})])
        return openai_stream("finished")

    stub.handler = handler


def leaving_children(tmp_path: Path) -> tuple[str, str]:
    """A command that starts three sleeps, one in the background, one in a session of its
    own (setsid: out of the process group), one double-forked; and the marker their
    environments hold (computed by the shell, so no command line holds it)."""
    marker = f"left-{id(tmp_path)}-42"
    command = (
        f"export TOOLNEXUS_TEST_MARK={marker.removesuffix('-42')}-$((6*7)); "
        "sleep 300 & setsid sleep 300 & (sleep 300 &) ; sleep 300"
    )
    return command, marker


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_signal_kills_everything_the_bash_tool_started(cli, stub, tmp_path, signum):
    command, marker = leaving_children(tmp_path)
    cli.in_project()
    bash_call_then_answer(stub, command)
    process = start(cli, "ask", "--builtins", "--yes", "--id", "b1", "run it")
    wait_until(lambda: len(running_with(marker)) == 4, "the four sleeps")

    process.send_signal(signum)
    out, err = process.communicate(timeout=WAIT_S)

    assert process.returncode == 128 + signum, err
    assert "Traceback" not in err
    wait_until(lambda: not running_with(marker), "every sleep to end")


def test_what_a_bash_command_leaves_running_ends_with_it(cli, stub, tmp_path):
    command, marker = leaving_children(tmp_path)
    cli.in_project()
    bash_call_then_answer(stub, command.removesuffix("; sleep 300") + "; echo ok")
    result = cli.run("ask", "--builtins", "--yes", "go")
    assert result.code == 0, result
    assert running_with(marker) == []  # gone by the time the answer came


def test_a_key_command_leaves_nothing_running(bare_cli, stub, tmp_path):
    """A key command that starts a daemon (as gpg starts gpg-agent) leaves nothing behind."""
    marker = f"key-{id(tmp_path)}-42"
    command = (
        f"TOOLNEXUS_TEST_MARK={marker.removesuffix('-42')}-$((6*7)) setsid sleep 300 & "
        "echo sk-from-the-command"
    )
    bare_cli.write_config(
        f'default_model = "m"\n[providers.vault]\nbase_url = "{stub.url}"\n'
        f'style = "openai"\napi_key_cmd = {json.dumps(command)}\n'
        '[models.m]\nprovider = "vault"\nmodel = "stub-model"\n'
    )
    result = bare_cli.run("ask", "hi")
    assert result.code == 0, result
    assert stub.requests[0].headers["authorization"] == "Bearer sk-from-the-command"
    assert running_with(marker) == []


# ask waits for its servers to run before it asks the model: the server then surely wrote
# its PID (it does before serving), however long its start takes on a busy machine (without
# it, ask may answer and end the server before that, after the default 5 s)
WAIT_FOR_SERVERS = "mcp_wait = 3600\n"


def mcp_config(tmp_path: Path, pid_file: Path, **env: str) -> Path:
    """A server behind `sh -c` (so the server is sh's child, a grandchild of toolnexus) that
    does not exit when its stdin closes, as some real servers do not; `env`, its other
    MCP_* knobs."""
    config = {
        "mcpServers": {
            "calc": {
                "command": "sh",
                "args": ["-c", f"'{sys.executable}' '{SERVER}'; true"],
                "env": {"MCP_PID_FILE": str(pid_file), "MCP_LINGER": "1", **env},
            }
        }
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def test_an_mcp_server_behind_sh_c_ends_when_ask_ends(cli, stub, tmp_path):
    pid_file = tmp_path / "server.pid"
    cli.write_config(WAIT_FOR_SERVERS)
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
    cli.write_config(WAIT_FOR_SERVERS)
    # it writes its PID, then waits for a file that never comes: ask is still waiting for
    # it to start when the signal comes
    config = mcp_config(tmp_path, pid_file, MCP_START_GATE=str(tmp_path / "never"))
    process = start(cli, "ask", "--mcp", str(config), "hi")
    pid = wait_for_pid(pid_file)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=WAIT_S)
    assert process.returncode == 143, err
    assert "Traceback" not in err
    wait_until(lambda: not alive(pid), "the server to end")


def test_what_an_mcp_server_started_in_a_session_of_its_own_ends_with_ask(cli, stub, tmp_path):
    marker = f"server-{id(tmp_path)}-42"
    mark = f"TOOLNEXUS_TEST_MARK={marker.removesuffix('-42')}-$((6*7))"
    config = {
        "mcpServers": {
            "calc": {
                "command": "sh",
                "args": ["-c", f"{mark} setsid sleep 300 & exec '{sys.executable}' '{SERVER}'"],
            }
        }
    }
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    result = cli.run("ask", "--mcp", str(path), "hi")
    assert result.code == 0, result
    wait_until(lambda: not running_with(marker), "the server's daemon to end")


def test_what_bash_started_ends_when_toolnexus_is_killed(cli, stub, tmp_path):
    """SIGKILL leaves toolnexus no time to clean up: the kernel ends the command's PID
    namespace when the launcher, told by the parent-death signal, dies with it."""
    command, marker = leaving_children(tmp_path)
    cli.in_project()
    bash_call_then_answer(stub, command)
    process = start(cli, "ask", "--builtins", "--yes", "run it")
    wait_until(lambda: len(running_with(marker)) == 4, "the four sleeps")
    process.kill()
    process.communicate(timeout=WAIT_S)
    wait_until(lambda: not running_with(marker), "every sleep to end with toolnexus")
