"""A remote MCP server over streamable HTTP that restarts or goes away: a call that finds
the session forgotten (a 400, as the reference servers' examples answer, or the spec's
404) gets a new session and runs once more, and the model hears that the tools changed;
an idle server is pinged, so one gone or restarted is noticed before a call needs it.
The server is the SDK-built one of tests/support/mcp_servers/http_server.py, started again
on the same port; every step waits for an event, never for a time.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.support.mcp_helpers import START, start_server, stop
from tests.support.waiting import eventually
from toolnexus import create_toolkit
from toolnexus.mcp import add_mcp_servers

pytest.importorskip("mcp")

TOKEN = "tok-5c2a91"
SLOW_IMPORTS = pytest.mark.timeout(180)  # the server starts twice: slow on a busy machine


def http_server(port: int = 0, **env: str):
    """The SDK-built HTTP server, answering an unknown session id with a 400."""
    return start_server(
        "http_server.py",
        HTTP_MCP_TOKEN=TOKEN,
        HTTP_MCP_PORT=str(port),
        HTTP_MCP_UNKNOWN_SESSION="400",
        **env,
    )


async def add_remote(toolkit, port: int, ping_interval: float):
    [status] = await add_mcp_servers(
        toolkit,
        {
            "mcpServers": {
                "remote": {
                    "url": f"http://127.0.0.1:{port}/mcp",
                    "headers": {"Authorization": f"Bearer {TOKEN}"},
                    "ping_interval_sec": ping_interval,
                }
            }
        },
        timeout=START,
    )
    return status


@SLOW_IMPORTS
async def test_a_call_after_the_server_restarted_and_answers_400_runs_in_a_new_session():
    """The server restarted between two calls and now offers one more tool: the second
    call runs (a new session), the tools are listed again, and the model is told."""
    server, port = http_server()
    toolkit = await create_toolkit()
    try:
        status = await add_remote(toolkit, port, ping_interval=0)
        assert (await toolkit.execute("remote_shout", {"text": "a"})).output == "A"
        assert toolkit.news() == []  # the model knows the tools it is offered
        stop(server)
        server, _ = await asyncio.to_thread(http_server, port, HTTP_MCP_EXTRA_TOOL="1")
        seen: list[str] = []
        toolkit.sources[0].watch(lambda changed: seen.append(str(changed.status.state)))
        result = await toolkit.execute("remote_shout", {"text": "b"})
        assert (result.output, result.is_error) == ("B", False)
        assert seen == ["restarting: it forgot the session (it restarted?)", "ok"]
        assert status.ok and "remote_whisper" in status.tools
        assert toolkit.news() == [
            "The MCP server remote's tools changed: it offers remote_whoami, remote_shout, "
            "remote_whisper now."
        ]
    finally:
        await toolkit.close()
        stop(server)


@SLOW_IMPORTS
async def test_an_idle_server_that_restarted_is_noticed_by_its_ping():
    """No call is made: the ping finds the session forgotten and a new one is made."""
    server, port = http_server()
    toolkit = await create_toolkit()
    try:
        status = await add_remote(toolkit, port, ping_interval=0.2)
        seen: list[str] = []
        toolkit.sources[0].watch(lambda changed: seen.append(str(changed.status.state)))
        stop(server)
        server, _ = await asyncio.to_thread(http_server, port, HTTP_MCP_EXTRA_TOOL="1")
        await eventually(lambda: "remote_whisper" in status.tools, "the new session's tools")
        assert status.ok
        assert seen[0].startswith("restarting: ")  # forgot the session, or was not there yet
    finally:
        await toolkit.close()
        stop(server)


@SLOW_IMPORTS
async def test_an_idle_server_that_is_gone_is_noticed_by_its_ping(monkeypatch):
    """The server stops and nobody calls it: its status says so and its tools are no
    longer offered, before the model could pick one."""
    from toolnexus.mcp import server as lifecycle

    monkeypatch.setattr(lifecycle, "REMOTE_BACKOFF", (0.2,) * 1000)  # tries go on meanwhile
    server, port = http_server()
    toolkit = await create_toolkit()
    try:
        status = await add_remote(toolkit, port, ping_interval=0.2)
        assert toolkit.tools()
        stop(server)
        await eventually(lambda: status.state.state == "restarting", "the ping to fail")
        assert toolkit.tools() == []
    finally:
        await toolkit.close()
        stop(server)
