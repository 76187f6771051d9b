"""What `Transport.send` yields: a retry about to be made (Retrying), then the reply: one
JSON body (JsonReply) or server-sent events as they are read (StreamEvents).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import ProviderError
from ..types import RetryEvent

if TYPE_CHECKING:
    pass


StreamError = Callable[[str, str], ProviderError | None]
StreamEnd = Callable[[str, str], bool]  # whether an (event, data) is the stream's last


# What `Transport.send` yields: a retry about to be made, then the reply.


class Retrying(NamedTuple):
    event: RetryEvent


class JsonReply(NamedTuple):
    data: Any  # the parsed body, whatever JSON it is


class StreamEvents(NamedTuple):
    events: list[tuple[str, str]]  # (event, data) of the server-sent events read so far


Reply = Retrying | JsonReply | StreamEvents
