"""Hooks: a host's chance to look at or change each model call and each tool call.

`hooks` may be a dict or any object with some of these callables (sync or async):

- before_llm({messages, tools, model, turn}) -> None | {"messages"?, "tools"?, "model"?}
  (replacements apply to that request only; the transcript is not changed)
- after_llm({response, model, turn}) -> None | {"response": assistant message}
- before_tool({name, args, id, turn}) -> None | {"result": ToolResult} | {"args": dict}
- after_tool({name, args, result, id, turn}) -> None | ToolResult | {"result": ToolResult}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._await import maybe_await

HOOK_NAMES = ("before_llm", "after_llm", "before_tool", "after_tool")


class Hooks:
    def __init__(self, source: Any = None) -> None:
        self._fns: dict[str, Callable[[dict[str, Any]], Any]] = {}
        if isinstance(source, Hooks):
            self._fns = dict(source._fns)
            return
        if source is None:
            return
        for name in HOOK_NAMES:
            fn = source.get(name) if isinstance(source, dict) else getattr(source, name, None)
            if fn is not None:
                self._fns[name] = fn
        if isinstance(source, dict):
            unknown = set(source) - set(HOOK_NAMES)
            if unknown:
                raise ValueError(
                    f"unknown hook {sorted(unknown)[0]!r}: hooks are {', '.join(HOOK_NAMES)}"
                )

    def __contains__(self, name: str) -> bool:
        return name in self._fns

    async def call(self, name: str, payload: dict[str, Any]) -> Any:
        fn = self._fns.get(name)
        if fn is None:
            return None
        return await maybe_await(fn(payload))
