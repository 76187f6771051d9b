"""What tokens cost: a model's prices and the cost of a usage dict at them.

Prices are USD per million tokens. Usage follows the keys every wire style fills in:
`prompt_tokens` is the whole prompt, of which `cached_tokens` were read from the provider's
cache and `cache_write_tokens` written to it; `completion_tokens` includes reasoning.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from ..types import Usage

if TYPE_CHECKING:
    from ..types import RunResult

__all__ = [
    "Price",
    "cost",
    "thread_cost",
    "turn_cost",
]

PER = Decimal(1_000_000)
# Anthropic bills a 5-minute cache write at 1.25 times the input price; the other providers
# report no writes, so the default only applies where writes are counted.
CACHE_WRITE_FACTOR = Decimal("1.25")


@dataclass(frozen=True)
class Price:
    """A model's prices in USD per million tokens. `cached_input` defaults to `input` (no
    discount known) and `cache_write` to `input` x 1.25."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cached_input", "cache_write"):
            value = getattr(self, name)
            if value is None and name in ("cached_input", "cache_write"):
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ValueError(
                    f"price {name} must be a number of USD per million tokens, "
                    f"0 or more, not {value!r}"
                )


def _usd(value: float) -> Decimal:
    return Decimal(str(value))  # 2.5 stays 2.5 (not its binary neighbour)


def cost(usage: Usage, price: Price) -> float:
    """The USD cost of `usage` at `price`. Cache reads and writes are part of the prompt
    and billed at their own prices; the rest of the prompt at the input price."""
    prompt, cached = usage.get("prompt_tokens", 0), usage.get("cached_tokens", 0)
    written = usage.get("cache_write_tokens", 0)
    uncached = max(prompt - cached - written, 0)  # a reply may not add up
    base = _usd(price.input)
    cached_rate = _usd(price.cached_input) if price.cached_input is not None else base
    write_rate = (
        _usd(price.cache_write) if price.cache_write is not None else base * CACHE_WRITE_FACTOR
    )
    total = (
        uncached * base
        + cached * cached_rate
        + written * write_rate
        + usage.get("completion_tokens", 0) * _usd(price.output)
    )
    return float(total / PER)


def turn_cost(result: RunResult, price: Price) -> float:
    """What one run (every model call of it) cost."""
    return cost(result.usage, price)


def thread_cost(usage: Usage, price: Price) -> float:
    """What a thread cost so far, from its usage summed over every turn (a store's
    `ThreadInfo.usage`), all at one model's price."""
    return cost(usage, price)
