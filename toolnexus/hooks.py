"""Hooks: a host's chance to look at or change each model call and each tool call.

`hooks` may be a dict (`HookFunctions`) or any object with some of these callables (sync or
async); each payload is the TypedDict of the same name (`BeforeLlm`, ...):

- before_llm({messages, tools, model, turn}) -> None | {"messages"?, "tools"?, "model"?}
  (replacements apply to that request only; the transcript is not changed)
- after_llm({response, model, turn, usage}) -> None | {"response": assistant message}
- before_tool({name, args, id, turn}) -> None | {"result": ToolResult} | {"args": dict}
- after_tool({name, args, result, id, turn}) -> None | ToolResult | {"result": ToolResult}
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from .tools.tool import ToolResult

from ._callbacks import maybe_await

__all__ = [
    "HOOK_NAMES",
    "AfterLlm",
    "AfterTool",
    "BeforeLlm",
    "BeforeTool",
    "HookFunctions",
    "HookSource",
    "Hooks",
]

HOOK_NAMES = ("before_llm", "after_llm", "before_tool", "after_tool")


class BeforeLlm(TypedDict):
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    model: str
    turn: int


class AfterLlm(TypedDict):
    response: dict[str, Any]  # the assistant message
    model: str
    turn: int
    usage: dict[str, int]


class BeforeTool(TypedDict):
    name: str
    args: Any
    id: str
    turn: int


class AfterTool(TypedDict):
    name: str
    args: Any
    result: ToolResult
    id: str
    turn: int


class HookFunctions(TypedDict, total=False):
    """The dict form of `hooks`; an object with methods of these names serves as well."""

    before_llm: Callable[[BeforeLlm], Any]
    after_llm: Callable[[AfterLlm], Any]
    before_tool: Callable[[BeforeTool], Any]
    after_tool: Callable[[AfterTool], Any]


HookSource = HookFunctions | object  # the dict, or an object with some of those methods


class Hooks:
    def __init__(self, source: HookSource | None = None) -> None:
        self._fns: dict[str, Callable[[dict[str, Any]], Any]] = {}
        if isinstance(source, Hooks):
            self._fns = dict(source._fns)
            return
        if source is None:
            return
        for name in HOOK_NAMES:
            fn: Any = source.get(name) if isinstance(source, dict) else getattr(source, name, None)
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
