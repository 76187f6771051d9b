"""Python functions as tools: from callables, or every public typed function in a file."""

from __future__ import annotations

import importlib.util
import inspect
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import ToolnexusError
from .tool import Tool, define_tool

__all__ = [
    "function_tools",
    "public_functions",
]


def function_tools(functions: Iterable[Callable[..., Any] | str | Path]) -> list[Tool]:
    """Tools for each callable, and for each public type-hinted function of each file."""
    tools: list[Tool] = []
    for item in functions:
        if isinstance(item, Tool):
            tools.append(item)
        elif callable(item):
            tools.append(define_tool(item))
        else:
            tools.extend(define_tool(fn) for fn in public_functions(Path(item)))
    return tools


def public_functions(path: Path) -> list[Callable[..., Any]]:
    module = _import_file(path)
    found: list[Callable[..., Any]] = []
    for name, value in vars(module).items():
        if name.startswith("_") or not inspect.isfunction(value):
            continue
        if value.__module__ != module.__name__ or value.__name__ == "<lambda>":
            continue  # imported from elsewhere, or a lambda (which cannot have hints)
        if not value.__annotations__:  # without hints there is no schema to offer
            warnings.warn(
                f"{path}: {name}() has no type hints, so it is not a tool "
                f"(annotate its parameters, or name it _{name} to keep it private)",
                stacklevel=2,
            )
            continue
        found.append(value)
    return found


def _import_file(path: Path) -> Any:
    path = path.expanduser().resolve()
    if not path.is_file():
        raise ToolnexusError(f"functions file {path} does not exist")
    name = f"toolnexus_functions_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ToolnexusError(f"functions file {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # SystemExit: a script that runs on import
        sys.modules.pop(name, None)
        raise ToolnexusError(
            f"functions file {path} failed to import: {type(exc).__name__}: {exc}"
        ) from exc
    return module
