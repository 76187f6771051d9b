"""The library's public surface and its import discipline."""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

import toolnexus

LIBRARY = pathlib.Path(toolnexus.__file__).parent
CLI_ONLY = ("rich", "typer", "prompt_toolkit", "platformdirs", "toolnexus_cli")


def test_all_names_the_public_api_and_nothing_missing():
    expected = {
        "Client", "ContextPolicy", "Conversation", "ConversationStore", "MemoryStore",
        "ProviderError", "RunCancelled", "RunResult", "RunTimeout", "Tool", "ToolContext",
        "ToolResult", "Toolkit", "ToolnexusError", "create_client", "create_toolkit",
        "define_tool", "Request", "Answer", "make_request", "make_answer", "suspend",
        "Attachment",
    }
    assert expected <= set(toolnexus.__all__)
    for name in toolnexus.__all__:
        assert hasattr(toolnexus, name), name
    public = {n for n in vars(toolnexus) if not n.startswith("_")}
    submodules = {p.stem for p in LIBRARY.glob("*.py")} | {"wire", "stores"}
    assert public - set(toolnexus.__all__) <= submodules


def test_the_library_never_imports_the_cli_or_its_packages():
    offenders = []
    for path in LIBRARY.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in CLI_ONLY]
    assert offenders == []


def test_import_toolnexus_loads_no_optional_or_heavy_module():
    code = ("import sys, toolnexus; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('rich', 'typer', 'prompt_toolkit', 'mcp', 'psycopg', 'sqlite3', 'pydantic')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_unknown_style_names_every_choice():
    import pytest

    with pytest.raises(ValueError, match="'openai', 'anthropic', 'responses'"):
        toolnexus.create_client(base_url="http://x", style="gemini", model="m")
