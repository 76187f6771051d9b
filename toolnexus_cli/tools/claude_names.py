"""Claude Code's names of the built-in tools, and ours: agent and command files written for
it list tools by its names (`tools: Read, Grep`, `allowed-tools: Bash(git status:*)`)."""

from __future__ import annotations

OURS_BY_CLAUDE_NAME = {
    "Bash": "bash",
    "Read": "read_file",
    "Write": "write_file",
    "Edit": "edit_file",
    "MultiEdit": "edit_file",
    "Glob": "glob",
    "Grep": "grep",
    "LS": "list_dir",
    "WebFetch": "fetch_url",
}
