"""ClientOptions: a client's tuning in one frozen value, checked when it is made.

    options = ClientOptions(max_turns=4, reasoning="low", retries=Retries(count=5))
    client = create_client(base_url=..., style="openai", model=..., options=options)

Each field is also a keyword of create_client; a keyword passed there wins over the field
of `options` (`dataclasses.replace` makes a variant of a value kept for many clients).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from ._params import check_request_params
from .context.keeper import ContextPolicy
from .options import Retries, Timeouts
from .tools._tool_search import DEFAULT_SHARE
from .wire.base import ReasoningLevel, check_reasoning

__all__ = ["FROM_OPTIONS", "ClientOptions", "FromOptions"]

DEFAULT_CONTEXT: Final = ContextPolicy()


class FromOptions(enum.Enum):
    """The default of create_client's tuning keywords: the field of its `options` is used."""

    FROM_OPTIONS = "from options"


FROM_OPTIONS: Final = FromOptions.FROM_OPTIONS


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """How a client runs: at most `max_turns` model calls a run; of one reply's tool calls
    at most `max_tool_calls_per_reply` run, and `max_tool_calls_per_run` in a whole run;
    `reasoning` ("off", "low", "medium", "high"); `request_params`, body keys sent as given
    over the style's defaults; `timeouts` and `retries`; `context`, how requests are kept
    inside the model's window (None: everything is sent), whose size `context_window`
    states in tokens when the endpoint does not; `prompt_cache`, whether the prompt is
    marked for the provider's cache where that must be asked for; `tool_search`, the share
    of the window MCP tool schemas may take before they are offered by name only (None:
    always sent whole)."""

    max_turns: int = 10
    max_tool_calls_per_reply: int = 32
    max_tool_calls_per_run: int = 256
    reasoning: ReasoningLevel = "off"
    request_params: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    timeouts: Timeouts = Timeouts()
    retries: Retries = Retries()
    context: ContextPolicy | None = DEFAULT_CONTEXT
    context_window: int | None = None
    prompt_cache: bool = True
    tool_search: float | None = DEFAULT_SHARE

    def __post_init__(self) -> None:
        for name in ("max_turns", "max_tool_calls_per_reply", "max_tool_calls_per_run"):
            _at_least_one(name, getattr(self, name))
        check_reasoning(self.reasoning)
        params = check_request_params(dict(self.request_params))
        object.__setattr__(self, "request_params", MappingProxyType(params))
        if not isinstance(self.timeouts, Timeouts):
            raise TypeError(f"timeouts must be a Timeouts, not {type(self.timeouts).__name__}")
        if not isinstance(self.retries, Retries):
            raise TypeError(f"retries must be a Retries, not {type(self.retries).__name__}")
        share = self.tool_search
        if share is not None and (isinstance(share, bool) or not 0 <= share <= 1):
            raise ValueError(f"tool_search must be a share from 0 to 1, or None, not {share!r}")


def _at_least_one(name: str, count: object) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"{name} must be a whole number of at least 1, not {count!r}")


def with_given(options: ClientOptions, **given: object) -> ClientOptions:
    """`options` with each field given a value other than FROM_OPTIONS set to it."""
    changes: dict[str, Any] = {k: v for k, v in given.items() if v is not FROM_OPTIONS}
    return dataclasses.replace(options, **changes) if changes else options
