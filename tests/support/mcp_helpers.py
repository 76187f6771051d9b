"""What the MCP tests share: the servers of tests/support/mcp_servers/ as config entries (forked
from a process that has imported the SDK: tests/support/prefork.py), and the HTTP one as a
process started where a test wants it."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
from pathlib import Path

from tests.support import prefork

SERVERS = Path(__file__).parent / "mcp_servers"
STDIO_SERVER = str(SERVERS / "stdio_server.py")
START = 60.0  # start-up limit for servers that should come up (a loaded machine is slow)


def calc(pid_file: Path | None = None, env: dict | None = None, **extra) -> dict:
    """The stdio server's entry: its PID goes to `pid_file`; `env` (its MCP_* knobs)."""
    env = {**({"MCP_PID_FILE": str(pid_file)} if pid_file else {}), **(env or {})}
    return {**server_command(STDIO_SERVER), "env": env, **extra}


def server_command(script: str | Path, *args: str) -> dict:
    """A config entry's command and args that run the Python file `script` with `args`."""
    command = prefork.command("script", str(script), *args)
    return {"command": command[0], "args": command[1:]}


def mcp_file(path: Path, servers: dict) -> Path:
    """An mcp.json at `path` with `servers` by name."""
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return path


def read_line(proc: subprocess.Popen, timeout: float) -> str:
    """One line of the process's stdout, or fail after `timeout` seconds."""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout):
            raise AssertionError(f"no output from {proc.args} within {timeout} s")
    return proc.stdout.readline()


def start_http_server(token: str, port: int = 0) -> tuple[subprocess.Popen, int]:
    """The streamable-HTTP server on 127.0.0.1:`port` (0: a free one), and its port once
    it listens."""
    return start_server("http_server.py", HTTP_MCP_TOKEN=token, HTTP_MCP_PORT=str(port))


def start_server(script: str, **env: str) -> tuple[subprocess.Popen, int]:
    """One of the HTTP servers of tests/support/mcp_servers/ (with `env`, its knobs), and the port
    it listens on once it does."""
    env = {**os.environ, "HTTP_MCP_PARENT": str(os.getpid()), **env}
    proc = subprocess.Popen(
        prefork.command("script", str(SERVERS / script)), stdout=subprocess.PIPE, text=True, env=env
    )
    return proc, int(read_line(proc, START))


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def tool_messages(body: dict) -> list[dict]:
    return [m for m in body["messages"] if m.get("role") == "tool"]
