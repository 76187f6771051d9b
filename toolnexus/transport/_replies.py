"""What `Transport.send` yields: a retry about to be made (Retrying), then the reply: one
JSON body (JsonReply) or server-sent events as they are read (StreamEvents).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ProviderError
from ..types import RetryEvent

if TYPE_CHECKING:
    pass


StreamError = Callable[[str, str], ProviderError | None]
StreamEnd = Callable[[str, str], bool]  # whether an (event, data) is the stream's last


# What `Transport.send` yields: a retry about to be made, then the reply.


@dataclass(frozen=True, slots=True)
class Retrying:
    event: RetryEvent


@dataclass(frozen=True, slots=True)
class JsonReply:
    data: Any  # the parsed body, whatever JSON it is


@dataclass(frozen=True, slots=True)
class StreamEvents:
    events: list[tuple[str, str]]  # (event, data) of the server-sent events read so far


Reply = Retrying | JsonReply | StreamEvents
