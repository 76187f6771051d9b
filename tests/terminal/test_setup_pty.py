"""The first run of `toolnexus chat` with nothing configured, and `toolnexus setup`, in a
real pseudo-terminal: local servers found by probing (the probe ports point at the stub),
a key typed without echo, the config written, the chat opened; Ctrl-C writes nothing."""

from __future__ import annotations

import json
import stat
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pytest

from tests.support.cli_helpers import CLI
from tests.support.mcp_helpers import STDIO_SERVER, server_command
from tests.support.net_servers import dead_port
from tests.support.pty_screen import PtySession, opener
from tests.support.stub_provider import (
    Recorded,
    Reply,
    StubProvider,
    anthropic_models,
    anthropic_stream,
    openai_models,
    openai_stream,
)

ROOT = Path(__file__).parents[2]
ROWS, COLS = 40, 200  # wide enough for the temporary paths on one line
PROMPT = "›"
SECRET = "sk-secret-4242"
TOOLS_QUESTION = "Let the model use tools in every chat? [Y/n]"


@pytest.fixture
def start() -> Iterator[Callable[..., PtySession]]:
    """start(cli, *args): `toolnexus ARGS` in a pty as `cli`'s user (closed after the test)."""
    yield from opener(lambda cli, *args: PtySession(cli, *args, rows=ROWS, cols=COLS, timeout=15))


def user(tmp_path: Path, *ports: int) -> CLI:
    return CLI(tmp_path, {"TOOLNEXUS_PROBE_PORTS": ",".join(map(str, ports))})


def answer(session: PtySession, question: str, text: str, count: int = 1) -> None:
    """Wait for the `count`-th `question` on the screen, then type `text` and Enter."""
    session.wait_text(question, count)
    session.send_line(text)


def wait_chat_prompt(session: PtySession) -> None:
    session.wait(
        lambda: (
            any(line.startswith(PROMPT) for line in session.term.lines())
            and session.term.cursor_line().strip() == PROMPT
        ),
        "the chat prompt",
    )


def unwrapped(session: PtySession) -> str:
    """The screen's text with its rows joined: a long line wraps onto the next row."""
    return session.term.text().replace("\n", "")


def exit_status(session: PtySession) -> int:
    session.child.expect(pexpect.EOF)
    session.child.close()
    return session.child.exitstatus


def test_first_chat_finds_a_local_server_writes_the_config_and_chats(tmp_path, stub, start):
    stub.models = openai_models(["m-one", "m-two"])
    stub.handler = lambda rec: openai_stream("Hello from the stub.")
    cli = user(tmp_path, dead_port(), stub.port)
    chat = start(cli, "chat")
    answer(chat, "Choose [1]:", "")  # Enter: the first, the server found
    screen = chat.term.text()
    assert "No model endpoint is configured yet" in screen
    assert f"1. a server on port {stub.port} at {stub.base_url} (2 models)" in screen
    assert "2. OpenAI (hosted, needs an API key)" in screen
    assert "another endpoint" in screen
    answer(chat, "Choose [1]:", "2", count=2)  # the second model
    assert "1. m-one" in chat.term.text() and "2. m-two" in chat.term.text()
    answer(chat, TOOLS_QUESTION, "")
    wait_chat_prompt(chat)
    name = f"local-{stub.port}"
    assert (
        f"added provider {name} ({stub.base_url}) with model m-two as the default; "
        f"new config written to {cli.config_file}"
    ) in unwrapped(chat)

    chat.send_line("hi")
    chat.wait_text("Hello from the stub.")
    sent = [r for r in stub.requests if r.method == "POST"]
    assert sent[0].path == "/v1/chat/completions" and sent[0].json["model"] == "m-two"
    wait_chat_prompt(chat)  # Ctrl-D is a key to the prompt: typed before it, it may be lost
    chat.child.sendeof()
    assert exit_status(chat) == 0

    text = cli.config_file.read_text(encoding="utf-8")
    assert "# Precedence: command-line flags" in text, "not the commented example"
    config = tomllib.loads(text)
    assert config["default_model"] == f"{name}:m-two"
    assert config["providers"][name] == {"base_url": stub.base_url, "style": "openai"}
    assert not cli.keys_file.exists()
    r = cli.call("ask", "again")  # the config works without the setup too
    assert r.code == 0 and r.stdout == "Hello from the stub.\n"


