"""The library's public surface and its import discipline."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

import toolnexus
from tests.support.public_surface import (
    LIBRARY,
    SNAPSHOT,
    all_modules,
    is_private,
    public_modules,
    render,
    surface,
)
from tests.support.seed_examples.extract import SEEDS

CLI_ONLY = ("rich", "typer", "prompt_toolkit", "platformdirs", "toolnexus_cli")
ROOT = LIBRARY.parent
SEED_EXAMPLES = ROOT / "tests" / "support" / "seed_examples"
# The types the seed documents' signatures name (`-> RunResult`, `toolkit: Toolkit`, ...)
SEED_SIGNATURE_TYPES = ("Client", "Conversation", "ConversationStore", "RunResult", "Toolkit")


def test_every_public_module_promises_its_names_in___all__():
    modules = public_modules()
    assert len(modules) > 40  # the walk sees them
    problems = []
    for name in modules:
        module = importlib.import_module(name)
        names = vars(module).get("__all__")
        if names is None:
            problems.append(f"{name}: no __all__")
            continue
        problems += [f"{name}: {n!r} is promised twice" for n in set(names) if names.count(n) > 1]
        problems += [f"{name}: {n!r} is private" for n in names if n.startswith("_")]
        problems += [f"{name}: {n!r} does not exist" for n in names if not hasattr(module, n)]
    assert problems == []


def test_the_public_surface_is_the_one_checked_in():
    """A change to what the library promises is a deliberate diff of public_api.txt
    (written by `.venv/bin/python -m tests.support.public_surface`)."""
    assert render(surface()) == SNAPSHOT.read_text()


def _seed_imports() -> set[str]:
    """What the seed examples take from `toolnexus`, by import or by attribute."""
    used: set[str] = set()
    for path in sorted(SEED_EXAMPLES.glob("seed_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "toolnexus":
                used.update(alias.name for alias in node.names)
            elif isinstance(node, ast.Attribute) and ast.unparse(node.value) == "toolnexus":
                used.add(node.attr)
    return used


def test_the_package_exports_everything_the_seeds_use():
    used = _seed_imports()
    assert {"create_client", "create_toolkit", "define_tool", "RunCancelled"} <= used
    assert used | set(SEED_SIGNATURE_TYPES) <= set(toolnexus.__all__)


@pytest.mark.skipif(not SEEDS.is_dir(), reason="../shared/seeds is not beside this checkout")
def test_the_seed_signature_types_are_the_seeds():
    text = "".join(seed.read_text() for seed in SEEDS.glob("00[01]_*.txt"))
    assert [name for name in SEED_SIGNATURE_TYPES if name not in text] == []


def test_the_package_has_no_public_name_beyond_all_but_its_submodules():
    public = {n for n in vars(toolnexus) if not n.startswith("_")}
    submodules = {p.stem for p in LIBRARY.glob("*.py")}
    submodules |= {p.parent.name for p in LIBRARY.glob("*/__init__.py")}
    assert public - set(toolnexus.__all__) <= submodules


def _imported(name: str, path: pathlib.Path) -> set[str]:
    """What a module imports, absolute, wherever the import stands (in a function, under
    TYPE_CHECKING): `from .x import y` names both `<pkg>.x` and `<pkg>.x.y`."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, module] if module else base)
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def test_the_library_never_imports_the_cli_or_its_packages():
    offenders = [
        f"{name}: {imported}"
        for name, path in all_modules().items()
        for imported in _imported(name, path)
        if imported.split(".")[0] in CLI_ONLY
    ]
    assert offenders == []


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle of `graph` (module -> the library modules it imports), or []."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str]:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        state[module] = "done"
        path.pop()
        return []

    for module in graph:
        if module not in state and (cycle := visit(module)):
            return cycle
    return []


