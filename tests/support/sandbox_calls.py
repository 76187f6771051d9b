"""A hostile model's bash calls, run through `toolnexus ask --builtins` in a workspace: what
the model reads back from each."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.support.cli_helpers import CLI, model_calls, tool_results
from tests.support.stub_provider import StubProvider


def run_calls(
    cli: CLI,
    stub: StubProvider,
    work: Path,
    calls: list[tuple[str, dict]],
    *args: str,
    env: dict[str, str] | None = None,
) -> list[str]:
    """What the model reads back from `calls`, run by `ask --builtins` in `work`. The test's
    Python is first on PATH: a `python3` shim of a version manager in the real home folder
    would not run with the test's fake HOME."""
    before = len(stub.requests)
    model_calls(stub, calls, "done")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    result = cli.call(
        "ask", "--builtins", "--root", str(work), *args, "go", env={"PATH": path, **(env or {})}
    )
    assert result.code == 0, result
    assert all(line.startswith("toolnexus: ") for line in result.stderr.splitlines()), result
    calls_made = [r for r in stub.requests[before:] if r.method == "POST"]
    return tool_results(calls_made[1])


def bash(*commands: str) -> list[tuple[str, dict]]:
    return [("bash", {"command": command}) for command in commands]
