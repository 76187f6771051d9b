"""The README's library examples run as they are written: a user's own WireStyle plugged in
by object and by registered name, and an agent tested with toolnexus.testing, no server."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

README = pathlib.Path(__file__).parents[2] / "README.md"


def _section_code(title: str) -> str:
    """The python code block of the README section headed `title`."""
    text = README.read_text()
    section = text[text.index(f"\n### {title}\n") :]
    section = section[: section.index("\n#", 1)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1, f"the section {title!r} has {len(blocks)} python blocks"
    return blocks[0]


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HTTPS_PROXY"] = env["HTTP_PROXY"] = "http://127.0.0.1:9"  # any real request fails
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )


def test_a_users_own_style_runs_by_object_and_by_registered_name():
    code = _section_code("Your own provider style")
    assert "style=Gateway()" in code and 'register_style("gateway"' in code
    assert 'style="gateway"' in code
    done = _run(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hello from the gateway", "hello again"]


@pytest.mark.parametrize("broken", [False, True])
def test_an_agent_is_tested_with_the_scripted_model_and_no_server(broken):
    code = _section_code("Testing an agent")
    if broken:  # the example's assertions are real: a wrong expectation fails it
        code = code.replace('== "2 + 3 = 5"', '== "2 + 3 = 6"')
    done = _run(code)
    if broken:
        assert done.returncode == 1 and "AssertionError" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
        assert done.stdout == "ok\n"
