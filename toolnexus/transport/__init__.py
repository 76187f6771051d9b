"""The HTTP exchange with a model endpoint over httpx2: retries, Retry-After, timeouts,
cancellation, and limits on what a reply may be.

A producer task reads the response into a bounded channel; the run consumes it. That way
a cancel or a deadline can abandon the read at once (the connection is closed) without
cancelling the caller's own task, and a fast server cannot outrun a slow consumer.

httpx2 is imported when the first request is made, never at import time: a command that
makes no model call does not pay for it.

One module a job, all internal: `_exchange` (Transport: one call, retried), `_retries`
(when and how soon), `_channel` and `_body` (the body on its way in, read as JSON or SSE),
`_failures` (what went wrong, as a ProviderError), `_connections` (pools, proxies, TLS),
`_network` (httpcore2 on asyncio's transports when no proxy applies) and `_direct` (a model
call's request straight to that pool), `_replies` (what `send` yields) and `_checks` (what
is refused before any connection).
"""

from ._checks import check_endpoint, check_headers, header_value_problem
from ._exchange import Transport
from ._replies import JsonReply, Reply, Retrying, StreamError, StreamEvents
from ._retries import LoadCheck, parse_retry_after

__all__ = [
    "JsonReply",
    "LoadCheck",
    "Reply",
    "Retrying",
    "StreamError",
    "StreamEvents",
    "Transport",
    "check_endpoint",
    "check_headers",
    "header_value_problem",
    "parse_retry_after",
]