def anthropic_endpoint(stub: StubProvider) -> None:
    """Lists its models only for SECRET; answers chats."""

    def handler(request: Recorded) -> Reply:
        if request.method == "GET":
            if request.headers.get("x-api-key") != SECRET:
                return Reply.error(401, "invalid x-api-key", style="anthropic")
            return anthropic_models(["claude-stub-1", "claude-stub-2"])
        return anthropic_stream("Hi from the anthropic stub.")

    stub.handler = handler


def test_another_endpoint_with_a_key_typed_without_echo(tmp_path, stub, start):
    anthropic_endpoint(stub)
    cli = user(tmp_path, dead_port())
    chat = start(cli, "chat")
    answer(chat, "Choose [1]:", "4")
    assert "4. another endpoint" in chat.term.text()
    answer(chat, "Base URL", stub.url)
    answer(chat, "Choose [1]:", "2", count=2)  # style: anthropic
    answer(chat, f"A name for it [local-{stub.port}]:", "stubby")
    answer(chat, "API key for stubby", "sk-wrong-key")
    chat.wait_text("the endpoint refused that key")
    answer(chat, "API key for stubby", SECRET, count=2)
    chat.wait_text("answered: 2 models")
    answer(chat, "Choose [1]:", "", count=3)
    answer(chat, TOOLS_QUESTION, "")
    wait_chat_prompt(chat)
    assert f"stored the key for stubby in {cli.keys_file}" in chat.term.text()

    chat.send_line("hello")
    chat.wait_text("Hi from the anthropic stub.")
    post = [r for r in stub.requests if r.method == "POST"][0]
    assert post.path == "/v1/messages" and post.json["model"] == "claude-stub-1"
    assert post.headers["x-api-key"] == SECRET
    wait_chat_prompt(chat)  # Ctrl-D is a key to the prompt: typed before it, it may be lost
    chat.child.sendeof()
    assert exit_status(chat) == 0
    assert SECRET not in chat.term.text() and "sk-wrong-key" not in chat.term.text()

    assert json.loads(cli.keys_file.read_text()) == {"stubby": SECRET}
    assert stat.S_IMODE(cli.keys_file.stat().st_mode) == 0o600
    config = tomllib.loads(cli.config_file.read_text())
    assert config["default_model"] == "stubby:claude-stub-1"
    assert config["providers"]["stubby"] == {"base_url": stub.url, "style": "anthropic"}
    assert SECRET not in cli.config_file.read_text()


@pytest.mark.parametrize("step", ["the first question", "the key"])
def test_ctrl_c_at_any_step_writes_nothing(tmp_path, stub, start, step):
    anthropic_endpoint(stub)
    cli = user(tmp_path, dead_port())
    chat = start(cli, "chat")
    chat.wait_text("Choose [1]:")
    if step == "the key":
        chat.send_line("4")
        answer(chat, "Base URL", stub.url)
        answer(chat, "Choose [1]:", "2", count=2)
        answer(chat, "A name for it", "stubby")
        chat.wait_text("API key for stubby")
        chat.child.send("sk-half")
    chat.child.sendcontrol("c")
    chat.wait_text("setup cancelled: nothing was written")
    assert exit_status(chat) == 130
    assert not cli.config_file.exists() and not cli.keys_file.exists()
    assert not cli.config_dir.exists() or not any(cli.config_dir.iterdir())


def test_without_a_terminal_chat_keeps_its_one_line_error(bare_cli):
    r = bare_cli.call("chat")
    assert r.code == 2
    assert r.stderr.startswith("error: no model endpoint is configured")
    assert r.stderr.count("\n") == 1
    r = bare_cli.call("setup")
    assert r.code == 2 and "run it in a terminal" in r.stderr
    assert not bare_cli.config_file.exists()


