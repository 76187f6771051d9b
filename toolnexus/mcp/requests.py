"""Who answers what an MCP server asks of toolnexus: elicitation (some input from the
person) and sampling (a message from the model). The host sets them on the pool
(`pool.requests.elicit = ...`); unset, an elicitation is declined and a sampling request
refused. Both are still advertised, so servers offer the tools that need them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Elicit",
    "Refused",
    "Sample",
    "ServerRequests",
]

# (server name, the request in wire shape: {mode, message, requestedSchema | url}) ->
# {action: "accept" | "decline" | "cancel", content?}
Elicit = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
# (server name, sampling/createMessage params in wire shape) -> a CreateMessageResult in
# wire shape ({role, content, model, stopReason}); raising refuses, saying why
Sample = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass
class ServerRequests:
    elicit: Elicit | None = None
    sample: Sample | None = None


class Refused(Exception):
    """What a Sample raises to refuse a request: its text goes back to the server."""
