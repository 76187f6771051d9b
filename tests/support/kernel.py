"""Tests of a kernel feature (Landlock, user namespaces): they skip, with the reason, on a
machine that lacks it, except where TOOLNEXUS_REQUIRE_SANDBOX is set (.ci/run sets it: CI
runs on the reference machine, which has both), where they fail instead."""

from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path

import pytest

from toolnexus.tools.sandbox import Sandbox, SandboxPolicy, support

REQUIRED = "TOOLNEXUS_REQUIRE_SANDBOX"
MARK = "kernel_feature_missing"


def needs(ok: bool, why: str) -> pytest.MarkDecorator:
    """Mark a test (or module, as `pytestmark`) that needs what `ok` says is here."""
    return pytest.mark.kernel_feature_present if ok else getattr(pytest.mark, MARK)(why)


def check(item: pytest.Item) -> None:
    """Called before each test (tests/conftest.py): skip or fail one whose feature is
    missing."""
    marker = item.get_closest_marker(MARK)
    if marker is None:
        return
    why = marker.args[0]
    if os.environ.get(REQUIRED):
        pytest.fail(f"{why} (this machine must have it: {REQUIRED} is set)", pytrace=False)
    pytest.skip(why)


@functools.cache
def namespaces() -> tuple[bool, str]:
    """Whether sandboxed commands get namespaces here, and if not, why."""
    with tempfile.TemporaryDirectory() as folder:
        enforced = Sandbox(SandboxPolicy(), [Path(folder)]).enforced()
    if enforced.kind == "namespaces":
        return True, ""
    why = enforced.namespaces_refused or enforced.why_not
    return False, f"no namespaces for the sandbox: {why}"


landlock = needs(support().abi > 0, f"no Landlock: {support().why_not}")