def test_no_library_module_imports_itself_round_about():
    modules = all_modules()
    graph = {
        name: {m for m in _imported(name, path) if m in modules and m != name}
        for name, path in modules.items()
    }
    assert _cycle(graph) == []
    assert (
        graph["toolnexus.conversation"] and graph["toolnexus.tools.toolkit"]
    )  # the walk sees them
    assert _cycle({**graph, "toolnexus.errors": {"toolnexus.client"}})  # and would see one


def test_every_library_module_imports():
    code = f"import importlib\nfor name in {sorted(all_modules())!r}: importlib.import_module(name)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_import_toolnexus_loads_no_optional_or_heavy_module():
    code = (
        "import sys, toolnexus; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('rich', 'typer', 'prompt_toolkit', 'mcp', 'psycopg', 'sqlite3', 'pydantic')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_unknown_style_names_every_choice():
    with pytest.raises(ValueError, match="'openai', 'anthropic', 'responses'"):
        toolnexus.create_client(base_url="http://x", style="gemini", model="m")


def test_importing_one_submodule_does_not_load_the_whole_library():
    """`toolnexus --version` reads toolnexus.wire.base: the client, loop and stores wait."""
    code = (
        "import sys, toolnexus.wire.base; "
        "print(sorted(m for m in ('toolnexus.client', 'toolnexus._loop', "
        "'toolnexus.stores', 'toolnexus.context.keeper') if m in sys.modules))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"


def test_one_name_of_app_support_loads_only_its_own_module():
    """The CLI's start-up reads `visible` from toolnexus.app_support: the thread marks,
    the summary and the client wait until a name of theirs is asked for."""
    code = (
        "import sys; from toolnexus.app_support import visible; "
        "print(sorted(m for m in ('toolnexus.context._marks', 'toolnexus.context._summary', "
        "'toolnexus.client', 'toolnexus._bounded_json') if m in sys.modules))"
    )
    shown = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert shown.strip() == "[]"


def test_the_version_is_the_packages():
    from importlib.metadata import version

    assert toolnexus.__version__ == version("toolnexus")


def test_the_transcript_and_event_types_are_exported_with_their_keys():
    from toolnexus import types

    for name in (
        "Message",
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "ContentPart",
        "TextPart",
        "ImagePart",
        "FilePart",
        "AudioPart",
        "ToolCall",
        "CompactionInfo",
        "Event",
        "TextEvent",
        "ToolResultEvent",
        "DoneEvent",
        "Request",
        "Answer",
    ):
        assert getattr(toolnexus, name) is getattr(types, name), name
    assistant = toolnexus.AssistantMessage
    assert {"role", "content"} <= assistant.__required_keys__
    assert {
        "tool_calls",
        "reasoning",
        "thinking_blocks",
        "anthropic_content",
        "reasoning_details",
        "endpoint_fields",
        "reasoning_items",
        "interrupted",
        "dropped",
        "pinned",
    } <= assistant.__optional_keys__
    assert {"compaction", "failed_with"} <= toolnexus.UserMessage.__optional_keys__
    assert {"tool_call_id", "content"} <= toolnexus.ToolMessage.__required_keys__
    assert {"is_error", "pending", "loaded_tools"} <= toolnexus.ToolMessage.__optional_keys__
    assert toolnexus.ToolCall.__required_keys__ == {"id", "type", "function"}
    assert toolnexus.ToolResultEvent.__optional_keys__ == {
        "attachments",
        "changes",
        "exit_code",
        "signal",
        "shown",
    }


def test_every_public_module_is_on_the_readme_map():
    """A module not private by name is public: the README's layout names it."""
    readme = (ROOT / "README.md").read_text()
    layout = readme[readme.index("### Layout") :]
    layout = layout[: layout.index("\n## ")]
    public = [
        name
        for name, path in all_modules().items()
        if not is_private(name) and path.name != "__init__.py" and name.count(".") >= 1
    ]
    assert len(public) > 20
    missing = [name for name in public if f"{name.rpartition('.')[2]}.py" not in layout]
    assert missing == []
