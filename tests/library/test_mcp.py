"""MCP servers as tools: real servers written with the SDK, over stdio and streamable HTTP.

tests/support/mcp_servers/ holds the servers: `stdio_server.py` (add, echo, fail, picture, report,
secret_env)
and `http_server.py` (whoami, shout; every request needs the bearer token), run as real
processes. The tools are called through the real agent loop on the scripted model.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from tests.support.mcp_helpers import (
    SERVERS,
    START,
    calc,
    read_line,
    start_http_server,
    stop,
    tool_messages,
)
from tests.support.scripted import calling, scripted_client
from tests.support.stub_provider import pdf_bytes, png_bytes
from tests.support.waiting import alive, eventually, pid_in, running_with, wait_until
from toolnexus import ToolContext, ToolnexusError, create_toolkit
from toolnexus.mcp import (
    McpServerState,
    ServerStatus,
    add_mcp_servers,
    convert_content,
    open_mcp_servers,
)

pytest.importorskip("mcp")

# The tests that share the module's toolkit (and its server tasks) run in the module's loop.
shared_loop = pytest.mark.asyncio(loop_scope="module")

HTTP_TOKEN = "tok-8f3a91c2e7"  # the value behind ${TOOLNEXUS_TEST_MCP_TOKEN}


@pytest.fixture(scope="module")
def http_server():
    """The streamable-HTTP server on 127.0.0.1 (a free port it picks and prints)."""
    proc, port = start_http_server(HTTP_TOKEN)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def token_env():
    mp = pytest.MonkeyPatch()
    mp.setenv("TOOLNEXUS_TEST_MCP_TOKEN", HTTP_TOKEN)
    mp.setenv("TOOLNEXUS_TEST_CALC_TOKEN", "calc-secret-5521")
    yield
    mp.undo()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def kit(http_server, token_env, tmp_path_factory):
    """One toolkit with both real servers (and a disabled one), shared by the module."""
    pid_file = tmp_path_factory.mktemp("calc") / "pid"
    config = {
        "mcpServers": {
            "calc": calc(
                pid_file,
                env={
                    "CALC_TOKEN": "${TOOLNEXUS_TEST_CALC_TOKEN}",
                    "CALC_EXPECTED": "calc-secret-5521",
                },
            ),
            "remote": {
                "url": http_server,
                "headers": {"Authorization": "Bearer ${TOOLNEXUS_TEST_MCP_TOKEN}"},
            },
            "off": {"command": "no-such-server", "disabled": True},
        }
    }
    toolkit = await create_toolkit()
    statuses = await add_mcp_servers(toolkit, config, timeout=START)
    yield toolkit, statuses
    await toolkit.close()


# ----------------------------------------------------------------------------- listing


@shared_loop
async def test_servers_start_and_their_tools_are_named_server_tool(kit):
    toolkit, statuses = kit
    assert statuses == [
        ServerStatus(
            "calc",
            "stdio",
            McpServerState("ok"),
            [
                "calc_add",
                "calc_echo",
                "calc_fail",
                "calc_picture",
                "calc_report",
                "calc_slow",
                "calc_steps",
                "calc_roots",
                "calc_secret_env",
            ],
        ),
        ServerStatus("remote", "http", McpServerState("ok"), ["remote_whoami", "remote_shout"]),
        ServerStatus("off", "stdio", McpServerState("disabled"), []),
    ]
    add = toolkit.get("calc_add")
    assert add.source == "mcp:calc" and toolkit.get("remote_shout").source == "mcp:remote"
    assert add.description == "Add two integers."
    assert add.input_schema["type"] == "object"
    assert set(add.input_schema["properties"]) == {"a", "b"}
    assert add.input_schema["required"] == ["a", "b"]
    names = [t["function"]["name"] for t in toolkit.to_openai()]
    assert "calc_add" in names and "remote_whoami" in names


# ----------------------------------------------------------------------------- calls


@shared_loop
async def test_stdio_tools_run_through_the_agent_loop(kit, scripted):
    toolkit, _ = kit
    scripted.add(
        calling(("calc_add", {"a": 2, "b": 3}), ("calc_echo", {"text": "héllo"})),
        "2 + 3 = 5",
    )
    async with scripted_client(scripted) as client:
        result = await client.run("add 2 and 3, then echo héllo", toolkit)
    assert result.text == "2 + 3 = 5"
    assert tool_messages(scripted.requests[1].body) == [
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
        {"role": "tool", "tool_call_id": "call_2", "content": "héllo"},
    ]
    names = [t["function"]["name"] for t in scripted.requests[0].body["tools"]]
    assert "calc_add" in names and "remote_shout" in names


@shared_loop
async def test_http_tool_runs_through_the_agent_loop_with_the_expanded_header(kit, scripted):
    toolkit, _ = kit
    scripted.add(
        calling(("remote_whoami", {}), ("remote_shout", {"text": "quiet"})),
        "done",
    )
    async with scripted_client(scripted) as client:
        await client.run("who am I?", toolkit)
    assert [m["content"] for m in tool_messages(scripted.requests[1].body)] == [
        "authorized as tester",
        "QUIET",
    ]


@shared_loop
async def test_an_is_error_result_reaches_the_model_as_an_error(kit, scripted):
    toolkit, _ = kit
    scripted.add(
        calling(("calc_fail", {"reason": "no disk"})),
        "sorry",
    )
    events = []
    async with scripted_client(scripted) as client:
        async for event in client.stream("try it", toolkit):
            events.append(event)
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert result["is_error"] is True
    assert "cannot do that: no disk" in result["output"]
    [sent] = tool_messages(scripted.requests[1].body)
    assert "cannot do that: no disk" in sent["content"]
    direct = await toolkit.execute("calc_fail", {"reason": "x"})
    assert direct.is_error and direct.metadata == {"mcp_server": "calc", "mcp_tool": "fail"}


@shared_loop
async def test_image_content_is_summarized_and_attached(kit):
    toolkit, _ = kit
    result = await toolkit.execute("calc_picture", {})
    assert (result.output, result.is_error) == ("a red dot\n[image: image/png]", False)
    [image] = result.attachments
    assert (image.describe(), image.data) == ("image 4x3 png", png_bytes(4, 3))


@shared_loop
async def test_an_mcp_image_reaches_anthropic_as_a_tool_result_block(kit, scripted):
    toolkit, _ = kit
    scripted.add(calling(("calc_picture", {})), "a dot")
    async with scripted_client(scripted, "anthropic") as client:
        events = [e async for e in client.stream("draw", toolkit)]
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert result["attachments"] == ["image 4x3 png"]
    [tool_result] = scripted.requests[1].body["messages"][-1]["content"]
    assert tool_result["content"] == [
        {"type": "text", "text": "a red dot\n[image: image/png]"},
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(png_bytes(4, 3)).decode(),
            },
        },
    ]


@shared_loop
async def test_an_embedded_pdf_resource_is_attached(kit):
    toolkit, _ = kit
    result = await toolkit.execute("calc_report", {})
    assert result.output == "the report\n[resource: file:///reports/q3.pdf (application/pdf)]"
    assert [(a.name, a.data) for a in result.attachments] == [("q3.pdf", pdf_bytes("q3"))]


@shared_loop
async def test_env_values_are_expanded_for_a_stdio_server(kit):
    toolkit, _ = kit
    assert (await toolkit.execute("calc_secret_env", {})).output == "token ok"


@shared_loop
async def test_bad_arguments_come_back_as_an_error_result(kit):
    toolkit, _ = kit
    result = await toolkit.execute("calc_add", {"a": "many"})
    assert result.is_error


def test_content_joins_text_and_summarizes_the_rest():
    result = {
        "content": [
            {"type": "text", "text": "one"},
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
            {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "bee"}},
            {
                "type": "resource",
                "resource": {"uri": "file:///c.bin", "blob": "AAAA", "mimeType": "application/zip"},
            },
            {"type": "hologram"},
        ]
    }
    assert convert_content(result) == (
        "one\n[audio: audio/wav, not attached: cannot attach 'audio': not an image (png, jpeg, "
        "gif, webp), PDF, audio (wav, mp3, ogg, flac) or UTF-8 text file]\n"
        "[resource link: file:///a.txt (a); read_resource reads it]\n"
        "[resource: file:///b.txt]\nbee\n[resource: file:///c.bin (application/zip)]\n"
        "[hologram content]",
        [],
    )
    assert convert_content({"content": [], "structuredContent": {"n": 1}}) == ('{"n": 1}', [])


def test_content_that_is_not_what_it_claims_is_not_attached():
    text = base64.b64encode(b"just words").decode()
    result = {
        "content": [
            {"type": "image", "data": text, "mimeType": "image/png"},
            {"type": "image", "data": "%%%", "mimeType": "image/png"},
        ]
    }
    assert convert_content(result) == (
        "[image: image/png, not attached: the data is not an image, audio or PDF]\n"
        "[image: image/png, not attached: the data is not base64]",
        [],
    )


# ----------------------------------------------------------------------------- isolation


async def test_a_broken_server_is_isolated_and_the_others_work(http_server, token_env, tmp_path):
    """One exits at once, one never answers initialize (and ignores stdin closing), one has
    no command, one needs an unset variable: each says why, the good server works, and the
    hung process is ended as it times out."""
    hung_pid = tmp_path / "hung.pid"
    hang = (
        "import os, time; open(os.environ['PID_FILE'], 'w').write(str(os.getpid()));"
        " time.sleep(120)"
    )
    config = {
        "servers": {
            "remote": {
                "type": "http",
                "url": http_server,
                "headers": {"Authorization": "Bearer ${TOOLNEXUS_TEST_MCP_TOKEN}"},
            },
            "crashes": {
                "command": sys.executable,
                "args": ["-c", "raise SystemExit('bad config')"],
            },
            "hangs": {
                "command": sys.executable,
                "args": ["-c", hang],
                "env": {"PID_FILE": str(hung_pid)},
            },
            "missing": {"command": "toolnexus-no-such-server"},
            "unset": {
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"X-Key": "${TOOLNEXUS_TEST_UNSET_VARIABLE}"},
            },
        }
    }
    toolkit = await create_toolkit()
    try:
        statuses = {s.name: s for s in await add_mcp_servers(toolkit, config, timeout=1.5)}
        assert str(statuses["remote"].state) == "ok"
        assert str(statuses["crashes"].state) == (
            "failed: it exited with status 1 while waiting for the initialize answer "
            "(stderr: bad config)"
        )  # the last line of its stderr
        assert str(statuses["hangs"].state) == (
            "failed: timed out after 1.5 s waiting for the initialize answer"
        )
        assert (
            str(statuses["missing"].state)
            == "failed: command not found: 'toolnexus-no-such-server'"
        )
        assert str(statuses["unset"].state) == (
            "failed: headers.X-Key uses ${TOOLNEXUS_TEST_UNSET_VARIABLE}, which is not set"
        )
        assert all(s.tools == [] for s in statuses.values() if not s.ok)
        assert [t.name for t in toolkit.tools()] == ["remote_whoami", "remote_shout"]
        assert (await toolkit.execute("remote_shout", {"text": "still here"})).output == (
            "STILL HERE"
        )
        assert hung_pid.exists()  # it did start
        assert not running_with(str(hung_pid))  # and was ended when it timed out
    finally:
        await toolkit.close()


async def test_a_wrong_token_fails_with_the_http_status_and_no_secret(http_server, monkeypatch):
    secret = "wrong-secret-6c1d0b"
    monkeypatch.setenv("TOOLNEXUS_TEST_BAD_TOKEN", secret)
    config = {
        "mcpServers": {
            "remote": {
                "url": http_server + "?key=${TOOLNEXUS_TEST_BAD_TOKEN}",
                "headers": {
                    "Authorization": "Bearer ${TOOLNEXUS_TEST_BAD_TOKEN}",
                    "X-Literal": "literal-secret-99",
                },
            }
        }
    }
    toolkit = await create_toolkit()
    try:
        [status] = await add_mcp_servers(toolkit, config, timeout=START)
    finally:
        await toolkit.close()
    assert str(status.state).startswith("failed: HTTP 401 Unauthorized from http://127.0.0.1:")
    assert secret not in repr(status) and "literal-secret-99" not in repr(status)
    assert "key=***" in str(status.state)


async def test_tool_names_are_sanitized_and_unique(http_server, token_env):
    headers = {"Authorization": "Bearer ${TOOLNEXUS_TEST_MCP_TOKEN}"}
    long_name = "a.very long server name " * 4
    config = {
        "mcpServers": {
            "my server!": {"url": http_server, "headers": headers},
            long_name: {"url": http_server, "headers": headers},
            "my-server?": {"url": http_server, "headers": headers},
        }
    }
    toolkit = await create_toolkit()
    try:
        statuses = await add_mcp_servers(toolkit, config, timeout=START)
    finally:
        await toolkit.close()
    assert statuses[0].tools == ["my_server__whoami", "my_server__shout"]
    assert all(len(n) == 64 for n in statuses[1].tools)
    assert statuses[1].tools[0] != statuses[1].tools[1]  # truncated alike, told apart
    assert statuses[2].tools == ["my-server__whoami", "my-server__shout"]
    assert all(re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) for s in statuses for n in s.tools)


async def test_opening_servers_returns_their_tools_statuses_and_close(tmp_path):
    """open_mcp_servers needs no toolkit: the tools come back (named clear of `taken`),
    callable as they are, and `close` ends the server."""
    pid_file = tmp_path / "pid"
    tools, statuses, close = await open_mcp_servers(
        {"mcpServers": {"calc": calc(pid_file)}}, timeout=START, taken=["calc_add"]
    )
    try:
        by_name = {tool.name: tool for tool in tools}
        # read_resource is offered too: the server lists a resource
        assert statuses == [
            ServerStatus(
                "calc",
                "stdio",
                McpServerState("ok"),
                [name for name in by_name if name != "read_resource"],
            )
        ]
        assert by_name["read_resource"].source == "mcp:resources"
        assert "calc_add" not in by_name and by_name["calc_add_2"].source == "mcp:calc"
        added = await by_name["calc_add_2"].call({"a": 2, "b": 3}, ToolContext())
        assert added.output == "5" and not added.is_error
        pid = await eventually(lambda: pid_in(pid_file), "a PID in pid_file")
        assert alive(pid)
    finally:
        await close()
    await eventually(lambda: not alive(pid), "the server to end after close()")


# ----------------------------------------------------------------------------- lifetimes


async def test_call_timeouts_and_close_mid_call(tmp_path):
    """Two servers of one toolkit: on `a` a call cut by its timeout; on `b` a call still
    running when close() ends the server (each ends as an error result)."""
    pid_a, pid_b = tmp_path / "a.pid", tmp_path / "b.pid"
    toolkit = await create_toolkit()
    try:
        called = tmp_path / "called"
        never = {
            "MCP_STEPS_GATE": str(tmp_path / "never"),  # its steps never end
            "MCP_CALLED_FILE": str(called),
        }
        status_a, status_b = await add_mcp_servers(
            toolkit, {"mcpServers": {"a": calc(pid_a), "b": calc(pid_b, never)}}, timeout=START
        )
        assert status_a.ok and status_b.ok
        toolkit.get("a_slow").timeout = 0.3
        cut = await toolkit.execute("a_slow", {"seconds": 30})
        assert cut.is_error and "timed out after 0.3 s" in cut.output
        assert (await toolkit.execute("a_add", {"a": 20, "b": 22})).output == "42"

        pid = await eventually(lambda: pid_in(pid_b), "a PID in pid_b")
        assert alive(pid)
        call = asyncio.create_task(toolkit.execute("b_steps", {"count": 1}))
        await eventually(called.exists, "the call to run")
    finally:
        await toolkit.close()
    await eventually(lambda: not alive(pid), "the server to end after close()")
    in_flight = await asyncio.wait_for(call, 10)
    assert in_flight.output == "error: MCP server 'b': it was stopped during the call"
    assert status_b.state.state == "stopped"  # closing is not a failure
    after = await toolkit.execute("b_add", {"a": 1, "b": 1})
    assert after.output == "error: b_add is not available now: its MCP server b is stopped"


async def test_a_stdio_server_that_dies_is_restarted_and_its_tools_come_back(tmp_path):
    """Killed during a call: the call says why, its tools are withdrawn while it is down (a
    call to one says why, without an approval question or a request to any server), and
    once it runs again they are back, under the same names."""
    pid_file, gate = tmp_path / "pid", tmp_path / "gate"
    gate.touch()
    held = tmp_path / "never"  # the call's last step waits for it: it is killed first
    env = {"MCP_START_GATE": str(gate), "MCP_STEPS_GATE": str(held)}
    config = {"mcpServers": {"calc": calc(pid_file, env=env)}}
    toolkit = await create_toolkit()
    try:
        [status] = await add_mcp_servers(toolkit, config, timeout=START)
        first = pid_in(pid_file)
        reported = asyncio.Event()
        steps = ToolContext(on_progress=lambda _: reported.set())
        call = asyncio.create_task(toolkit.get("calc_steps").call({"count": 1}, steps))
        await reported.wait()
        gate.unlink()  # it starts again only when the test says
        pid_file.unlink()
        os.kill(first, signal.SIGKILL)

        died = await call
        assert died.output == (
            "error: MCP server 'calc': it was killed by SIGKILL; it is restarted"
        )
        await eventually(lambda: status.state.state == "restarting", "the restart")
        assert str(status.state) == "restarting: it was killed by SIGKILL"
        assert not any(tool.source == "mcp:calc" for tool in toolkit.tools())
        assert toolkit.get("calc_add") is None  # so an approval rule is not asked about it
        missing = await toolkit.execute("calc_add", {"a": 1, "b": 2})
        assert missing.output == (
            "error: calc_add is not available now: its MCP server "
            "calc is not running (restarting: it was killed by SIGKILL)"
        )

        second = await eventually(lambda: pid_in(pid_file), "the server to start again")
        gate.touch()
        await eventually(lambda: status.ok, "the server to run again")
        assert second != first
        assert (await toolkit.execute("calc_add", {"a": 1, "b": 2})).output == "3"
        assert status.tools[:2] == ["calc_add", "calc_echo"]
    finally:
        await toolkit.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_no_server_survives_a_killed_chat(tmp_path):
    pid_file = tmp_path / "calc.pid"
    driver = subprocess.Popen(
        [sys.executable, str(SERVERS / "driver.py"), str(pid_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = read_line(driver, 45)
        assert line.startswith("pid ") and line.rstrip().endswith("add 3"), line
        pid = int(line.split()[1])
        assert alive(pid)
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait()
    wait_until(lambda: not alive(pid), "the server to end after the chat was SIGKILLed")


# ----------------------------------------------------------------------------- config


async def test_config_from_a_file_and_a_disabled_server(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcp": {
                    "a": {"command": "x", "disabled": True},
                    "b": {"url": "https://example.invalid/mcp", "enabled": False},
                }
            }
        )
    )
    toolkit = await create_toolkit()
    assert await add_mcp_servers(toolkit, path) == [
        ServerStatus("a", "stdio", McpServerState("disabled")),
        ServerStatus("b", "http", McpServerState("disabled")),
    ]
    assert await add_mcp_servers(toolkit, str(path)) == [
        ServerStatus("a", "stdio", McpServerState("disabled")),
        ServerStatus("b", "http", McpServerState("disabled")),
    ]
    assert len(toolkit) == 0


async def test_unusable_configs_raise(tmp_path):
    toolkit = await create_toolkit()
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {,}}')
    with pytest.raises(ToolnexusError, match=r"bad\.json:1:\d+: the MCP config is not valid JSON"):
        await add_mcp_servers(toolkit, bad)
    with pytest.raises(ToolnexusError, match="cannot read the MCP config"):
        await add_mcp_servers(toolkit, tmp_path / "missing.json")
    with pytest.raises(ToolnexusError, match="'mcpServers', 'servers' or 'mcp'"):
        await add_mcp_servers(toolkit, {"tools": {}})
    assert await add_mcp_servers(toolkit, {"mcpServers": {}}) == []


async def test_bad_entries_are_failed_statuses():
    toolkit = await create_toolkit()
    statuses = await add_mcp_servers(
        toolkit,
        {
            "mcpServers": {
                "empty": {},
                "ws": {"type": "websocket", "url": "ws://127.0.0.1:9/ws"},
                "scalar": 3,
                "ftp": {"url": "ftp://example.invalid"},
            }
        },
    )
    assert [str(s.state) for s in statuses] == [
        "failed: a local server needs a 'command' (or a 'url' for a remote one)",
        "failed: unknown transport type 'websocket' (use 'stdio', 'http' or 'sse')",
        "failed: the server entry must be an object",
        "failed: the url must start with http:// or https://",
    ]


def test_without_the_mcp_package_the_error_says_how_to_install_it():
    code = (
        "import asyncio, sys\n"
        "sys.modules['mcp'] = None\n"
        "import toolnexus\n"
        "from toolnexus import create_toolkit\n"
        "from toolnexus.mcp import add_mcp_servers\n"
        "async def main():\n"
        "    try:\n"
        "        await add_mcp_servers(await create_toolkit(), {'mcpServers': {}})\n"
        "    except toolnexus.ToolnexusError as exc:\n"
        "        print(exc)\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("MCP servers need the mcp package: pip install 'toolnexus[mcp]'")


def test_importing_toolnexus_does_not_import_mcp():
    code = "import sys, toolnexus, toolnexus.mcp; print('mcp' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=Path(__file__).parents[2],
        timeout=60,
    )
    assert out.stdout.strip() == "False", out.stderr
