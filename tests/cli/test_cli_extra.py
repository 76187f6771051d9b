"""The `toolnexus` command without its `cli` extra (typer, rich, prompt_toolkit, platformdirs):
`pip install toolnexus` installs the library alone, and the console script then says in one
line what to install instead of a traceback."""

from __future__ import annotations

import pytest

# Imported by the interpreter at start (sitecustomize on PYTHONPATH): the packages named in
# TOOLNEXUS_TEST_REFUSED cannot be imported, as if they were not installed.
REFUSE = """
import os, sys

REFUSED = set(os.environ["TOOLNEXUS_TEST_REFUSED"].split(","))

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in REFUSED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Refuse())
"""


@pytest.mark.parametrize(
    "refused, named",
    [
        ("typer", "typer"),
        ("platformdirs,prompt_toolkit", "prompt_toolkit, platformdirs"),
        ("typer,rich,prompt_toolkit,platformdirs", "typer, rich, prompt_toolkit, platformdirs"),
    ],
)
def test_without_the_cli_extra_the_command_says_what_to_install(cli, tmp_path, refused, named):
    """Repro: `pip install toolnexus` (the library, without `[cli]`), then `echo hi |
    toolnexus ask "say hi"`: one line names the missing packages and the install line,
    exit status 1, nothing on stdout."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(REFUSE, encoding="utf-8")
    result = cli.run_fresh(
        "ask",
        "say hi",
        input="hi",
        env={"PYTHONPATH": str(hook), "TOOLNEXUS_TEST_REFUSED": refused},
    )
    assert result.code == 1, result
    assert result.stdout == ""
    assert result.stderr == (
        f"error: the toolnexus command needs {named}: pip install 'toolnexus[cli]' "
        "(or pipx install 'toolnexus[cli]')\n"
    )


def test_with_the_cli_extra_the_command_runs(cli):
    """The same console script with every package importable answers as usual."""
    result = cli.run_fresh("--version")
    assert result.code == 0, result
    assert result.stdout.startswith("toolnexus ")
