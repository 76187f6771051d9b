"""What `Transport.send` yields: a retry about to be made (Retrying), then the reply: one
JSON body (JsonReply) or server-sent events as they are read (StreamEvents).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ProviderError
from ..types import RetryEvent

StreamError = Callable[[str, str], ProviderError | None]
StreamEnd = Callable[[str, str], bool]  # whether an (event, data) is the stream's last


@dataclass(frozen=True, slots=True)
class Retrying:
    """A retry is about to be made: the event that says so."""

    event: RetryEvent


@dataclass(frozen=True, slots=True)
class JsonReply:
    """A whole JSON reply."""

    data: Any  # the parsed body, whatever JSON it is


@dataclass(frozen=True, slots=True)
class StreamEvents:
    """Server-sent events as they are read."""

    events: list[tuple[str, str]]  # (event, data) of the server-sent events read so far


Reply = Retrying | JsonReply | StreamEvents
