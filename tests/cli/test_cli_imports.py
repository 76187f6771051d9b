"""The CLI uses the library as any program would: through public modules and the names
their `__all__` promises, wherever an import stands (at the top, in a function, under
TYPE_CHECKING)."""

from __future__ import annotations

import ast
import importlib
import pathlib

from tests.support.public_surface import all_modules, is_private

ROOT = pathlib.Path(__file__).parents[2]
CLI = ROOT / "toolnexus_cli"


def _library_imports(source: str) -> list[tuple[str, str]]:
    """(library module, name) for every import of the library in `source`; name is "" for
    a module imported whole."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.split(".")[0] == "toolnexus"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "toolnexus":
            found += [(node.module or "", a.name) for a in node.names]
    return found


def _refusal(module: str, name: str) -> str | None:
    """Why importing `name` from `module` reaches past the public line, or None."""
    modules = all_modules()
    if module not in modules:
        return f"{module} is no module of the library"
    if is_private(module):
        return f"{module} is private"
    if not name or (module, name) == ("toolnexus", "__version__"):
        return None
    if f"{module}.{name}" in modules:
        return f"{module}.{name} is private" if is_private(name) else None
    if name not in vars(importlib.import_module(module))["__all__"]:
        return f"{name} is not in {module}.__all__"
    return None


def _offenders(files: dict[str, str]) -> list[str]:
    return [
        f"{file}: from {module} import {name or '(the module)'}: {why}"
        for file, source in files.items()
        for module, name in _library_imports(source)
        if (why := _refusal(module, name)) is not None
    ]


def _cli_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(CLI.rglob("*.py"))}


def test_the_cli_imports_only_what_the_library_promises():
    sources = _cli_sources()
    imported = {module for source in sources.values() for module, _ in _library_imports(source)}
    assert len(imported) > 30  # the walk sees them
    assert "toolnexus.app_support" in imported
    assert _offenders(sources) == []


def test_the_walk_finds_each_way_past_the_public_line():
    source = """
import toolnexus.tools._leaving
from toolnexus.transport._exchange import Transport
from toolnexus.journal import _blobs
from toolnexus.client import _resolve

def later():
    from toolnexus.client import resolve_api_key
    from toolnexus.app_support import visible
    from toolnexus import __version__, Client
"""
    assert [line.split(": ", 1)[1] for line in _offenders({"x.py": source})] == [
        "from toolnexus.tools._leaving import (the module): toolnexus.tools._leaving is private",
        "from toolnexus.transport._exchange import Transport: "
        "toolnexus.transport._exchange is private",
        "from toolnexus.journal import _blobs: toolnexus.journal._blobs is private",
        "from toolnexus.client import _resolve: _resolve is not in toolnexus.client.__all__",
        "from toolnexus.client import resolve_api_key: "
        "resolve_api_key is not in toolnexus.client.__all__",
    ]
