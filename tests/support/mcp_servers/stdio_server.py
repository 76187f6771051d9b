"""A real MCP server over stdio, written with the SDK, for tests/library/test_mcp.py.

Writes its PID to $MCP_PID_FILE (when set) before serving, so tests can check that the
process ends with the toolkit or with the chat that started it. With MCP_LINGER=1 it does
not exit when its stdin closes (as some real servers do not): then only a signal ends it.

Tests wait on events, never on time, so the server's slow parts wait for files the test
creates: $MCP_START_GATE must exist before it serves (a server slow to start), and
$MCP_STEPS_GATE before `steps` returns (a long call; it creates $MCP_CALLED_FILE as it
begins). $MCP_ROOTS_FILE gets the client's
roots each time it says they changed. With $MCP_FINISH_FILE it takes $MCP_FINISH_AFTER
seconds (ignoring SIGTERM) to finish once its stdin closes, then writes that file: a busy
server the client must not wait for.
"""

from __future__ import annotations

import base64
import os
import signal
import sys
import time
import warnings
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import BlobResourceContents, EmbeddedResource, NotificationParams

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from tests.support.stub_provider import pdf_bytes, png_bytes  # noqa: E402

server = MCPServer("calc", log_level="WARNING")
warnings.simplefilter("ignore")  # the SDK's deprecation notes (log messages): not for stderr


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason."""
    raise ToolError(f"cannot do that: {reason}")


@server.tool()
def picture() -> list:
    """A caption and a tiny image."""
    return ["a red dot", Image(data=png_bytes(4, 3), format="png")]


@server.tool()
def report() -> list:
    """A PDF, as an embedded resource."""
    blob = BlobResourceContents(
        uri="file:///reports/q3.pdf",
        mime_type="application/pdf",
        blob=base64.b64encode(pdf_bytes("q3")).decode(),
    )
    return ["the report", EmbeddedResource(type="resource", resource=blob)]


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep, then say so."""
    await anyio.sleep(seconds)
    return f"slept {seconds:g} s"


@server.tool()
async def steps(count: int, ctx: Context) -> str:
    """Report progress and a log message at each step, then wait for $MCP_STEPS_GATE."""
    if os.environ.get("MCP_CALLED_FILE"):
        Path(os.environ["MCP_CALLED_FILE"]).touch()
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step} of {count}")
        await ctx.info(f"finished step {step}")
    await wait_for_file(os.environ.get("MCP_STEPS_GATE"))
    return f"{count} steps done"


@server.tool()
async def roots(ctx: Context) -> str:
    """The client's roots, one URI a line."""
    return "\n".join(str(root.uri) for root in (await ctx.session.list_roots()).roots)


async def note_roots(ctx, params: NotificationParams) -> None:
    listed = await ctx.session.list_roots()
    Path(os.environ["MCP_ROOTS_FILE"]).write_text("".join(f"{root.uri}\n" for root in listed.roots))


if os.environ.get("MCP_ROOTS_FILE"):
    server._lowlevel_server.add_notification_handler(
        "notifications/roots/list_changed", NotificationParams, note_roots
    )


async def wait_for_file(path: str | None) -> None:
    while path and not os.path.exists(path):
        await anyio.sleep(0.02)


@server.tool()
def secret_env() -> str:
    """Whether the secret from the config's env arrived."""
    return "token ok" if os.environ.get("CALC_TOKEN") == os.environ.get("CALC_EXPECTED") else "no"


@server.resource("note://readme", name="readme", description="What this server is.")
def readme() -> str:
    return "a calculator for tests"


@server.prompt()
def review(code: str) -> str:
    """Ask for a review of some code."""
    return f"Review this:\n{code}"


def pid_on_this_machine() -> int:
    """This process's PID as the machine sees it (it may run in a PID namespace of its own,
    where os.getpid() is that namespace's number)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("NSpid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return os.getpid()


if __name__ == "__main__":
    pid_file = os.environ.get("MCP_PID_FILE")
    if pid_file:
        with open(pid_file, "w") as f:
            f.write(str(pid_on_this_machine()))
    anyio.run(wait_for_file, os.environ.get("MCP_START_GATE"))
    finish = os.environ.get("MCP_FINISH_FILE")
    if finish:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    server.run()
    if finish:
        time.sleep(float(os.environ["MCP_FINISH_AFTER"]))
        Path(finish).write_text("finished")
    if os.environ.get("MCP_LINGER") == "1":
        time.sleep(3600)
