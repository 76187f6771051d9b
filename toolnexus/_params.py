"""Request options a user passes through to the endpoint: checking them, and typing them
from text (a command line's `-o key value`)."""

from __future__ import annotations

import json
import math
from typing import Any

# Keys the loop itself writes: a user value would break the run, not tune it.
RESERVED_PARAMS = frozenset({"messages", "tools", "stream"})


def check_request_params(params: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of `params`; ValueError when one sets a reserved key."""
    params = dict(params or {})
    reserved = RESERVED_PARAMS & params.keys()
    if reserved:
        raise ValueError(f"request_params may not set {', '.join(sorted(reserved))}")
    return params


def parse_option_value(text: str) -> Any:
    """An option's value typed as JSON (`0.2`, `500`, `true`, `null`, `["a"]`, `{...}`),
    else the text itself as a string. NaN and Infinity (also `1e400`, too large for a float)
    stay strings: JSON has no such numbers, so the request body could not carry them."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except ValueError:
        return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is too large for a float")
    return number
