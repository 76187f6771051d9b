"""Remote MCP servers: OAuth and the legacy HTTP+SSE transport, against real servers built
on the SDK (tests/support/mcp_servers/oauth_server.py is its own authorization server;
sse_server.py speaks only HTTP+SSE; each started once for the module), with the real
`toolnexus` command: in process, but for `mcp login`, which runs while the test plays the
browser.

`toolnexus mcp login` prints the authorization URL; the test fetches it as a browser would
(the authorization server consents at once and redirects to the loopback listener).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import socket
import stat
import subprocess

import httpx2
import pytest

from tests.support import chat_session, cli_helpers, prefork
from tests.support.chat_session import numbered_answers
from tests.support.mcp_helpers import START, mcp_file, start_server, stop, tool_messages
from tests.support.stub_provider import openai_stream
from toolnexus import create_toolkit

cli, stub = cli_helpers.cli, cli_helpers.stub
open_chat = chat_session.open_chat

pytest.importorskip("mcp")
pytestmark = pytest.mark.timeout(600)  # each test runs a server and several toolnexus processes

LOGIN_HINT = "it needs a login: run 'toolnexus mcp login remote'"
WAIT = 120.0  # seconds a toolnexus process may take (the SDK alone imports for ~10 s under load)


def serve(script: str, **env: str):
    proc, port = start_server(script, **env)
    try:
        yield port
    finally:
        stop(proc)


@pytest.fixture(scope="module")
def shared_oauth_port():
    """One OAuth server for the module: starting one (the SDK's import) is the slow part."""
    yield from serve("oauth_server.py")


@pytest.fixture
def oauth_port(shared_oauth_port):
    """The OAuth server, as new: no client, token or count from an earlier test."""
    admin(shared_oauth_port, "reset")
    return shared_oauth_port


@pytest.fixture(scope="module")
def sse_port():
    yield from serve("sse_server.py")


@pytest.fixture
def remote(cli, oauth_port, tmp_path) -> str:
    """The mcp.json naming the OAuth server "remote"."""
    return str(
        mcp_file(tmp_path / "mcp.json", {"remote": {"url": f"http://127.0.0.1:{oauth_port}/mcp"}})
    )


def stats(port: int) -> dict[str, int]:
    return httpx2.get(f"http://127.0.0.1:{port}/admin/stats").json()


def admin(port: int, action: str) -> None:
    httpx2.post(f"http://127.0.0.1:{port}/admin/{action}").raise_for_status()


def start_login(cli, config: str) -> tuple[subprocess.Popen, str]:
    """`toolnexus mcp login remote` started, and the authorization URL it printed."""
    proc = subprocess.Popen(
        prefork.command("toolnexus", "mcp", "login", "remote", "--no-browser", "--mcp", config),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        bufsize=0,
        env=cli.merged_env(),
        cwd=cli.home,
    )
    shown = b""
    with selectors.DefaultSelector() as sel:  # unbuffered: select sees every byte
        sel.register(proc.stdout, selectors.EVENT_READ)
        while b"/authorize?" not in shown or not shown.endswith(b"\n"):
            assert sel.select(WAIT), f"no authorization URL within {WAIT} s: {shown!r}"
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, f"it ended without an authorization URL: {shown!r}"
            shown += chunk
    url = next(word for word in shown.decode().split() if "/authorize?" in word)
    return proc, url


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    """What it printed after the URL, once it ended."""
    out, err = proc.communicate(timeout=WAIT)
    return out.decode(), err.decode()


def login(cli, config: str) -> tuple[str, str]:
    """`toolnexus mcp login remote`, its URL opened as a browser would: its stdout and
    stderr once it ended (well)."""
    proc, url = start_login(cli, config)
    try:
        page = httpx2.get(url, follow_redirects=True, timeout=WAIT)  # the browser
        assert page.status_code == 200 and "toolnexus is authorized" in page.text
        out, err = finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, (out, err)
    return url + out, err


def stored(cli) -> dict:
    return json.loads((cli.config_dir / "mcp_tokens.json").read_text())["remote"]


def shout_once(stub) -> None:
    """The model calls remote_shout once, then answers with what it got."""

    def handler(rec):
        if tool_messages(rec.json):
            return openai_stream(f"got {tool_messages(rec.json)[0]['content']}")
        return openai_stream(tool_calls=[("remote_shout", {"text": "hello"})])

    stub.handler = handler


def test_login_keeps_the_tokens_0600_unprinted_and_ask_calls_the_server_with_them(
    cli, stub, remote, oauth_port
):
    out, err = login(cli, remote)
    assert "logged in to remote: 1 tool (shout)" in out
    path = cli.config_dir / "mcp_tokens.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    tokens = stored(cli)["tokens"]
    for secret in (tokens["access_token"], tokens["refresh_token"]):
        assert secret not in out + err
    assert stats(oauth_port)["registrations"] == stats(oauth_port)["authorizations"] == 1

    shout_once(stub)
    result = cli.call("ask", "--mcp", remote, "--yes", "shout hello")
    assert result.code == 0 and result.stdout == "got HELLO\n", result
    assert tokens["access_token"] not in result.stdout + result.stderr


def test_a_second_login_reuses_the_registration_and_replaces_the_tokens(cli, remote, oauth_port):
    login(cli, remote)
    first = stored(cli)
    login(cli, remote)
    second = stored(cli)
    assert second["client"]["client_id"] == first["client"]["client_id"]
    assert second["tokens"]["access_token"] != first["tokens"]["access_token"]
    assert stats(oauth_port)["registrations"] == 1
    assert stats(oauth_port)["authorizations"] == 2


def test_an_expired_access_token_is_refreshed_and_the_new_one_kept(cli, remote, oauth_port):
    login(cli, remote)
    admin(oauth_port, "expire")  # the server forgets every access token...
    path = cli.config_dir / "mcp_tokens.json"
    data = json.loads(path.read_text())
    data["remote"]["expires_at"] = 1  # ...which expired long ago, as the file says
    path.write_text(json.dumps(data))
    old = data["remote"]["tokens"]

    result = cli.call("mcp", "list", "--mcp", remote)
    assert result.code == 0 and "remote  http  ok" in result.stdout, result
    assert stats(oauth_port)["refreshes"] == 1
    assert stats(oauth_port)["authorizations"] == 1  # no browser was needed
    new = stored(cli)["tokens"]
    assert new["access_token"] != old["access_token"]
    assert new["refresh_token"] != old["refresh_token"]  # the server rotates them
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_refused_access_token_not_yet_expired_is_refreshed_without_a_browser(
    cli, remote, oauth_port
):
    """Repro: log in; the server forgets its access tokens (it restarted, or revoked them)
    before they expire; `toolnexus mcp list` still connects: the refresh token is tried
    first, and no new browser login is asked for."""
    login(cli, remote)
    old = stored(cli)["tokens"]
    admin(oauth_port, "expire")  # the file still says the token is good for an hour
    result = cli.call("mcp", "list", "--mcp", remote)
    assert result.code == 0 and "remote  http  ok" in result.stdout, result
    assert stats(oauth_port)["refreshes"] == 1
    assert stats(oauth_port)["authorizations"] == 1
    assert stored(cli)["tokens"]["access_token"] != old["access_token"]


def test_a_login_whose_client_the_server_forgot_registers_again(cli, remote, oauth_port):
    """Repro: log in; the authorization server forgets every client registration (it was
    reset); `toolnexus mcp login remote` again registers anew and logs in, rather than
    sending the browser to an error page and waiting."""
    login(cli, remote)
    forgotten = stored(cli)["client"]["client_id"]
    admin(oauth_port, "reset")
    out, _ = login(cli, remote)
    assert "logged in to remote: 1 tool (shout)" in out
    assert stored(cli)["client"]["client_id"] != forgotten
    assert stats(oauth_port)["registrations"] == stats(oauth_port)["authorizations"] == 1


def test_a_login_nobody_finishes_ends_after_its_wait_in_one_line(cli, remote, oauth_port):
    """Repro: `toolnexus mcp login remote --wait 1` and the URL is never opened: after a
    second it ends with one line saying so, and nothing is kept."""
    result = cli.run("mcp", "login", "remote", "--no-browser", "--wait", "1", "--mcp", remote)
    assert result.code == 2, result
    said = [line for line in result.stderr.splitlines() if "no authorization" in line]
    assert said == ["error: no authorization within 1 s: run the login again and open the URL"], (
        result.stderr
    )
    assert "Traceback" not in result.stderr
    assert stats(oauth_port).get("authorizations", 0) == 0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_client_registered_beforehand_logs_in_with_its_scopes_port_and_secret_command(
    cli, oauth_port, tmp_path
):
    """Repro: a client registered with the authorization server by hand; mcp.json gives
    `"oauth": {"client_id": ..., "client_secret_cmd": "cat secret", "scopes": ["read"],
    "callback_port": N}`; `toolnexus mcp login remote` uses that client (no registration),
    asks for those scopes, listens on that port, and the secret is neither kept nor
    printed; `mcp list` then connects with the tokens."""
    port = free_port()
    client = httpx2.post(
        f"http://127.0.0.1:{oauth_port}/register",
        json={
            "client_name": "by hand",
            "redirect_uris": [f"http://127.0.0.1:{port}/callback"],
            "token_endpoint_auth_method": "client_secret_post",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "scope": "read write",
        },
    ).json()
    secret_file = tmp_path / "secret"
    secret_file.write_text(client["client_secret"] + "\n")
    oauth = {
        "client_id": client["client_id"],
        "client_secret_cmd": f"cat {secret_file}",
        "scopes": ["read"],
        "callback_port": port,
    }
    config = str(
        mcp_file(
            tmp_path / "mcp.json",
            {"remote": {"url": f"http://127.0.0.1:{oauth_port}/mcp", "oauth": oauth}},
        )
    )
    out, err = login(cli, config)
    assert f"redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcallback" in out
    assert "logged in to remote: 1 tool (shout)" in out
    assert stats(oauth_port)["registrations"] == 1  # the test's own, by hand
    assert stored(cli)["tokens"]["scope"] == "read"
    kept = (cli.config_dir / "mcp_tokens.json").read_text()
    assert client["client_secret"] not in kept + out + err
    result = cli.call("mcp", "list", "--mcp", config)
    assert result.code == 0 and "remote  http  ok" in result.stdout, result


def test_a_bad_oauth_entry_is_the_servers_one_line(cli, tmp_path):
    """Repro: `"oauth": {"callback_port": "x"}` in a server's entry: `toolnexus mcp list`
    says what is wrong with it, on its line."""
    config = mcp_file(
        tmp_path / "mcp.json",
        {"remote": {"url": "https://mcp.example.com/mcp", "oauth": {"callback_port": "x"}}},
    )
    result = cli.call("mcp", "list", "--mcp", str(config))
    assert "oauth.callback_port must be a port from 1 to 65535, not 'x'" in result.stdout, result
    assert "Traceback" not in result.stdout + result.stderr


def one_line_about_login(stderr: str) -> None:
    lines = [line for line in stderr.splitlines() if "remote" in line]
    assert len(lines) == 1 and LOGIN_HINT in lines[0], stderr
    assert "Traceback" not in stderr


def test_a_server_without_a_login_is_one_line_and_the_answer_comes_without_it(
    cli, stub, remote, oauth_port
):
    stub.handler = lambda rec: openai_stream("answered anyway")
    result = cli.call("ask", "--mcp", remote, "hi")
    assert result.code == 0 and result.stdout == "answered anyway\n", result
    one_line_about_login(result.stderr)
    assert "remote_shout" not in json.dumps(stub.requests[-1].json)
    assert stats(oauth_port).get("bearers", 0) == 0
    assert not (cli.config_dir / "mcp_tokens.json").exists()  # nothing was registered


def test_a_refused_login_is_one_line_and_no_browser_flow_starts_by_itself(
    cli, stub, remote, oauth_port
):
    login(cli, remote)
    admin(oauth_port, "revoke")  # access and refresh tokens alike
    data = json.loads((cli.config_dir / "mcp_tokens.json").read_text())
    data["remote"]["expires_at"] = 1
    (cli.config_dir / "mcp_tokens.json").write_text(json.dumps(data))

    stub.handler = lambda rec: openai_stream("answered anyway")
    result = cli.call("ask", "--mcp", remote, "hi")
    assert result.code == 0 and result.stdout == "answered anyway\n", result
    one_line_about_login(result.stderr)
    assert stats(oauth_port)["registrations"] == 1
    assert stats(oauth_port)["authorizations"] == 1


def test_logout_forgets_the_tokens(cli, remote):
    login(cli, remote)
    result = cli.call("mcp", "logout", "remote")
    assert result.code == 0 and result.stdout == "forgot the login of remote\n", result
    assert "remote" not in json.loads((cli.config_dir / "mcp_tokens.json").read_text())
    listed = cli.call("mcp", "list", "--mcp", remote)
    assert listed.code == 1 and LOGIN_HINT in listed.stdout, listed
    again = cli.call("mcp", "logout", "remote")
    assert again.code == 1 and again.stderr == "remote had no login\n", again


def test_a_denied_authorization_is_one_line(cli, tmp_path):
    proc, port = start_server("oauth_server.py", OAUTH_MCP_DENY="1")
    try:
        config = str(
            mcp_file(tmp_path / "mcp.json", {"remote": {"url": f"http://127.0.0.1:{port}/mcp"}})
        )
        login_proc, url = start_login(cli, config)
        page = httpx2.get(url, follow_redirects=True, timeout=WAIT)
        assert "The authorization was refused." in page.text
        _, err = finish(login_proc)
    finally:
        stop(proc)
    assert login_proc.returncode == 2
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith("the authorization server refused: the tester said no")
    ), err
    assert "Traceback" not in err


