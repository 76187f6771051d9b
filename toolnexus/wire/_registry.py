"""The open registry of wire styles: a name -> how to make its WireStyle, and the environment
variable its key is in (known without making the style: the CLI's redactor reads it).

The built-in styles register here like any other, each made (its module imported) when it is
first asked for. A name nobody registered is looked up once among the installed packages'
`toolnexus.styles` entry points, so start-up never pays for reading them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .base import WireStyle

StyleFactory = Callable[[], WireStyle]  # a WireStyle subclass, or any maker of one
ENTRY_POINT_GROUP = "toolnexus.styles"


@dataclass(frozen=True, slots=True)
class _Registered:
    factory: StyleFactory
    key_env: str


_registered: dict[str, _Registered] = {}
_made: dict[str, WireStyle] = {}
_key_envs: dict[str, str] = {}

# style name -> its `key_env`, known without making the style (a live, read-only view)
KEY_ENVS: Mapping[str, str] = MappingProxyType(_key_envs)


def register_style(
    name: str, factory: StyleFactory, *, key_env: str, replace: bool = False
) -> None:
    """Make `create_client(style=name)` speak the style `factory()` makes (a WireStyle
    subclass, or a function returning one), on first use. `key_env` names the environment
    variable its API key is read from. A name already registered raises ValueError unless
    `replace` is True."""
    if not name or not isinstance(name, str):
        raise ValueError(f"a style's name must be a non-empty string, not {name!r}")
    if not callable(factory):
        raise TypeError(f"the factory of style {name!r} must be callable, not {factory!r}")
    if name in _registered and not replace:
        raise ValueError(
            f"style {name!r} is registered already (pass replace=True to register it again)"
        )
    _registered[name] = _Registered(factory, key_env)
    _key_envs[name] = key_env
    _made.pop(name, None)


def registered_style(name: str) -> WireStyle | None:
    """The style registered (or installed as an entry point) under `name`, made once; None
    when there is none."""
    style = _made.get(name)
    if style is not None:
        return style
    entry = _registered.get(name) or _from_entry_point(name)
    if entry is None:
        return None
    made = entry.factory()
    if not isinstance(made, WireStyle):
        raise TypeError(f"style {name!r} made a {type(made).__name__}, not a WireStyle")
    _made[name] = made
    return made


def _from_entry_point(name: str) -> _Registered | None:
    """An installed package's style of this name (group `toolnexus.styles`), registered."""
    from importlib.metadata import entry_points

    found = entry_points(group=ENTRY_POINT_GROUP, name=name)
    if not found:
        return None
    factory = next(iter(found)).load()
    register_style(name, factory, key_env=getattr(factory, "key_env", ""))
    return _registered[name]


class _Styles(Mapping[str, WireStyle]):
    """Every registered style by name; each one made on first use."""

    def __getitem__(self, name: str) -> WireStyle:
        style = registered_style(name) if name in _registered else None
        if style is None:
            raise KeyError(name)
        return style

    def __iter__(self) -> Iterator[str]:
        return iter(list(_registered))

    def __len__(self) -> int:
        return len(_registered)


STYLES: Mapping[str, WireStyle] = _Styles()


def wire_style(style: str | WireStyle) -> WireStyle:
    """`style` itself when it is a WireStyle; else the style registered under that name."""
    if isinstance(style, WireStyle):
        return style
    if not isinstance(style, str):
        raise TypeError(f"style must be a name or a WireStyle, not {type(style).__name__}")
    made = registered_style(style)
    if made is None:
        choices = ", ".join(repr(name) for name in _registered)
        raise ValueError(f"unknown style {style!r}: use one of {choices}")
    return made