def test_setup_adds_a_provider_to_an_existing_config(tmp_path, stub, start):
    stub.models = openai_models(["only-model"])
    cli = user(tmp_path, stub.port)
    own = (
        '# my own notes\ndefault_model = "other:x"\n\n'
        '[providers.other]\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    cli.write_config(own)
    setup = start(cli, "setup")
    answer(setup, "Choose [1]:", "")  # add a provider
    assert f"A config already exists at {cli.config_file}" in setup.term.text()
    assert "2. replace it" in setup.term.text()
    answer(setup, "Choose [1]:", "", count=2)  # the server found
    setup.wait_text("model: only-model")
    answer(setup, "the default model? [Y/n]", "")
    answer(setup, TOOLS_QUESTION, "n")  # the file had no say on it
    setup.wait_text("start chatting with: toolnexus chat")
    name = f"local-{stub.port}"
    assert (
        f"added provider {name} ({stub.base_url}) with model only-model as the default; "
        f"config written to {cli.config_file}"
    ) in unwrapped(setup)
    assert exit_status(setup) == 0
    text = cli.config_file.read_text()
    assert text.startswith("# my own notes\n")
    config = tomllib.loads(text)
    assert config["default_model"] == f"{name}:only-model"
    assert set(config["providers"]) == {"other", name}
    assert config["tools"] == {"chat": False}

    again = start(cli, "setup")  # the same server again: nothing to add twice
    answer(again, "Choose [1]:", "3")  # leave it as it is
    again.wait_text("kept the config as it is")
    assert exit_status(again) == 0
    assert cli.config_file.read_text() == text


def test_the_written_config_allows_nothing_the_user_did_not_choose(tmp_path, stub, start):
    """Newcomer's repro: `toolnexus setup`, pick the local server, then use an MCP server
    named "github": its tools ran without a question, as the written config carried the
    example's `"github_*" = "allow"` (and `"git status*"`, `"localhost:11434"` allow rules)
    as live rules nobody chose. They stay in the file, as commented examples."""
    stub.models = openai_models(["only-model"])
    cli = user(tmp_path, stub.port)
    setup = start(cli, "setup")
    answer(setup, "Choose [1]:", "")  # the server found
    answer(setup, TOOLS_QUESTION, "")
    setup.wait_text("start chatting with: toolnexus chat")
    assert exit_status(setup) == 0

    text = cli.config_file.read_text(encoding="utf-8")
    approval = tomllib.loads(text).get("approval", {})
    live = {
        **{k: v for k, v in approval.items() if isinstance(v, str)},
        **{
            k: v for table in approval.values() if isinstance(table, dict) for k, v in table.items()
        },
    }
    assert "allow" not in live.values(), live
    for example in (
        '# "github_*" = "allow"',
        '# "git status*" = "allow"',
        '# "localhost:11434" = "allow"',
    ):
        assert example in text

    mcp = tmp_path / "mcp.json"
    server = server_command(STDIO_SERVER)
    mcp.write_text(json.dumps({"mcpServers": {"github": server}}))
    rows = cli.call("tools", "--json", "--mcp", str(mcp)).json
    assert {row["name"]: row["approval"] for row in rows}["github_add"] == "ask", rows


def test_right_after_setup_model_names_complete_and_a_bare_name_is_found(tmp_path, stub, start):
    """Repro: `toolnexus chat` on a fresh machine; the setup finds llama.cpp serving m-one
    and m-two and takes m-one. In the chat, `/model m-t` and Tab completed nothing (the
    list the setup had fetched was not kept), and `/model m-two` said "no model endpoint
    is configured: set OPENAI_API_KEY ...". Now Tab completes it, and the chat goes on
    with m-two on that server."""
    stub.models = openai_models(["m-one", "m-two"])
    stub.handler = lambda rec: openai_stream(f"this is {rec.json['model']}")
    cli = user(tmp_path, stub.port)
    chat = start(cli, "chat")
    answer(chat, "Choose [1]:", "")  # the server found
    answer(chat, "Choose [1]:", "", count=2)  # its first model
    answer(chat, TOOLS_QUESTION, "")
    wait_chat_prompt(chat)
    chat.child.send("/model m-t\t")
    chat.wait(
        lambda: chat.term.cursor_line().rstrip().endswith("› /model m-two"),
        "the completed model name",
    )
    chat.child.send("\r")
    chat.wait_text(f"model: m-two ({stub.base_url})")
    assert "not a model the config" not in chat.term.text()
    chat.send_line("hi")
    chat.wait_text("this is m-two")
    assert [r.json["model"] for r in stub.requests] == ["m-two"]


def existing_config(cli: CLI, stub: StubProvider) -> str:
    """A config whose default is the stub's server, as a first setup writes it."""
    text = (
        f'default_model = "local-{stub.port}:only-model"\n\n'
        f'[providers.local-{stub.port}]\nbase_url = "{stub.base_url}"\nstyle = "openai"\n'
    )
    cli.write_config(text)
    return text


def test_a_yes_no_question_takes_one_key(tmp_path, stub, start):
    """Repro: `toolnexus setup` with a config already there, "add a provider to it", pick a
    server, then "Make ... the default model? [Y/n]": pressing n did nothing until Enter.
    Now the one key answers at once (Enter still takes the default, yes)."""
    stub.models = openai_models(["other-model"])
    cli = user(tmp_path, stub.port)
    cli.write_config('default_model = "openai:gpt-4.1-mini"\n')
    setup = start(cli, "setup")
    answer(setup, "Choose [1]:", "")  # add a provider
    answer(setup, "Choose [1]:", "", count=2)  # the server found
    setup.wait_text("the default model? [Y/n]")
    setup.child.send("n")  # no Enter
    setup.wait_text(TOOLS_QUESTION)
    setup.child.send("y")  # no Enter either
    setup.wait_text("start chatting with: toolnexus chat")
    assert "the default model? [Y/n] no" in setup.term.text()
    assert "(the default model stays as it was)" in setup.term.text()
    assert exit_status(setup) == 0
    config = tomllib.loads(cli.config_file.read_text())
    assert config["default_model"] == "openai:gpt-4.1-mini"
    assert config["providers"][f"local-{stub.port}"]["base_url"] == stub.base_url


def test_the_server_already_configured_is_not_offered_again(tmp_path, stub, start):
    """Repro: `toolnexus setup` on a machine whose config already has the llama.cpp server
    as its default, "add a provider to it": the same server was offered first again, as if
    new. Now it is named as configured already (and the default), and not offered."""
    stub.models = openai_models(["only-model"])
    cli = user(tmp_path, stub.port)
    text = existing_config(cli, stub)
    setup = start(cli, "setup")
    answer(setup, "Choose [1]:", "")  # add a provider
    setup.wait_text("Which endpoint?")
    screen = setup.term.text()
    assert (
        f"a server on port {stub.port} at {stub.base_url} is configured already "
        f"(local-{stub.port}, the default)"
    ) in screen
    assert "1. OpenAI (hosted, needs an API key)" in screen
    assert f"at {stub.base_url} (1 model)" not in screen
    setup.child.sendcontrol("c")
    setup.wait_text("setup cancelled: nothing was written")
    assert exit_status(setup) == 130
    assert cli.config_file.read_text() == text


def test_setup_with_a_config_path_says_how_to_chat_with_it(tmp_path, stub, start):
    """Repro: `toolnexus setup --config ~/work.toml` ended with "start chatting with:
    toolnexus chat", which opens the default config, not the one just written."""
    stub.models = openai_models(["only-model"])
    cli = user(tmp_path, stub.port)
    config = cli.root / "work.toml"
    setup = start(cli, "setup", "--config", str(config))
    answer(setup, "Choose [1]:", "")  # the server found
    setup.wait_text(TOOLS_QUESTION)
    setup.child.send("y")
    setup.wait_text("start chatting with:")
    assert exit_status(setup) == 0
    assert f"start chatting with: toolnexus chat --config {config}" in unwrapped(setup)
    assert tomllib.loads(config.read_text())["default_model"] == f"local-{stub.port}:only-model"


def test_setup_asks_once_whether_the_model_may_use_tools_and_the_chat_offers_them(
    tmp_path, stub, start
):
    """Repro: `toolnexus setup` on a fresh machine, the local server taken; then, in a
    project folder, "run the tests" got text back: the tools were off after setup and
    nothing said so. Now setup says what the tools do and asks once, for every folder,
    whether the model may use them, and writes the answer: the chat in a project folder
    offers them, in that workspace and in ask mode; in the home folder the file and command
    tools stay off, with the line that says why and how to pick a folder."""
    stub.models = openai_models(["only-model"])
    cli = user(tmp_path, stub.port)
    setup = start(cli, "setup")
    answer(setup, "Choose [1]:", "")  # the server found
    setup.wait_text(TOOLS_QUESTION)
    about = setup.term.text()
    assert "Reading runs at once; writes and commands follow the chat's mode" in about
    assert "commands run in the sandbox" in about
    setup.send_line("")  # yes
    setup.wait_text("start chatting with: toolnexus chat")
    assert exit_status(setup) == 0
    assert tomllib.loads(cli.config_file.read_text())["tools"] == {"chat": True, "mode": "ask"}

    at_home = start(cli, "chat")
    wait_chat_prompt(at_home)
    home = at_home.term.text()
    assert f"file and command tools are off: the workspace {cli.home} is your home folder" in home
    assert "PATH (or --root PATH) picks a project folder" in home  # /workspace PATH
    assert "tools: fetch_url (1 built-in)" in home and "mode:" not in home
    at_home.child.sendeof()
    assert exit_status(at_home) == 0

    project = cli.in_project()
    chat = start(cli, "chat")
    wait_chat_prompt(chat)
    banner = chat.term.text()
    assert "tools: read_file, list_dir, glob, grep, fetch_url, write_file, … (8 built-in)" in banner
    assert f"workspace: {project} (/workspace PATH moves the tools" in banner
    assert "mode: ask: every write and command asks first" in banner
    assert "tools are off" not in banner
