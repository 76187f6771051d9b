"""The fixture repository of project instructions (tests/support/instructions_repo), copied
as it is into a test user's home and made a git repository:

    repo/AGENTS.md          ROOT-RULE, imports @docs/style.md (mentions an e-mail address)
    repo/CLAUDE.md          SHADOWED-CLAUDE: AGENTS.md is found first there
    repo/docs/style.md      STYLE-RULE, imports @more.md
    repo/docs/more.md       MORE-RULE, imports @style.md back (a loop)
    repo/app/AGENTS.md      APP-RULE, imports @../../outside.md (outside the repository)
    repo/app/web/CLAUDE.md  WEB-RULE (no AGENTS.md in that folder)

and `outside.md` beside the repository, holding OUTSIDE-SECRET."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.cli_helpers import CLI

FIXTURE = Path(__file__).parent / "instructions_repo"
RULES_IN_ORDER = ["ROOT-RULE", "STYLE-RULE", "MORE-RULE", "APP-RULE", "WEB-RULE"]


def instructions_repo(cli: CLI) -> Path:
    """The fixture repository in `cli`'s home, commands running in its app/web folder."""
    repo = cli.home / "repo"
    shutil.copytree(FIXTURE, repo)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (cli.home / "outside.md").write_text("OUTSIDE-SECRET\n", encoding="utf-8")
    cli.cwd = repo / "app" / "web"
    return repo


def positions(text: str, markers: list[str]) -> list[int]:
    """Where each marker first occurs in `text` (-1: not there)."""
    return [text.find(marker) for marker in markers]
