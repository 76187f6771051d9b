"""CI runs on the reference machine (.ci/run sets TOOLNEXUS_REQUIRE_SANDBOX): there a
sandbox test whose kernel feature is missing fails instead of skipping; elsewhere it skips
with the reason. Shown with a `bwrap` that fails as AppArmor or a container's seccomp
makes it fail, first on PATH."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
A_NAMESPACES_TEST = (
    "tests/cli/test_security_namespaces.py::test_chmod_chown_and_touch_outside_the_workspace_fail"
)


def run_it(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "bwrap").write_text(
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
    )
    (fake / "bwrap").chmod(0o755)
    environment = {k: v for k, v in os.environ.items() if k != "TOOLNEXUS_REQUIRE_SANDBOX"}
    environment.update(env, PATH=f"{fake}{os.pathsep}{os.environ['PATH']}")
    argv = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:xdist", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*argv, A_NAMESPACES_TEST],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")
def test_a_missing_kernel_feature_fails_in_ci_and_skips_with_its_reason_elsewhere(tmp_path):
    required = run_it(tmp_path, TOOLNEXUS_REQUIRE_SANDBOX="1")
    assert required.returncode != 0, required.stdout
    assert "no namespaces for the sandbox: bwrap: setting up uid map: Permission denied" in (
        required.stdout
    )
    assert "this machine must have it: TOOLNEXUS_REQUIRE_SANDBOX is set" in required.stdout

    elsewhere = run_it(tmp_path)
    assert elsewhere.returncode == 0, elsewhere.stdout
    assert "SKIPPED" in elsewhere.stdout and "bwrap: setting up uid map" in elsewhere.stdout
