"""What the zygote of tests/support/prefork.py imports before it forks, read off the source
trees rather than kept by hand: every module of the project's packages, every module their
sources and the test MCP servers name in an import statement (those inside functions too:
the HTTP stack, the styles, the MCP SDK and the renderers are imported on first use), and
what those modules of other packages import inside their own functions (the MCP client's
schema checker). A module moved, added or newly imported is preloaded without anyone
updating a list."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("toolnexus", "toolnexus_cli")
# The programs the zygote forks besides the console script: the test MCP servers.
PROGRAMS = Path(__file__).with_name("mcp_servers")
# `import a, b.c as d` and `from a.b import c, d` (a parenthesised list: its first line)
IMPORT = re.compile(
    r"^[ \t]*(?:import[ \t]+([\w., \t]+)|from[ \t]+(\w[\w.]*)[ \t]+import[ \t]+\(?([\w., \t]+))",
    re.M,
)


def preload() -> None:
    """Import what the test processes will: the packages' own modules and every module
    their sources and the test servers name, then what the modules of other packages now
    loaded name inside their functions (the MCP client's schema checker, say). A name that
    does not import here is skipped (a sibling of a test server, a module of another
    platform, a name imported from a module that is not a module): a fork that needs it
    fails as a fresh process would."""
    named = imported_names(sources())
    _import([*package_modules(), *sorted(named)])
    others = {name.partition(".")[0] for name in named} - set(PACKAGES)
    loaded = [
        Path(module.__file__)
        for name, module in list(sys.modules.items())
        if name.partition(".")[0] in others and str(getattr(module, "__file__", "")).endswith(".py")
    ]
    inner = imported_names(loaded) - set(sys.modules)
    _import(sorted(name for name in inner if _installed(name)), failing=Exception)


def _import(names: Iterable[str], failing: type[Exception] = ImportError) -> None:
    for name in names:
        try:
            importlib.import_module(name)
        except failing:
            pass


def _installed(name: str) -> bool:
    """Whether `name` is of a package installed beside this project's (not the standard
    library's, where some modules act on being imported)."""
    try:
        spec = importlib.util.find_spec(name.partition(".")[0])
    except (ImportError, ValueError):
        return False
    return bool(spec and spec.origin and "site-packages" in spec.origin)


def package_modules() -> Iterator[str]:
    for package in PACKAGES:
        yield package
        for found in pkgutil.walk_packages([str(ROOT / package)], prefix=f"{package}."):
            yield found.name


def sources() -> Iterator[Path]:
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))
    yield from sorted(PROGRAMS.glob("*.py"))


def imported_names(files: Iterable[Path]) -> set[str]:
    """The absolute module names the files import anywhere in their code; for `from A
    import B`, both A and A.B (B may be a module)."""
    names: set[str] = set()
    for path in files:
        for plain, module, members in IMPORT.findall(path.read_text("utf-8", "replace")):
            if plain:
                names.update(_words(plain))
            else:
                names.add(module)
                names.update(f"{module}.{member}" for member in _words(members))
    return names


def _words(listed: str) -> Iterator[str]:
    """The module names of `a, b.c as d`."""
    for item in listed.split(","):
        name = item.split()[0] if item.split() else ""
        if name and not name.startswith("."):
            yield name
