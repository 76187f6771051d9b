"""Wire formats: canonical transcript <-> one provider style. A style is a WireStyle
(wire/base.py), registered by name with `register_style` (wire/_registry.py) or passed as
an object wherever a name goes. The built-in styles' modules are imported when the style is
first asked for, so a run loads only the one it speaks."""

from __future__ import annotations

import importlib

from ._registry import KEY_ENVS, STYLES, StyleFactory, register_style, wire_style
from .base import ModelReply, StreamAssembler, ToolSpec, WireStyle

__all__ = [
    "KEY_ENVS",
    "STYLES",
    "ModelReply",
    "StreamAssembler",
    "StyleFactory",
    "ToolSpec",
    "WireStyle",
    "register_style",
    "wire_style",
]


def _built_in(module: str, cls: str) -> StyleFactory:
    """A factory that imports this package's `module` and makes its `cls`."""

    def make() -> WireStyle:
        style: WireStyle = getattr(importlib.import_module(f".{module}", __name__), cls)()
        return style

    return make


register_style("openai", _built_in("openai", "OpenAIStyle"), key_env="OPENAI_API_KEY")
register_style("anthropic", _built_in("anthropic", "AnthropicStyle"), key_env="ANTHROPIC_API_KEY")
register_style("responses", _built_in("responses", "ResponsesStyle"), key_env="OPENAI_API_KEY")
