"""Custom slash commands in the chat, in a real pseudo-terminal against the stub endpoint: a
repository's Claude Code, Gemini CLI and toolnexus command files (tests/support/command_repo.py,
used unchanged) are listed in /help, complete with their argument hints, and send their
expanded prompt with their model and tools for that turn only; their inline shell asks as any
command does. Each step waits for the text it needs on the screen."""

from __future__ import annotations

import re

import pytest

from tests.support import chat_session, cli_helpers
from tests.support.cli_helpers import STUB_MODEL, user_text
from tests.support.command_repo import REVIEW_LINE, command_repo
from tests.support.stub_provider import openai_stream
from toolnexus.tools.sandbox import support

cli = cli_helpers.cli
open_chat = chat_session.open_chat
ANSWER = "Looked at it."
QUESTION = "[y]es / [n]o / [a]lways (this session):"
needs_sandbox = pytest.mark.skipif(support().abi == 0, reason=f"no Landlock: {support().why_not}")


@pytest.fixture
def repo(cli, stub):
    stub.handler = lambda request: openai_stream(ANSWER)
    return command_repo(cli.in_project())


def flat(text: str) -> str:
    """`text` without its spaces and line ends: a long line wraps however the width says."""
    return "".join(text.split())


def tool_names(request) -> list[str]:
    return sorted(tool["function"]["name"] for tool in request.json.get("tools", []))


def test_help_lists_them_and_says_which_a_built_in_shadows(repo, open_chat):
    """Repro: in a repository with .claude/commands, .gemini/commands and .toolnexus/commands,
    start `toolnexus chat`: a dim line says review.md and help.md are not used (the chat has
    its own /review and /help); `/help` lists the others with their hints and descriptions."""
    chat = open_chat()
    screen = flat(chat.term.text())
    for name in ("review", "help"):
        assert flat(f"{name}.md: not used in the chat, where /{name} is a built-in") in screen

    chat.say("/help")
    screen = flat(chat.term.text())
    assert flat("your commands (prompt files):") in screen
    assert flat("/review-pr [pr-number] Review a pull request") in screen
    assert flat("/x Explain a topic in two lines") in screen
    for name in ("/y", "/frontend:component", "/leak"):
        assert re.search(rf"^{re.escape(name)}\s", chat.term.text(), re.M)


def test_tab_completes_a_command_showing_its_argument_hint(repo, open_chat):
    """Repro: type `/rev` and Tab: the completion menu shows /review-pr with
    "[pr-number] · Review a pull request" beside it; type `/review-` and Tab: /review-pr
    is on the line."""
    chat = open_chat()
    chat.child.send("/rev\t")
    chat.wait_text("[pr-number] · Review a pull request")
    chat.child.send("\x15/review-\t")  # Ctrl-U: a fresh line
    chat.wait(lambda: "› /review-pr" in chat.term.cursor_line(), "the command completed")


def test_a_namespaced_command_sends_its_expanded_prompt(repo, stub, open_chat):
    """Repro: `.claude/commands/frontend/component.md` ("Write a component named $1 with
    props $2."); type `/frontend:component Button primary`: the model gets the prompt with
    both arguments in place."""
    chat = open_chat()
    chat.say("/frontend:component Button primary")
    chat.wait_text(ANSWER)

    assert user_text(stub.requests[0]) == ["Write a component named Button with props primary."]


@needs_sandbox
def test_a_command_runs_its_shell_after_a_yes_with_its_model_and_tools_for_one_turn(
    repo, stub, open_chat
):
    """Repro: `toolnexus chat --builtins`, type `/review-pr 123`: the question about
    `bash: git status --short` comes as for any command; y runs it in the sandbox and the
    model reviewer-model gets the prompt with the status and GUIDE.md, offered only
    read_file, grep and bash. The next message goes to the chat's model with every tool."""
    chat = open_chat("--builtins")
    chat.send_line("/review-pr 123")
    chat.wait_text("bash: git status --short")
    chat.wait_text(QUESTION)
    chat.child.send("y")
    chat.wait_prompt()
    chat.wait_text(ANSWER)
    assert "/review-pr: model reviewer-model for this turn" in chat.term.text()

    command_turn = stub.requests[0]
    [content] = user_text(command_turn)
    assert content[0]["text"].startswith(REVIEW_LINE + "\n\nStatus: ")
    assert "?? untracked.txt" in content[0]["text"]
    assert content[1]["text"].startswith("GUIDE.md\n```\nSmall commits, tests first.")
    assert command_turn.json["model"] == "reviewer-model"
    assert tool_names(command_turn) == ["bash", "grep", "read_file"]

    chat.say("thanks")
    chat.wait(lambda: len(stub.requests) == 2, "the next turn")
    assert stub.requests[1].json["model"] == STUB_MODEL
    assert {"bash", "edit_file", "read_file", "write_file"} <= set(tool_names(stub.requests[1]))


def test_a_no_to_its_shell_sends_nothing_and_says_so_in_one_line(repo, stub, open_chat):
    """Repro: `toolnexus chat --builtins`, type `/review-pr 123`, answer n to the question
    about `git status --short`: one line says the command was not sent, and nothing was."""
    chat = open_chat("--builtins")
    chat.send_line("/review-pr 123")
    chat.wait_text(QUESTION)
    chat.child.send("n")
    chat.wait_prompt()
    line = (
        "/review-pr not sent: its inline command `git status --short` was not run: "
        "denied by the user"
    )
    chat.wait(lambda: flat(line) in flat(chat.term.text()), "the refusal")
    assert stub.requests == []


def test_a_tool_its_allowed_tools_leave_out_is_not_asked_about_and_does_not_run(
    repo, stub, open_chat
):
    """Repro: `.toolnexus/commands/look.md` with `allowed-tools: Read`; `toolnexus chat
    --builtins`, type `/look notes`, and the model calls write_file anyway: no question
    comes, nothing is written, and the model hears write_file is no tool it has."""
    replies = iter(
        [
            openai_stream(tool_calls=[("write_file", {"path": "new.txt", "content": "x"})]),
            openai_stream(ANSWER),
        ]
    )
    stub.handler = lambda request: next(replies)
    chat = open_chat("--builtins")
    chat.say("/look notes")
    chat.wait_text(ANSWER)

    assert user_text(stub.requests[0]) == ["Look at notes."]
    assert tool_names(stub.requests[0]) == ["read_file"]
    assert "approve this tool call?" not in chat.term.text()
    assert not (repo / "new.txt").exists()
    [result] = cli_helpers.tool_results(stub.requests[1])
    assert result.startswith("error: unknown tool 'write_file' (available: read_file)")
