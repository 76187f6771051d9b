"""MCP servers over their lifetime, through the library: they start in the background and a
model call waits only for those not ready yet; a stdio server that dies is restarted (a
bounded number of times), a remote one reconnected, and the model hears of it once;
progress and log messages reach the loop as events; the roots are advertised and kept
current. Real servers written with the SDK (tests/support/mcp_servers/); slow parts of a server
wait for files the test creates, so every test waits on events, never on time.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal

import pytest

from tests.support import prefork
from tests.support.mcp_helpers import START, STDIO_SERVER, calc, start_http_server, stop
from tests.support.scripted import calling, scripted_client
from tests.support.waiting import eventually, pid_in
from toolnexus import create_toolkit
from toolnexus.mcp import add_mcp_servers

pytest.importorskip("mcp")

TOKEN = "tok-4e1b77"


def tool_names(request) -> list[str]:
    return [tool["function"]["name"] for tool in (request.body or {}).get("tools", [])]


def notices(request) -> list[str]:
    return [
        m["content"]
        for m in (request.body or {})["messages"]
        if m["role"] == "user" and m["content"].startswith("(toolnexus")
    ]


async def run(client, toolkit, prompt: str = "hi", **kwargs) -> list[dict]:
    return [event async for event in client.stream(prompt, toolkit, **kwargs)]


# ----------------------------------------------------------------------------- start-up


async def test_servers_start_in_the_background_and_a_model_call_waits_for_them(scripted, tmp_path):
    """create_toolkit returns while a server is still starting; the model call says it
    waits for it, and goes out with its tools once it is ready."""
    gate, pid_file = tmp_path / "gate", tmp_path / "pid"
    toolkit = await create_toolkit(
        mcp_config={"mcpServers": {"calc": calc(pid_file, env={"MCP_START_GATE": str(gate)})}}
    )
    try:
        [status] = toolkit.servers
        assert str(status.state) == "starting" and toolkit.tools() == []
        scripted.add("done")
        events: list[dict] = []
        async with scripted_client(scripted) as client:
            running = asyncio.create_task(_collect(client, toolkit, events))
            await eventually(lambda: events, "the first event")
            assert events[0] == {"type": "waiting", "sources": ["calc"], "limit": None, "late": []}
            await eventually(lambda: pid_in(pid_file), "the server to start")
            assert scripted.requests == []  # no model call while it starts
            gate.touch()
            await running
        assert events[1] == {"type": "waiting", "sources": [], "limit": None, "late": []}
        assert "calc_add" in tool_names(scripted.requests[0])
    finally:
        await toolkit.close()


async def _collect(client, toolkit, events: list[dict]) -> None:
    async for event in client.stream("hi", toolkit):
        events.append(event)


async def test_servers_left_to_start_later_start_at_the_first_model_call(scripted, tmp_path):
    """With `mcp_start=False` nothing starts (nor is the SDK imported) until
    `start_sources()` or a model call: the call starts the servers and waits for them."""
    pid_file = tmp_path / "pid"
    toolkit = await create_toolkit(
        mcp_start=False, mcp_config={"mcpServers": {"calc": calc(pid_file)}}
    )
    try:
        assert toolkit.servers[0].state.state == "starting" and not pid_file.exists()
        scripted.add("done")
        async with scripted_client(scripted) as client:
            await run(client, toolkit, id="t")
        assert pid_in(pid_file)
        assert "calc_add" in tool_names(scripted.requests[0])
    finally:
        await toolkit.close()


async def test_a_model_call_goes_without_a_server_still_starting_after_the_wait(scripted, tmp_path):
    """With `mcp_wait`, a server slow to start is left out of the calls made meanwhile
    (the model told once that it is coming); it joins once it is ready."""
    gate = tmp_path / "gate"
    toolkit = await create_toolkit(
        mcp_wait=0.2, mcp_config={"mcpServers": {"slow": calc(env={"MCP_START_GATE": str(gate)})}}
    )
    try:
        scripted.add(*[f"answer {n}" for n in (1, 2, 3)])
        async with scripted_client(scripted) as client:
            await run(client, toolkit, id="t")
            await run(client, toolkit, id="t")
            assert toolkit.servers[0].state.state == "starting"  # answered meanwhile
            gate.touch()
            await eventually(lambda: toolkit.servers[0].ok, "the server to be ready")
            await run(client, toolkit, id="t")
        first, second, third = scripted.requests
        assert tool_names(first) == tool_names(second) == []
        assert (
            notices(first)
            == notices(second)
            == [
                "(toolnexus, not the user: The MCP server slow is still starting: its tools are "
                "offered once it runs.)"
            ]
        )
        assert "slow_add" in tool_names(third)
        assert notices(third)[-1].startswith(
            "(toolnexus, not the user: The MCP server slow is ready: its tools are offered now "
            "(slow_add, slow_echo,"
        )
    finally:
        await toolkit.close()


async def test_a_start_up_timeout_per_server(tmp_path):
    never = tmp_path / "never"
    toolkit = await create_toolkit()
    try:
        statuses = await add_mcp_servers(
            toolkit,
            {
                "mcpServers": {
                    "quick": calc(env={"MCP_START_GATE": str(never)}, startup_timeout_sec=0.5),
                    "odd": calc(startup_timeout_sec="soon"),
                }
            },
            timeout=START,
        )
        assert [str(s.state) for s in statuses] == [
            "failed: timed out after 0.5 s waiting for the initialize answer",
            'failed: startup_timeout_sec must be a number of seconds from 0 to 3600, not "soon"',
        ]
    finally:
        await toolkit.close()


# ----------------------------------------------------------------------------- going down


async def test_the_model_is_told_once_when_a_server_goes_down_and_when_it_is_back(
    scripted, tmp_path
):
    pid_file, gate = tmp_path / "pid", tmp_path / "gate"
    gate.touch()
    toolkit = await create_toolkit()
    try:
        [status] = await add_mcp_servers(
            toolkit,
            {"mcpServers": {"calc": calc(pid_file, env={"MCP_START_GATE": str(gate)})}},
            timeout=START,
        )
        scripted.add(*[f"answer {n}" for n in (1, 2, 3, 4)])
        async with scripted_client(scripted) as client:
            await run(client, toolkit, id="t")
            gate.unlink()
            os.kill(pid_in(pid_file), signal.SIGKILL)
            await eventually(lambda: status.state.state == "restarting", "the restart")
            await run(client, toolkit, id="t")
            await run(client, toolkit, id="t")
            gate.touch()
            await eventually(lambda: status.ok, "the server to run again")
            await run(client, toolkit, id="t")
        up, down, still_down, back = scripted.requests
        assert "calc_add" in tool_names(up) and notices(up) == []
        assert tool_names(down) == tool_names(still_down) == []
        went = (
            "(toolnexus, not the user: The MCP server calc is not running (restarting: it "
            "was killed by SIGKILL): its tools (calc_add, calc_echo, calc_fail, "
            "calc_picture, calc_report, calc_slow, calc_steps, calc_roots, …) are not "
            "offered until it runs again.)"
        )
        assert notices(down) == notices(still_down) == [went]  # told once, kept in the thread
        assert "calc_add" in tool_names(back)
        assert notices(back) == [
            went,
            "(toolnexus, not the user: The MCP server calc is "
            "running again: its tools are offered again.)",
        ]
    finally:
        await toolkit.close()


async def test_a_server_that_keeps_dying_is_restarted_a_bounded_number_of_times(
    tmp_path, monkeypatch
):
    """After it ran once, every start fails (exit 3): it is tried len(BACKOFF) times more,
    then left failed, saying so."""
    from toolnexus.mcp import server as lifecycle

    monkeypatch.setattr(lifecycle, "BACKOFF", (0.01, 0.01, 0.01))
    gate, pid_file = tmp_path / "gate", tmp_path / "pid"
    gate.touch()
    script = (
        f"test -e '{gate}' || exit 3; exec {shlex.join(prefork.command('script', STDIO_SERVER))}"
    )
    toolkit = await create_toolkit()
    try:
        [status] = await add_mcp_servers(
            toolkit,
            {
                "mcpServers": {
                    "calc": {
                        "command": "sh",
                        "args": ["-c", script],
                        "env": {"MCP_PID_FILE": str(pid_file)},
                    }
                }
            },
            timeout=START,
        )
        gate.unlink()
        os.kill(pid_in(pid_file), signal.SIGKILL)
        await eventually(lambda: status.state.state == "failed", "it to be given up")
        assert str(status.state) == (
            "failed: it exited with status 3 while waiting for the initialize answer; it "
            "failed 4 times in a row, so it is not started again unless it is restarted"
        )
    finally:
        await toolkit.close()


async def add_remote(toolkit, port: int):
    """The HTTP server on `port`, as the server "remote" of `toolkit`: its status."""
    [status] = await add_mcp_servers(
        toolkit,
        {
            "mcpServers": {
                "remote": {
                    "url": f"http://127.0.0.1:{port}/mcp",
                    "headers": {"Authorization": f"Bearer {TOKEN}"},
                }
            }
        },
        timeout=START,
    )
    return status


@pytest.mark.timeout(180)  # the HTTP server starts twice: its imports are slow on a busy machine
async def test_a_remote_server_that_restarts_is_reconnected(tmp_path):
    """The server behind the url starts again (it forgot the session): the next call gets
    a new session and runs, as the call never reached the tool."""
    server, port = start_http_server(TOKEN)
    toolkit = await create_toolkit()
    try:
        status = await add_remote(toolkit, port)
        assert (await toolkit.execute("remote_shout", {"text": "a"})).output == "A"
        stop(server)
        server, _ = await asyncio.to_thread(start_http_server, TOKEN, port)
        seen: list[str] = []
        toolkit.sources[0].watch(lambda changed: seen.append(str(changed.status.state)))
        assert (await toolkit.execute("remote_shout", {"text": "b"})).output == "B"
        assert seen == ["restarting: it forgot the session (it restarted?)", "ok"]
        assert status.ok
    finally:
        await toolkit.close()
        stop(server)


@pytest.mark.timeout(180)  # the HTTP server starts twice: its imports are slow on a busy machine
async def test_a_remote_server_that_goes_away_is_withdrawn_and_reconnected(tmp_path, monkeypatch):
    """The server behind the url stops: the call that finds it gone says so, its tools are
    withdrawn while it cannot be reached, and they return once it answers again."""
    from toolnexus.mcp import server as lifecycle

    monkeypatch.setattr(lifecycle, "REMOTE_BACKOFF", (0.2,) * 1000)  # tries go on meanwhile
    server, port = start_http_server(TOKEN)
    toolkit = await create_toolkit()
    try:
        status = await add_remote(toolkit, port)
        stop(server)
        gone = await toolkit.execute("remote_shout", {"text": "a"})
        assert gone.is_error and gone.output.endswith("; it is reconnected"), gone.output
        await eventually(lambda: status.state.state == "restarting", "the reconnection")
        assert toolkit.tools() == []
        server, _ = await asyncio.to_thread(start_http_server, TOKEN, port)
        await eventually(lambda: status.ok, "the server to be reached again")
        assert (await toolkit.execute("remote_shout", {"text": "b"})).output == "B"
    finally:
        await toolkit.close()
        stop(server)


# ----------------------------------------------------------------------------- progress, roots


async def test_progress_and_log_messages_come_as_events_while_a_tool_runs(scripted, tmp_path):
    """A progressToken goes with the call; what the server reports arrives before the
    result: its progress as the call's, its log messages as the server's log."""
    gate = tmp_path / "steps"
    toolkit = await create_toolkit()
    try:
        await add_mcp_servers(
            toolkit,
            {"mcpServers": {"calc": calc(env={"MCP_STEPS_GATE": str(gate)})}},
            timeout=START,
        )
        scripted.add(
            calling(("calc_steps", {"count": 2})),
            "done",
        )
        events: list[dict] = []
        async with scripted_client(scripted) as client:
            running = asyncio.create_task(_collect(client, toolkit, events))
            await eventually(
                lambda: sum(e["type"] in ("tool_progress", "mcp_log") for e in events) == 4,
                "the progress and logs of both steps",
            )
            assert not any(e["type"] == "tool_result" for e in events)  # still running
            gate.touch()
            await running
        progress = [
            (e["message"], e["progress"], e["total"])
            for e in events
            if e["type"] == "tool_progress"
        ]
        assert progress == [("step 1 of 2", 1, 2), ("step 2 of 2", 2, 2)]
        logs = [(e["server"], e["message"]) for e in events if e["type"] == "mcp_log"]
        assert logs == [("calc", "info: finished step 1"), ("calc", "info: finished step 2")]
        assert {e["id"] for e in events if e["type"] == "tool_progress"} == {"call_1"}
        [result] = [e for e in events if e["type"] == "tool_result"]
        assert result["output"] == "2 steps done"
    finally:
        await toolkit.close()


async def test_the_roots_are_advertised_and_kept_current(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir()
    second.mkdir()
    told = tmp_path / "roots"
    toolkit = await create_toolkit(
        mcp_roots=[first],
        mcp_config={"mcpServers": {"calc": calc(env={"MCP_ROOTS_FILE": str(told)})}},
    )
    try:
        await toolkit.started()
        assert (await toolkit.execute("calc_roots", {})).output == first.as_uri()
        await toolkit.sources[0].set_roots([second, first])
        await eventually(told.exists, "the server to hear the roots changed")
        assert told.read_text() == f"{second.as_uri()}\n{first.as_uri()}\n"
    finally:
        await toolkit.close()
