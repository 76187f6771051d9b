"""The trust question of a repository's project layer in `toolnexus chat`, in a real
pseudo-terminal against the stub endpoint: the repository (tests/support/project_repo.py)
is set up for Claude Code, with a `.mcp.json` server whose script is in the repository and
a hook in `.claude/settings.json`. The chat shows what the layer adds and runs and asks;
a yes is remembered by the hash of those files and the scripts they run, so a changed
script asks again."""

from __future__ import annotations

import json

import pytest

from tests.support import cli_helpers
from tests.support.chat_session import ROWS
from tests.support.project_repo import claude_repository
from tests.support.pty_screen import PtySession, opener

cli, stub = cli_helpers.cli, cli_helpers.stub

pytest.importorskip("mcp")

QUESTION = "Trust it? [y/N]"
COLS = 250  # the repository's path is long: its lines unwrapped


@pytest.fixture
def open_chat(cli):
    yield from opener(lambda: PtySession(cli, "chat", rows=ROWS, cols=COLS))


def trusted_digests(cli) -> dict[str, str]:
    path = cli.root / "data" / "toolnexus" / "trusted-projects.json"
    return json.loads(path.read_text()) if path.exists() else {}


def test_the_chat_asks_before_a_project_layer_runs_and_asks_again_after_a_change(cli, open_chat):
    """Repro: in a repository with .mcp.json and .claude/settings.json, run `toolnexus
    chat`: it names the server with its command and the hook with its command and asks
    "Trust it? [y/N]"; y starts the server (the status line says it is ready). Quit, change
    server.py, start the chat again: it asks again; n leaves the layer unused."""
    repo = claude_repository(cli)
    chat = open_chat()
    chat.wait_text(QUESTION)
    screen = chat.term.text()
    assert f"The repository {repo} has a project layer:" in screen
    assert "MCP server calc: " in screen and "server.py" in screen
    assert "hook PreToolUse Edit|Write: python3" in screen
    assert trusted_digests(cli) == {}  # nothing is remembered before the answer
    chat.child.send("y")
    chat.wait_text("1 of 1 MCP servers ready")
    first = trusted_digests(cli)[str(repo)]
    chat.close()

    again = open_chat()
    again.wait_text("1 of 1 MCP servers ready")
    assert QUESTION not in again.term.text()  # the same files: trusted, no question
    again.close()
    with (repo / "server.py").open("a") as script:
        script.write("\n# a change the model could not have made\n")

    changed = open_chat()
    changed.wait_text(QUESTION)
    changed.child.send("n")
    changed.wait_text(f"the project layer of {repo} is not used (not trusted)")
    assert "MCP server" not in changed.term.display()[-1]
    assert trusted_digests(cli)[str(repo)] == first  # still the yes to the old files


def test_slash_hooks_lists_each_hook_with_the_file_it_comes_from(cli, open_chat, tmp_path):
    """Repro: a [[hooks]] entry in the config and a trusted repository with a Claude Code
    hook; in the chat, /hooks lists both, each with its event, matcher, command and file."""
    repo = claude_repository(cli)
    cli.write_config('[[hooks]]\nevent = "Stop"\ncommand = "notify-send done"\n')
    assert cli.call("trust").code == 0
    chat = open_chat()
    chat.wait_text("1 of 1 MCP servers ready")
    chat.send_line("/hooks")
    chat.wait_text(f"Stop: notify-send done  ({cli.config_file}, 60 s)")
    chat.wait_text(
        'PreToolUse Edit|Write: python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/no_lock_files.py  '
        f"({repo}/.claude/settings.json, 60 s)"
    )