def test_login_refuses_a_local_server_and_an_unknown_name(cli, tmp_path):
    config = str(mcp_file(tmp_path / "mcp.json", {"local": {"command": "true"}}))
    local = cli.call("mcp", "login", "local", "--no-browser", "--mcp", config)
    assert local.code == 2 and "local is a local (stdio) server: it needs no login" in (
        local.stderr
    ), local
    unknown = cli.call("mcp", "login", "nope", "--no-browser", "--mcp", config)
    assert unknown.code == 2 and "no MCP server named 'nope' (there are: local)" in (
        unknown.stderr
    ), unknown


async def test_a_legacy_sse_server_is_found_from_its_url_and_its_tools_run(sse_port):
    url = f"http://127.0.0.1:{sse_port}/sse"
    toolkit = await create_toolkit(
        mcp_config={
            "mcpServers": {
                "old": {"url": url},  # streamable HTTP first: refused (405), so HTTP+SSE
                "said": {"type": "sse", "url": url},
            }
        },
        mcp_timeout=START,
    )
    try:
        await toolkit.started()
        assert [tool.name for tool in toolkit.tools()] == ["old_reverse", "said_reverse"]
        for name in ("old_reverse", "said_reverse"):
            result = await toolkit.execute(name, {"text": "legacy"})
            assert result.output == "ycagel" and not result.is_error
    finally:
        await toolkit.close()


