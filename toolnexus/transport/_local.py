"""A model call answered in this process (a WireStyle's `answerer`, toolnexus.testing's
scripted model): no HTTP, but the same replies, retries and interruptions as over HTTP.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

from .._control import RunControl
from ..errors import ProviderError
from ._replies import JsonReply, StreamEvents
from ._retries import Retryable, retryable_status

if TYPE_CHECKING:
    from ..wire.base import Answerer


async def answered(
    answerer: Answerer, body: dict[str, Any], control: RunControl
) -> AsyncGenerator[JsonReply | StreamEvents]:
    """The answerer's reply to `body`, each wait interruptible by the run. A ProviderError
    it raises is retried when an HTTP answer of its status would be."""
    try:
        if not body.get("stream"):
            yield JsonReply(await control.race(answerer.reply(body)))
            return
        events = answerer.events(body)
        async with contextlib.aclosing(events):
            while True:
                event = await control.race(anext(events, None))
                if event is None:
                    return
                yield StreamEvents([event])
    except ProviderError as error:
        if not retryable_status(error.status):
            raise
        reason = "rate limited" if error.status == 429 else f"the model answered {error.status}"
        raise Retryable(error, reason, error.retry_after) from None
