"""Wire formats: canonical transcript <-> one provider style, requests and replies.

Each style module offers the same functions: `endpoint`, `auth_headers`, `build_body`,
`parse_reply`, `error_message`, `stream_error`, the `PREAMBLE_EVENTS` a stream may start
with, and a `Stream` class that assembles SSE events.
"""

from __future__ import annotations

from types import ModuleType

from . import anthropic, openai

STYLES: dict[str, ModuleType] = {"openai": openai, "anthropic": anthropic}


def style_module(style: str) -> ModuleType:
    try:
        return STYLES[style]
    except KeyError:
        raise ValueError(
            f"unknown style {style!r}: use 'openai' or 'anthropic'"
        ) from None