def test_ask_calls_a_tool_of_a_legacy_sse_server(cli, stub, sse_port, tmp_path):
    config = str(
        mcp_file(tmp_path / "mcp.json", {"old": {"url": f"http://127.0.0.1:{sse_port}/sse"}})
    )

    def handler(rec):
        if tool_messages(rec.json):
            return openai_stream(f"got {tool_messages(rec.json)[0]['content']}")
        return openai_stream(tool_calls=[("old_reverse", {"text": "abc"})])

    stub.handler = handler
    result = cli.call("ask", "--mcp", config, "--yes", "reverse abc")
    assert result.code == 0 and result.stdout == "got cba\n", result
    listed = cli.call("mcp", "list", "--mcp", config)
    assert listed.code == 0 and "old  sse  ok" in listed.stdout, listed


def test_the_chat_says_that_a_server_needs_a_login_and_goes_on(open_chat, stub, remote):
    numbered_answers(stub)
    chat = open_chat("--mcp", remote)
    chat.wait_text("0 of 1 MCP servers ready · remote needs 'toolnexus mcp login remote'")
    chat.say("hello")
    chat.wait_text("answer 1.")
    chat.say("/mcp remote")
    chat.wait_text(LOGIN_HINT)
    assert "Traceback" not in chat.term.text()


def test_a_login_from_inside_the_chat_brings_the_server_up(open_chat, stub, remote, oauth_port):
    """Repro: `toolnexus chat --mcp mcp.json` with a server that needs a login; type
    `/mcp login remote`, open the URL it shows; the server starts with the new tokens and
    its tools are offered, without leaving the chat."""
    numbered_answers(stub)
    chat = open_chat("--mcp", remote)
    chat.wait_text("0 of 1 MCP servers ready · remote needs 'toolnexus mcp login remote'")
    chat.send_line("/mcp login remote")
    chat.wait(lambda: "Ctrl-C gives up" in chat.term.text(), "the authorization URL")
    url = re.search(r"http://\S+/authorize\?\S+", chat.term.raw_text()).group(0)
    page = httpx2.get(url, follow_redirects=True, timeout=WAIT)  # the browser
    assert page.status_code == 200 and "toolnexus is authorized" in page.text
    chat.wait_text("logged in to remote: it is starting again")
    chat.wait_prompt()
    chat.wait_text("1 of 1 MCP servers ready")
    chat.say("hello")
    chat.wait_text("answer 1.")
    assert "remote_shout" in [t["function"]["name"] for t in stub.requests[-1].json["tools"]]
    assert "Traceback" not in chat.term.text()
