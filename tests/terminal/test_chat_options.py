"""`chat` takes every endpoint, model and tool option `ask` takes (they are defined once),
and the ones it takes work: `chat --base-url URL --style anthropic` talks Messages."""

from __future__ import annotations

import pytest
import typer

from tests.support import cli_helpers
from tests.support.chat_session import CTRL_D
from tests.support.stub_provider import (
    StubProvider,
    anthropic_stream,
    openai_stream,
    responses_stream,
)
from toolnexus_cli.app import app

stub = cli_helpers.stub  # the one that answers by default, not conftest.py's

ASK_ONLY = {
    "--json",
    "--events",
    "--verbose",
    "-v",
    "words",  # PROMPT: what to ask
    "--attach",
    "-a",
    "--schema",
    "--schema-multi",
}  # the chat has /attach
CHAT_ONLY: set[str] = set()


def options_of(name: str) -> set[str]:
    params = typer.main.get_command(app).commands[name].params  # type: ignore[attr-defined]
    return {flag for p in params for flag in (p.opts + p.secondary_opts or [p.name])}


def test_chat_and_ask_take_the_same_options():
    ask, chat = options_of("ask"), options_of("chat")
    assert ask - ASK_ONLY == chat - CHAT_ONLY
    for flag in (
        "--base-url",
        "--style",
        "--provider",
        "--model",
        "--system",
        "--functions",
        "--skills",
        "--mcp",
        "--builtins",
        "--no-tools",
        "--root",
        "--yes",
        "--config",
        "--id",
        "--continue",
        "--option",
        "-o",
        "--reasoning",
    ):
        assert flag in chat, flag


@pytest.mark.parametrize("style", ["anthropic", "responses"])
def test_chat_talks_the_style_given_on_the_command_line(open_chat, style):
    reply = anthropic_stream if style == "anthropic" else responses_stream
    with StubProvider() as other:  # not the endpoint the environment names
        other.handler = lambda rec: reply(f"hello in {style}.")
        base_url = other.url if style == "anthropic" else other.base_url
        chat = open_chat("--base-url", base_url, "--style", style, "--system", "be brief")
        chat.say("hi there")
        chat.wait_text(f"hello in {style}.")
        chat.child.send(CTRL_D)
        assert chat.exit_code() == 0
    [request] = other.requests
    body = request.json
    assert body["stream"] is True and body["model"] == cli_helpers.STUB_MODEL
    if style == "anthropic":
        assert request.path == "/v1/messages"
        assert body["max_tokens"] > 0  # the system prompt is marked for the prompt cache
        assert body["system"] == [
            {"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}
        ]
        [message] = body["messages"]  # the system prompt is not a message in this style
        assert message["role"] == "user" and "hi there" in str(message["content"])
    else:
        assert request.path == "/v1/responses"
        assert "messages" not in body and body["instructions"] == "be brief"
        [item] = body["input"]
        assert item["type"] == "message" and item["role"] == "user"
        assert "hi there" in str(item["content"])


PROVIDERS = """
default_model = "team-model"

[providers.team]
base_url = "{url}"
style = "openai"
"""


def test_provider_picks_a_configured_provider_for_ask_and_chat(cli, stub, open_chat):
    """--provider beats the endpoint the environment names (TOOLNEXUS_BASE_URL)."""
    with StubProvider() as team:
        team.handler = lambda rec: openai_stream("from the team.")
        cli.write_config(PROVIDERS.format(url=team.base_url))
        done = cli.call("ask", "--provider", "team", "hi", env={"TOOLNEXUS_MODEL": None})
        assert done.code == 0, done
        assert done.stdout == "from the team.\n"
        chat = open_chat("--provider", "team", "-m", "other-model")
        chat.say("hello")
        chat.wait_text("from the team.")
        chat.child.send(CTRL_D)
        assert chat.exit_code() == 0
    assert [r.json["model"] for r in team.requests] == ["team-model", "other-model"]
    assert not stub.requests


def test_an_unknown_provider_is_one_line_naming_the_known_ones(cli):
    for command in ("ask", "chat"):
        done = cli.call(command, "--provider", "nope", *(["hi"] if command == "ask" else []))
        assert done.code == 2, done
        assert done.stderr.count("\n") == 1 and "unknown provider 'nope'" in done.stderr
        assert "openai" in done.stderr and "Traceback" not in done.stderr
