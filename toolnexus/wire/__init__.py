"""Wire formats: canonical transcript <-> one provider style. A style is a WireStyle
(wire/base.py) in its own module, plus one line in _REGISTRY. A style's module is imported
when the style is first asked for, so a run loads only the one it speaks."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping

from .base import ModelReply, StreamAssembler, ToolSpec, WireStyle

__all__ = [
    "KEY_ENVS",
    "STYLES",
    "ModelReply",
    "StreamAssembler",
    "ToolSpec",
    "WireStyle",
    "wire_style",
]

# style name -> (its module in this package, its WireStyle class)
_REGISTRY: dict[str, tuple[str, str]] = {
    "openai": ("openai", "OpenAIStyle"),
    "anthropic": ("anthropic", "AnthropicStyle"),
    "responses": ("responses", "ResponsesStyle"),
}
# style name -> its `key_env`, known without importing the style (tests pin the two equal)
KEY_ENVS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "responses": "OPENAI_API_KEY",
}


class _Styles(Mapping[str, WireStyle]):
    """Every style by name; each one made on first use."""

    def __init__(self) -> None:
        self._made: dict[str, WireStyle] = {}

    def __getitem__(self, name: str) -> WireStyle:
        style = self._made.get(name)
        if style is None:
            module, cls = _REGISTRY[name]
            made = getattr(importlib.import_module(f".{module}", __name__), cls)()
            style = self._made[name] = made
        return style

    def __iter__(self) -> Iterator[str]:
        return iter(_REGISTRY)

    def __len__(self) -> int:
        return len(_REGISTRY)


STYLES: Mapping[str, WireStyle] = _Styles()


def wire_style(style: str) -> WireStyle:
    try:
        return STYLES[style]
    except KeyError:
        choices = ", ".join(repr(name) for name in STYLES)
        raise ValueError(f"unknown style {style!r}: use one of {choices}") from None
