"""The `toolnexus` console script: the command when its own packages are installed, else one
line saying how to get them.

The library installs without them (`pip install toolnexus`); the command needs the `cli`
extra. Without this check a missing one would surface as a traceback, or as an error in the
middle of a command that imports it late (prompt_toolkit when the chat opens).
"""

from __future__ import annotations

import sys
from importlib.util import find_spec

# The `cli` extra of pyproject.toml, by import name.
CLI_PACKAGES = ("typer", "rich", "prompt_toolkit", "platformdirs")


def missing_cli_packages() -> list[str]:
    """Those of the command's packages that cannot be imported."""
    missing = []
    for name in CLI_PACKAGES:
        try:
            found = find_spec(name) is not None
        except ImportError:  # an import hook that refuses the name
            found = False
        if not found:
            missing.append(name)
    return missing


def main() -> None:
    missing = missing_cli_packages()
    if missing:
        print(
            f"error: the toolnexus command needs {', '.join(missing)}: "
            "pip install 'toolnexus[cli]' (or pipx install 'toolnexus[cli]')",
            file=sys.stderr,
        )
        raise SystemExit(1)
    from .app import main as run_command

    run_command()
