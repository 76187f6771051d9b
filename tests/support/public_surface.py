"""The library's public surface: every public module (no part of its dotted name starts with
`_`) and the names its `__all__` promises, as the text checked in beside the test.

After a deliberate change to the promise, write the file again from the repo root:

    .venv/bin/python -m tests.support.public_surface
"""

from __future__ import annotations

import importlib
import pathlib
from types import ModuleType

import toolnexus

LIBRARY = pathlib.Path(toolnexus.__file__).parent
SNAPSHOT = pathlib.Path(__file__).parents[1] / "library" / "public_api.txt"


def is_private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def all_modules() -> dict[str, pathlib.Path]:
    """Every module of the library by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted(LIBRARY.rglob("*.py")):
        parts = path.relative_to(LIBRARY.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def public_modules() -> list[str]:
    return [name for name in all_modules() if not is_private(name)]


def promised(module: ModuleType) -> list[str]:
    """The module's own `__all__` (never one a star import or a parent lends it)."""
    names = vars(module).get("__all__")
    if names is None:
        raise AssertionError(f"{module.__name__} has no __all__")
    return list(names)


def surface() -> dict[str, list[str]]:
    return {name: sorted(promised(importlib.import_module(name))) for name in public_modules()}


def render(found: dict[str, list[str]]) -> str:
    """One module a line, each promised name indented under it: a change reads as a diff."""
    lines = []
    for module, names in found.items():
        lines.append(module)
        lines += [f"    {name}" for name in names]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    SNAPSHOT.write_text(render(surface()))
    print(f"wrote {SNAPSHOT}")
