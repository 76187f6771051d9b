"""A repository carrying custom slash commands as Claude Code, Gemini CLI and toolnexus write
them, used unchanged by the custom-command tests (tests/cli/test_custom_commands.py,
tests/terminal/test_custom_commands_pty.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.cli_helpers import write_files

REVIEW = """\
---
description: Review a pull request
argument-hint: [pr-number]
model: reviewer-model
allowed-tools: Read, Grep, Bash(git status:*), TodoWrite
---
Review pull request #$ARGUMENTS following @GUIDE.md.

Status: !`git status --short`
"""
EXPLAIN = '''\
description = "Explain a topic in two lines"
prompt = """Explain {{args}} briefly, in the spirit of @{NOTES.md}."""
'''
SKILL = "---\nname: {name}\ndescription: {what}\n---\nSteps to {name}.\n"
FILES = {
    ".claude/commands/review-pr.md": REVIEW,
    ".claude/commands/review.md": "Shadowed in the chat by its /review.\n",
    ".claude/commands/frontend/component.md": "Write a component named $1 with props $2.\n",
    ".gemini/commands/x.toml": EXPLAIN,
    ".toolnexus/commands/y.md": "Say hello to $1 and $2.\n",
    ".toolnexus/commands/look.md": "---\nallowed-tools: Read\n---\nLook at $1.\n",
    ".toolnexus/commands/help.md": "A command that a built-in command shadows.\n",
    ".toolnexus/commands/leak.md": "Check the settings in @.env please.\n",
    ".gemini/commands/git/said.toml": 'prompt = "You said: !{echo {{args}}}"\n',
    ".gemini/commands/outside.toml": 'prompt = "Read @{../outside.txt}"\n',
    ".claude/skills/deploy/SKILL.md": SKILL.format(name="deploy", what="Ship a release"),
    ".agents/skills/lint/SKILL.md": SKILL.format(name="lint", what="Lint the code"),
    "GUIDE.md": "Small commits, tests first.\n",
    "NOTES.md": "Plain words.\n",
    ".env": "API_TOKEN=do-not-send\n",
    "untracked.txt": "new\n",
}
# What the expanded /review 123 says before its status line.
REVIEW_LINE = "Review pull request #123 following @GUIDE.md."


def command_repo(folder: Path) -> Path:
    """`folder` as a git repository holding the commands (FILES); `folder`."""
    write_files(folder, FILES)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder
