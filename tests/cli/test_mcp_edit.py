"""`toolnexus mcp add/remove/get`: servers written into the user's mcp.json (beside the
config) or the project's .mcp.json (Claude Code's shape), other content kept, secrets
private, a broken file refused and left alone."""

from __future__ import annotations

import json
import stat

import pytest

from tests.support import cli_helpers
from tests.support.mcp_helpers import STDIO_SERVER, server_command

cli, stub = cli_helpers.cli, cli_helpers.stub


def test_a_server_added_for_the_user_is_started_by_later_commands(cli):
    """toolnexus mcp add calc -- python stdio_server.py; toolnexus mcp list shows it."""
    command = server_command(STDIO_SERVER)
    added = cli.call("mcp", "add", "calc", "--", command["command"], *command["args"])
    assert added.code == 0, added
    written = cli.config_dir / "mcp.json"
    assert str(written) in added.stdout
    assert json.loads(written.read_text())["mcpServers"]["calc"] == {
        "type": "stdio",
        **command,
    }
    listed = cli.call("mcp", "list")
    assert listed.code == 0, listed
    assert listed.stdout.splitlines()[0] == "calc  stdio  ok"


def test_project_scope_writes_claude_codes_file_at_the_repository_root(cli):
    """In a git repository's subfolder: mcp add --scope project docs --url URL --header ..."""
    project = cli.in_project()
    (project / ".git").mkdir()
    cli.cwd = project / "src"
    cli.cwd.mkdir()
    added = cli.call(
        "mcp", "add", "docs", "--scope", "project", "--url", "https://mcp.example.test/mcp",
        "--header", "Authorization: Bearer sk-secret-123",
    )  # fmt: skip
    assert added.code == 0, added
    written = project / ".mcp.json"
    assert json.loads(written.read_text()) == {
        "mcpServers": {
            "docs": {
                "type": "http",
                "url": "https://mcp.example.test/mcp",
                "headers": {"Authorization": "Bearer sk-secret-123"},
            }
        }
    }
    assert stat.S_IMODE(written.stat().st_mode) == 0o600  # it holds a header
    shown = cli.call("mcp", "get", "docs")
    assert shown.code == 0, shown
    assert shown.stdout.splitlines() == [
        f"docs (project scope, {written})",
        "  type: http",
        "  url: https://mcp.example.test/mcp",
        "  headers: Authorization=***",
    ]
    assert "sk-secret" not in shown.stdout


def test_other_content_and_indentation_are_kept_and_remove_takes_only_the_server(cli):
    """An mcp.json written by hand (4 spaces, a key of its own), then mcp add and remove."""
    cli.config_dir.mkdir(parents=True)
    written = cli.config_dir / "mcp.json"
    original = {"$schema": "x", "mcpServers": {"mine": {"command": "mine", "env": {"A": "1"}}}}
    written.write_text(json.dumps(original, indent=4) + "\n")
    assert cli.call("mcp", "add", "more", "--env", "TOKEN=${MY_TOKEN}", "--", "srv").code == 0
    text = written.read_text()
    assert text.startswith('{\n    "$schema": "x",\n    "mcpServers": {\n        "mine"')
    assert list(json.loads(text)["mcpServers"]) == ["mine", "more"]
    shown = cli.call("mcp", "get", "more")
    assert "  env: TOKEN=${MY_TOKEN}" in shown.stdout.splitlines()  # a reference, as written

    again = cli.call("mcp", "add", "more", "--", "other")
    assert again.code == 1 and "already" in again.stderr, again
    removed = cli.call("mcp", "remove", "more")
    assert removed.code == 0, removed
    assert written.read_text() == json.dumps(original, indent=4) + "\n"
    missing = cli.call("mcp", "remove", "more")
    assert missing.code == 1 and "no MCP server named 'more'" in missing.stderr, missing


@pytest.mark.parametrize(
    "args",
    [
        ["mcp", "add", "x", "--", "srv"],
        ["mcp", "remove", "mine"],
        ["mcp", "get", "mine"],
    ],
)
def test_a_malformed_file_is_one_clear_error_and_left_as_it_was(cli, args):
    cli.config_dir.mkdir(parents=True)
    broken = cli.config_dir / "mcp.json"
    broken.write_text('{"mcpServers": {"mine": {"command": "m"},}}')
    result = cli.call(*args)
    assert result.code == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and str(broken) in lines[0] and "not valid JSON" in lines[0], result
    assert broken.read_text() == '{"mcpServers": {"mine": {"command": "m"},}}'


def test_bad_arguments_are_one_line_each(cli):
    for args, said in (
        (["mcp", "add", "x"], "after '--'"),
        (["mcp", "add", "x", "--url", "ftp://h"], "http://"),
        (["mcp", "add", "x", "--env", "NOEQUALS", "--", "srv"], "KEY=VALUE"),
        (["mcp", "add", "x y", "--", "srv"], "cannot name a server"),
        (["mcp", "get", "x", "--scope", "team"], "user or project"),
    ):
        result = cli.call(*args)
        assert result.code in (1, 2) and said in result.stderr, (args, result)
        assert len(result.stderr.splitlines()) == 1, result
