"""What the scripted transport needs of one wire format: the request read back into a
ModelRequest, a whole reply's JSON, a streamed reply's events, and an error's JSON body."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ProviderError
from ._script import ModelRequest, ScriptedReply


@dataclass(frozen=True, slots=True)
class WireFormat:
    read_request: Callable[[dict[str, Any]], ModelRequest]
    whole_reply: Callable[[ScriptedReply, str], dict[str, Any]]
    stream: Callable[[ScriptedReply, str], AsyncIterator[bytes]]
    error_body: Callable[[ProviderError], dict[str, Any]]


def sse_event(data: dict[str, Any], event: str | None = None) -> bytes:
    """One server-sent event: its name, if any, and its JSON data."""
    named = f"event: {event}\n" if event else ""
    return f"{named}data: {json.dumps(data)}\n\n".encode()
