"""A module's names loaded when first used (PEP 562): `import toolnexus` and
`toolnexus.app_support` stay cheap, and a program pays only for the names it uses."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    module: str, where: Mapping[str, str], prefix: str = ""
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `module`, whose name N is in module `prefix +
    where[N]`; once found, a name is a plain attribute of `module`."""

    def __getattr__(name: str) -> Any:
        source = where.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(prefix + source), name)
        setattr(sys.modules[module], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[module])) | set(where))

    return __getattr__, __dir__
