"""How an MCP server is doing, as a value: `ServerStatus.state` is an `McpServerState`
(where it is in its lifecycle, why, and whether it waits for a login), read as fields, never
parsed out of the sentence a person is shown."""

from __future__ import annotations

import pytest

from tests.support.mcp_helpers import START, start_server, stop
from toolnexus import create_toolkit
from toolnexus.mcp import McpServerState, add_mcp_servers

pytest.importorskip("mcp")
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def oauth_port():
    proc, port = start_server("oauth_server.py")
    try:
        yield port
    finally:
        stop(proc)


async def test_a_server_that_wants_a_login_says_so_in_its_state(oauth_port, tmp_path):
    """A remote server that answers 401 to a client without a login: failed, needs_login,
    and the sentence tells the person what to run."""
    config = {"mcpServers": {"remote": {"url": f"http://127.0.0.1:{oauth_port}/mcp"}}}
    toolkit = await create_toolkit()
    try:
        [status] = await add_mcp_servers(
            toolkit, config, timeout=START, tokens=tmp_path / "tokens.json"
        )
    finally:
        await toolkit.close()
    assert status.state == McpServerState(
        "failed", "it needs a login: run 'toolnexus mcp login remote'", needs_login=True
    )
    assert status.needs_login and not status.ok
    assert str(status.state) == "failed: it needs a login: run 'toolnexus mcp login remote'"


async def test_a_server_that_refuses_its_own_token_does_not_want_a_login(oauth_port):
    """The entry carries its own Authorization header, which the server refuses: it failed
    with the HTTP status, and a login would not help."""
    config = {
        "mcpServers": {
            "remote": {
                "url": f"http://127.0.0.1:{oauth_port}/mcp",
                "headers": {"Authorization": "Bearer not-a-token-of-its"},
            }
        }
    }
    toolkit = await create_toolkit()
    try:
        [status] = await add_mcp_servers(toolkit, config, timeout=START)
    finally:
        await toolkit.close()
    assert status.state.state == "failed" and not status.needs_login
    assert status.state.reason is not None and status.state.reason.startswith("HTTP 401")


def test_the_state_reads_as_the_sentence_a_person_is_shown():
    assert str(McpServerState("ok")) == "ok"
    assert str(McpServerState("restarting", "it was killed by SIGKILL")) == (
        "restarting: it was killed by SIGKILL"
    )
