"""Hooks: a host's chance to look at or change each model call and each tool call.

`hooks` may be a dict (`HookFunctions`) or any object with some of these callables (sync or
async); each payload is the TypedDict of the same name (`BeforeLlm`, ...), and what a hook
may return to change the call is the one named `...Changes` (None: no change):

- before_llm({messages, tools, model, turn}) -> None | {"messages"?, "tools"?, "model"?}
  (replacements apply to that request only; the transcript is not changed)
- after_llm({response, model, turn, usage}) -> None | {"response": assistant message}
- before_tool({name, args, id, turn}) -> None | {"result": ToolResult} | {"args": dict}
- after_tool({name, args, result, id, turn}) -> None | ToolResult | {"result": ToolResult}

What a hook returns is still checked: a value of another shape changes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from .tools.tool import ToolResult

from ._callbacks import maybe_await
from .types import AssistantMessage, Message, Usage

__all__ = [
    "HOOK_NAMES",
    "AfterLlm",
    "AfterLlmChanges",
    "AfterTool",
    "AfterToolChanges",
    "BeforeLlm",
    "BeforeLlmChanges",
    "BeforeTool",
    "BeforeToolChanges",
    "HookFunctions",
    "HookSource",
    "Hooks",
]

HOOK_NAMES = ("before_llm", "after_llm", "before_tool", "after_tool")

ProviderTool = dict[str, Any]  # a tool as the wire style sends it (its provider's shape)


class BeforeLlm(TypedDict):
    messages: list[Message]  # what is sent: the thread without its dropped messages
    tools: list[ProviderTool]
    model: str
    turn: int


class BeforeLlmChanges(TypedDict, total=False):
    messages: list[Message]
    tools: list[ProviderTool]
    model: str


class AfterLlm(TypedDict):
    response: AssistantMessage
    model: str
    turn: int
    usage: Usage


class AfterLlmChanges(TypedDict):
    response: AssistantMessage


class BeforeTool(TypedDict):
    name: str
    args: Any  # a dict, or the raw text when the model sent no JSON object
    id: str
    turn: int


class BeforeToolChanges(TypedDict, total=False):
    result: ToolResult | str  # the call's result: the tool does not run
    args: Any  # what the tool runs with instead


class AfterTool(TypedDict):
    name: str
    args: Any
    result: ToolResult
    id: str
    turn: int


class AfterToolChanges(TypedDict):
    result: ToolResult | str


Payload = BeforeLlm | AfterLlm | BeforeTool | AfterTool


class HookFunctions(TypedDict, total=False):
    """The dict form of `hooks`; an object with methods of these names serves as well."""

    before_llm: Callable[[BeforeLlm], BeforeLlmChanges | None | Awaitable[BeforeLlmChanges | None]]
    after_llm: Callable[[AfterLlm], AfterLlmChanges | None | Awaitable[AfterLlmChanges | None]]
    before_tool: Callable[
        [BeforeTool], BeforeToolChanges | None | Awaitable[BeforeToolChanges | None]
    ]
    after_tool: Callable[
        [AfterTool],
        AfterToolChanges
        | ToolResult
        | str
        | None
        | Awaitable[AfterToolChanges | ToolResult | str | None],
    ]


HookSource = HookFunctions | object  # the dict, or an object with some of those methods


def apply_request_changes(request: BeforeLlm, returned: Any) -> None:
    """Apply what a before_llm hook returned to `request`: the keys it may replace (any
    other is ignored), with the values it gave."""
    if not isinstance(returned, dict):
        return
    if "messages" in returned:
        request["messages"] = returned["messages"]
    if "tools" in returned:
        request["tools"] = returned["tools"]
    if "model" in returned:
        request["model"] = returned["model"]


class Hooks:
    def __init__(self, source: HookSource | None = None) -> None:
        self._fns: dict[str, Callable[[Payload], Any]] = {}
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

    async def call(self, name: str, payload: Payload) -> Any:
        """What the hook `name` returned (None without one): unchecked, from the host."""
        fn = self._fns.get(name)
        if fn is None:
            return None
        return await maybe_await(fn(payload))
