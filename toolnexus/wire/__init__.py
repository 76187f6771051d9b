"""Wire formats: canonical transcript <-> one provider style. A style is a WireStyle
(wire/base.py) in its own module, plus one line in STYLES."""

from __future__ import annotations

from .anthropic import AnthropicStyle
from .base import ModelReply, StreamAssembler, ToolSpec, WireStyle
from .openai import OpenAIStyle
from .responses import ResponsesStyle

__all__ = ["STYLES", "ModelReply", "StreamAssembler", "ToolSpec", "WireStyle", "wire_style"]

STYLES: dict[str, WireStyle] = {
    "openai": OpenAIStyle(),
    "anthropic": AnthropicStyle(),
    "responses": ResponsesStyle(),
}


def wire_style(style: str) -> WireStyle:
    try:
        return STYLES[style]
    except KeyError:
        choices = ", ".join(repr(name) for name in STYLES)
        raise ValueError(f"unknown style {style!r}: use one of {choices}") from None
