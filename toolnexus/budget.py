"""A spending limit in USD shared by every model call it is given to (a run, a chat, the
subagents a run starts): before a call, its worst case is checked against what is left;
after it, what it really cost is spent.

    budget = Budget(0.50)
    budget.check(worst_case)  # raises BudgetExceeded when worst_case > budget.left
    budget.spend(usd)

`create_client(budget=..., price=...)` makes the loop do both around each model call: the
worst case is the prompt (estimated) at the model's input price plus the request's reply
limit (`max_tokens`, or REPLY_TOKENS_ASSUMED when the request sets none) at its output price.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import ToolnexusError

if TYPE_CHECKING:
    from .context.pricing import Price

__all__ = [
    "Budget",
    "BudgetExceeded",
]

REPLY_TOKENS_ASSUMED = 4096  # a request that sets no reply limit is counted as this long


class BudgetExceeded(ToolnexusError):
    """The next model call could cost more than the budget has left; the run stops before
    it, its transcript in `.result` as with any error. `limit`, `spent` and `worst_case`
    are USD."""

    kind = "budget"

    def __init__(self, limit: float, spent: float, worst_case: float) -> None:
        self.limit, self.spent, self.worst_case = limit, spent, worst_case
        super().__init__(
            f"the budget of {usd(limit)} would be passed: {usd(spent)} spent, and the next "
            f"model call could cost up to {usd(worst_case)}"
        )


class Budget:
    """`limit_usd` to spend in all; `spent` so far. One object may serve several clients
    (a chat and its subagents) so that they all count against it."""

    def __init__(self, limit_usd: float) -> None:
        if isinstance(limit_usd, bool) or not isinstance(limit_usd, int | float):
            raise ValueError(f"a budget is a number of USD, not {limit_usd!r}")
        if not limit_usd > 0:
            raise ValueError(f"a budget must be more than 0 USD, not {limit_usd!r}")
        self.limit = float(limit_usd)
        self.spent = 0.0

    @property
    def left(self) -> float:
        return max(self.limit - self.spent, 0.0)

    def check(self, worst_case: float) -> None:
        """Raise BudgetExceeded unless a call costing `worst_case` USD fits in what is left."""
        if worst_case > self.left:
            raise BudgetExceeded(self.limit, self.spent, worst_case)

    def spend(self, usd: float) -> None:
        self.spent += usd


def call_worst_case(prompt_tokens: int, reply_tokens: int | None, price: Price) -> float:
    """The most a call sending `prompt_tokens` and allowing `reply_tokens` (None: the
    request sets no limit) can cost at `price`."""
    from .context.pricing import cost

    reply = REPLY_TOKENS_ASSUMED if reply_tokens is None else reply_tokens
    return cost({"prompt_tokens": prompt_tokens, "completion_tokens": reply}, price)


def usd(amount: float) -> str:
    """`amount` as a person reads a small sum: $0.0042, $1.25."""
    return f"${amount:.4f}" if amount < 1 else f"${amount:.2f}"
