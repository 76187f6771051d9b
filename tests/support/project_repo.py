"""A repository set up for Claude Code, used unchanged by the project-layer tests: a
`.mcp.json` naming an MCP server whose script lives in the repository, and a PreToolUse
hook in `.claude/settings.json` whose script is written as Claude Code's documentation
shows (it reads `tool_input.file_path` from the event on stdin, exit 2 blocks)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli_helpers import CLI
from tests.support.mcp_helpers import STDIO_SERVER, server_command

# The repository's own server: the test MCP server, run from here.
SERVER_SCRIPT = f"""\
import runpy
import sys

sys.path.insert(0, {str(Path(__file__).parents[2])!r})
runpy.run_path({STDIO_SERVER!r}, run_name="__main__")
"""

HOOK_SCRIPT = """\
#!/usr/bin/env python3
import json
import sys

event = json.load(sys.stdin)
path = event.get("tool_input", {}).get("file_path", "")
if path.endswith(".lock"):
    print(f"{path} is generated: run the package manager instead", file=sys.stderr)
    sys.exit(2)
sys.exit(0)
"""

CLAUDE_SETTINGS = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Edit|Write",
                "hooks": [
                    {
                        "type": "command",
                        "command": 'python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/no_lock_files.py',
                        "timeout": 60,
                    }
                ],
            }
        ]
    }
}


def claude_repository(cli: CLI) -> Path:
    """The project folder the CLI runs in, made a git repository set up for Claude Code."""
    repo = cli.in_project()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "server.py").write_text(SERVER_SCRIPT, encoding="utf-8")
    (repo / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"calc": server_command(repo / "server.py")}}),
        encoding="utf-8",
    )
    hooks = repo / ".claude" / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "no_lock_files.py").write_text(HOOK_SCRIPT, encoding="utf-8")
    (repo / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS), encoding="utf-8")
    return repo
