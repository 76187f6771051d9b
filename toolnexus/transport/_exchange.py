"""Transport: one model call over httpx2, from the request to the reply, retried as
_retries.py says, every wait interruptible by the run's control.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .._bounded_json import loads_bounded
from .._control import RunControl
from ..errors import IdleTimeout, ProviderError, ToolnexusError
from ..events import retry_event
from ..options import Retries, Timeouts
from ..types import RetryEvent
from ._body import (
    MAX_DECOMPRESSED_BYTES,
    body_start,
    check_status,
    is_compressed,
    read_json,
    read_sse,
    reads_as_json,
    unexpected,
)
from ._channel import DATA, END, FAIL, HEAD, Channel, hang_up
from ._connections import NO_HEADERS, USER_AGENT, Pool, new_pool, socks_errors_mapped
from ._failures import http_failure, transport_failure
from ._local import answered
from ._replies import JsonReply, Reply, Retrying, StreamEnd, StreamError, StreamEvents
from ._retries import MAX_BUSY_WAIT_S, LoadCheck, Retryable, output_begins, retry_delay

if TYPE_CHECKING:
    import httpx2

    from ..wire.base import Answerer
    from ._direct import HttpResponse


# How long the rest of a stream's body is read after its last event: long enough for a
# server that ends the body there, short for one that keeps the connection open.
STREAM_END_GRACE_S = 0.5


class Transport:
    def __init__(
        self,
        *,
        retries: Retries,
        timeouts: Timeouts,
        describe_error: Callable[[int, str | None], ProviderError],
        http_client: httpx2.AsyncClient | None = None,
        load_check: LoadCheck | None = None,
        answerer: Answerer | None = None,
    ) -> None:
        self.retries = retries
        self.timeouts = timeouts
        self.describe_error = describe_error
        self.load_check = load_check  # asked before retrying after an idle timeout
        self._caller_client = http_client  # the caller's: used, never closed
        self._answerer = answerer  # a model in this process: no HTTP at all
        self._pools: dict[tuple[asyncio.AbstractEventLoop, bool], Pool] = {}
        self._timeout: httpx2.Timeout | None = None
        self._timeout_extension: dict[str, float | None] | None = None

    def _pool(self, url: str) -> Pool:
        """The connection pool of the running event loop for `url` (connections belong to
        one loop): one for https URLs, one for plain http ones, which never loads the TLS
        trust store."""
        key = (asyncio.get_running_loop(), url[:6].lower() == "https:")
        pool = self._pools.get(key)
        if pool is None:
            for stale in [k for k in self._pools if k[0].is_closed()]:
                del self._pools[stale]
            pool = self._pools[key] = new_pool(secure=key[1])
        return pool

    def _request_timeout(self) -> httpx2.Timeout:
        if self._timeout is None:
            import httpx2

            self._timeout = httpx2.Timeout(
                connect=self.timeouts.connect_s,
                read=self.timeouts.idle_s,
                write=self.timeouts.idle_s,
                pool=self.timeouts.connect_s,
            )
        return self._timeout

    async def _open(
        self, method: str, url: str, headers: dict[str, str], content: bytes | None = None
    ) -> HttpResponse:
        """Send one request; the response, its body unread. A caller's client, or ours
        behind a proxy, gets it through `send` (auth, hooks, cookies and proxy mounts
        apply). With no proxy our client has none of those and never follows a redirect,
        so the request goes straight to its transport (_direct.py: httpcore2's pool,
        TLS and limits), with no httpx2.Request or Response built around it."""
        headers = {"user-agent": USER_AGENT, **headers}
        client, direct, defaults = self._caller_client, None, NO_HEADERS
        if client is None:
            client, direct, defaults = self._pool(url)
        with socks_errors_mapped():
            if direct is None:
                request = client.build_request(
                    method, url, content=content, headers=headers, timeout=self._request_timeout()
                )
                return await client.send(request, stream=True, follow_redirects=False)
            if self._timeout_extension is None:
                self._timeout_extension = self._request_timeout().as_dict()
            return await direct.open(
                method,
                url,
                {**defaults, **{k.lower(): v for k, v in headers.items()}},
                content,
                self._timeout_extension,
            )

    async def aclose(self) -> None:
        """Close this loop's own connection pools (a caller's client stays open)."""
        loop = asyncio.get_running_loop()
        for secure in (False, True):
            pool = self._pools.pop((loop, secure), None)
            if pool is not None:
                await pool.client.aclose()

    async def send(
        self,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
        control: RunControl,
        *,
        stream_error: StreamError | None = None,
        preamble: frozenset[str] = frozenset(),
        stream_end: StreamEnd | None = None,
    ) -> AsyncGenerator[Reply]:
        """Yield Retrying before each retry, then the reply: one JsonReply, or a series of
        StreamEvents.

        `stream_error(event, data)` tells an error sent inside a stream. An overloaded
        server often answers 200 and then sends an error before any output (only events
        named in `preamble` may come first): that is retried like an HTTP error.
        `stream_end(event, data)` tells the protocol's last event: the stream ends there,
        as the official SDKs end it, even if the server keeps the connection open: what
        follows is read for at most STREAM_END_GRACE_S (a body that ends there keeps its
        connection for the next request), then the response is closed unread, and its
        connection with it (never reused)."""
        attempt = 0
        while True:
            control.check()
            started = False
            try:
                replies = self._attempt(url, headers, body, control, stream_end)
                async with contextlib.aclosing(replies):
                    async for reply in replies:
                        if (
                            isinstance(reply, StreamEvents)
                            and not started
                            and stream_error is not None
                        ):
                            started = output_begins(reply.events, stream_error, preamble)
                        else:
                            started = True
                        yield reply
                return
            except Retryable as failure:
                if started:
                    raise failure.error from None
                attempt += 1
                delay = await retry_delay(self.retries, failure, attempt, control)
                if isinstance(failure.error, IdleTimeout):
                    async for event in self._while_busy(headers, control, attempt):
                        yield Retrying(event)
                yield Retrying(retry_event(attempt, self.retries.count, delay, failure.reason))
                await control.sleep(delay)

    def _attempt(
        self,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
        control: RunControl,
        stream_end: StreamEnd | None,
    ) -> AsyncGenerator[JsonReply | StreamEvents]:
        """One try: the reply, from the answerer in this process or over HTTP."""
        if self._answerer is not None:
            return answered(self._answerer, body, control)
        return self._exchange(url, headers, body, control, stream_end)

    async def _exchange(
        self,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
        control: RunControl,
        stream_end: StreamEnd | None,
    ) -> AsyncGenerator[JsonReply | StreamEvents]:
        """One HTTP request and its reply; raises Retryable for a failure worth another
        try. A stream ends at its protocol's last event (see `send`)."""
        channel, stop_reading = await self._reply_channel(url, headers, body, control)
        try:
            kind, *head = await channel.get()
            if kind != HEAD:
                unexpected(kind, head, control)
            start = await body_start(channel)
            if reads_as_json(start, content_type=head[0], expects_json=head[1]):
                yield JsonReply(await read_json(channel, control))
                return
            async for events in read_sse(channel, control):
                last = _end_of(events, stream_end)
                if last is not None:
                    yield StreamEvents(events[: last + 1])
                    await _rest_of_body(channel)
                    return
                yield StreamEvents(events)
        finally:
            if stop_reading is not None:
                await stop_reading()

    async def _while_busy(
        self, headers: dict[str, str], control: RunControl, attempt: int
    ) -> AsyncIterator[RetryEvent]:
        """Wait while the server says it is still busy (with the request that timed out,
        likely): a retry now would queue behind it. A retry event each time it is asked."""
        check, poll = self.load_check, self.retries.busy_poll_s
        waited = 0.0
        while check is not None and waited < MAX_BUSY_WAIT_S:
            reason = check.read(await self.get_json(check.url, headers, control))
            if reason is None:
                return
            yield retry_event(attempt, self.retries.count, poll, reason)
            await control.sleep(poll)
            waited += poll

    async def _reply_channel(
        self, url: str, headers: dict[str, str], body: dict[str, Any], control: RunControl
    ) -> tuple[Channel, Callable[[], Awaitable[None]] | None]:
        """The channel the reply comes through, and what stops its reader task (None: the
        reply is in the channel already)."""
        if body.get("stream"):
            channel = Channel()
            return channel, self._start_reading(channel, url, headers, body, control)
        # A reply not streamed is read whole in this task (no reader task, no hand-over
        # per chunk), then taken from the channel as a stream is. An interruption cancels
        # the read and comes after what was read: a reply streamed anyway keeps the
        # partial answer it got to.
        channel = Channel(limit=None)
        try:
            with control.interrupting():
                await self._produce(channel, url, headers, body)
        except ToolnexusError as interrupted:
            await channel.put((FAIL, interrupted))
        return channel, None

    def _start_reading(
        self,
        channel: Channel,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
        control: RunControl,
    ) -> Callable[[], Awaitable[None]]:
        """The reply read into `channel` by a task of its own, stopped by an interruption
        of the run; returns what stops it and waits until it stopped."""
        producer = asyncio.get_running_loop().create_task(
            self._produce(channel, url, headers, body)
        )
        unsubscribe = control.subscribe(channel.interrupt)
        # If the run ends while the generator reading the channel is left suspended (the
        # loop raised, or its consumer stopped reading), nobody resumes it to stop the
        # reader until the garbage collector does: hang up now instead.
        forget = control.on_close(lambda: hang_up(producer))

        async def stop() -> None:
            unsubscribe()
            forget()
            if not producer.done():
                hang_up(producer)
                await asyncio.gather(producer, return_exceptions=True)

        return stop

    async def _produce(
        self,
        channel: Channel,
        url: str,
        headers: dict[str, str],
        body: dict[str, Any],
    ) -> None:
        """The reply into `channel`: its head, its body as it comes, then its end; or the
        failure. A stream's body is limited by its events (_sse.py) unless it is
        compressed; a body held whole (not streamed), or inflated, by its size."""
        response: HttpResponse | None = None
        try:
            content = json.dumps(body, ensure_ascii=False).encode()
            response = await self._open(
                "POST", url, {"content-type": "application/json", **headers}, content
            )
            content_type = check_status(response, url)
            if response.status_code >= 400:
                raise await http_failure(response, self.describe_error)
            whole = not body.get("stream")
            await channel.put((HEAD, content_type, whole))
            compressed = is_compressed(response)
            limit = MAX_DECOMPRESSED_BYTES if compressed or whole else None
            size = 0
            async for chunk in response.aiter_bytes():
                if limit is not None:
                    size += len(chunk)
                    if size > limit:
                        grows = "inflates to" if compressed else "is"
                        raise ProviderError(
                            f"the endpoint's reply {grows} more than {limit >> 20} MiB"
                        )
                if not channel.offer((DATA, chunk)):
                    await channel.put((DATA, chunk))
            await channel.put((END,))
        except asyncio.CancelledError:
            raise
        except Retryable as failure:
            await channel.put((FAIL, failure))
        except Exception as exc:  # a transport failure, a ProviderError, or a bug: never hang
            await channel.put((FAIL, transport_failure(exc, url, self.timeouts.idle_s)))
        finally:
            if response is not None:
                await response.aclose()

    async def get_json(
        self,
        url: str,
        headers: dict[str, str],
        control: RunControl,
        *,
        limit: int = 8 * 1024 * 1024,
    ) -> Any:
        """One GET (no retries) for endpoint metadata: the JSON body of a 200 answer, or
        None for any other answer, a body over `limit` bytes, or a failed connection.
        Only an interruption of the run is raised. A model answering in this process
        has no such metadata: None."""
        if self._answerer is not None:
            return None
        import httpx2

        async def fetch() -> Any:
            response = await self._open("GET", url, headers)
            try:
                if response.status_code != 200:
                    return None
                raw = b""
                async for chunk in response.aiter_bytes():
                    raw += chunk
                    if len(raw) > limit:
                        return None
                return loads_bounded(raw)
            finally:
                await response.aclose()

        try:
            return await control.race(fetch())
        except (httpx2.HTTPError, httpx2.InvalidURL, ValueError):
            return None


async def _rest_of_body(channel: Channel) -> None:
    """After the protocol's last event: the rest of the body, if it ends within
    STREAM_END_GRACE_S (its connection is then whole, for the pool to give out again)."""
    try:
        async with asyncio.timeout(STREAM_END_GRACE_S):
            while (await channel.get())[0] == DATA:
                pass
    except TimeoutError:
        pass


def _end_of(events: list[tuple[str, str]], stream_end: StreamEnd | None) -> int | None:
    """The index of the protocol's last event among `events`, if it is there."""
    if stream_end is not None:
        for index, (event, data) in enumerate(events):
            if stream_end(event, data):
                return index
    return None
