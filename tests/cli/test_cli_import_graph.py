"""The CLI's modules import one another without a circle, counting every import: at the
top of a module, inside a function, under `if TYPE_CHECKING:`, relative or absolute, and
`from package import module`. A circle means two modules each need the other, so neither
can be read, tested or moved alone."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "toolnexus_cli"
PACKAGE = CLI.name


def module_names(root: Path) -> dict[str, Path]:
    """Each module of the package under `root` by its dotted name (a package by its own)."""
    names = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module `name` imports anywhere in its body."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            found.add(source)
            # `from package import module` imports the module
            found.update(f"{source}.{alias.name}" for alias in node.names)
    return {module for module in found if module in modules and module != name}


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = module_names(root)
    return {name: imported(name, path, modules) for name, path in modules.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm), each
    as a path that goes round it: [a, b, c, a]."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(group)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return [round_trip(graph, group) for group in groups]


def round_trip(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A path inside `group` from its first module back to it (breadth first: a short one)."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for module in frontier:
            for other in sorted(graph[module] & group):
                if other == start:
                    path = [module]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if other not in came_from:
                    came_from[other] = module
                    following.append(other)
        frontier = following
    raise AssertionError(f"no way round {group}")


def test_the_cli_has_no_import_circle():
    found = circles(import_graph(CLI))
    assert not found, "import circles in the CLI:\n" + "\n".join(
        " -> ".join(module.removeprefix(f"{PACKAGE}.") for module in circle) for circle in found
    )


def test_a_circle_through_an_import_inside_a_function_is_found(tmp_path):
    package = tmp_path / "app"
    (package / "config").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "config" / "__init__.py").write_text("")
    (package / "config" / "file.py").write_text(
        "def resolve():\n    from .models import served\n    return served()\n"
    )
    (package / "config" / "models.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..config import file\n"
    )
    (package / "session.py").write_text("from app.config.models import served\n")

    assert circles(import_graph(package)) == [
        ["app.config.file", "app.config.models", "app.config.file"]
    ]


def test_modules_without_a_circle_pass(tmp_path):
    package = tmp_path / "app"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("import os\n")
    (package / "high.py").write_text("from . import low\nfrom .low import os\n")

    graph = import_graph(package)
    assert graph["app.high"] == {"app", "app.low"}
    assert circles(graph) == []
