"""`make lint` checks both packages as strictly as the README promises: mypy strict with the
error codes that find false paths, and pyright's checks (what an editor shows) beside it,
installed from the project's own files. The checkers' verdict itself is CI's `make lint`;
these tests keep the settings from being loosened quietly."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path
from typing import get_args

ROOT = Path(__file__).parents[2]
PACKAGES = {"toolnexus", "toolnexus_cli"}


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_make_lint_runs_mypy_and_pyright():
    """Repro: pyright showed 38 errors in an editor while `make lint` passed. Now `make -n
    lint` lists both checkers among its steps."""
    dry = subprocess.run(
        ["make", "-n", "-o", ".venv/.installed", "lint"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    programs = [line.split()[0].rsplit("/", 1)[-1] for line in dry.stdout.splitlines() if line]
    assert "mypy" in programs
    assert "basedpyright" in programs


def test_mypy_is_strict_on_both_packages_with_the_extra_codes():
    """Repro: `fail_usage` was typed `-> None`, and mypy's possibly-undefined found 8 false
    paths in app.py that `make lint` never reported; the command was checked as standard."""
    mypy = pyproject()["tool"]["mypy"]
    assert mypy["strict"] is True
    assert set(mypy["files"]) == PACKAGES
    assert {"possibly-undefined", "redundant-expr", "truthy-bool", "ignore-without-code"} <= set(
        mypy["enable_error_code"]
    )
    loosened = [
        override
        for override in mypy.get("overrides", [])
        if set(override) - {"module", "ignore_missing_imports"}
    ]
    assert loosened == []


def test_pyright_checks_both_packages_and_installs_with_the_tests():
    """basedpyright comes with `.[test]` (its node in a wheel: no download when it runs)."""
    settings = pyproject()
    pyright = settings["tool"]["basedpyright"]
    assert pyright["typeCheckingMode"] == "standard"
    assert set(pyright["include"]) == PACKAGES
    test_extra = settings["project"]["optional-dependencies"]["test"]
    assert any(requirement.startswith("basedpyright") for requirement in test_extra)


def test_option_choices_are_the_librarys():
    """--sandbox and --reasoning offer exactly the modes and levels the library takes."""
    from toolnexus.tools.sandbox import MODES
    from toolnexus.wire.base import REASONING_LEVELS
    from toolnexus_cli.session.options import Reasoning, Sandbox

    assert get_args(Sandbox) == tuple(MODES)
    assert get_args(Reasoning) == tuple(REASONING_LEVELS)
