"""The HTTP exchange with a model endpoint over httpx2: retries, Retry-After, timeouts,
cancellation, and limits on what a reply may be.

A producer task reads the response into a bounded channel; the run consumes it. That way
a cancel or a deadline can abandon the read at once (the connection is closed) without
cancelling the caller's own task, and a fast server cannot outrun a slow consumer.

httpx2 is imported when the first request is made, never at import time: a command that
makes no model call does not pay for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import random
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .bounded_json import TooDeep, loads_bounded
from .control import RunControl
from .errors import IdleTimeout, ProviderError
from .events import retry_event
from .options import Retries, Timeouts
from .sse import SSEDecoder
from .types import RetryEvent

if TYPE_CHECKING:
    import ssl

    import httpx2

    from .http_network import AsyncioTransport

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})
MAX_RETRY_AFTER_S = 60.0
ERROR_BODY_LIMIT = 64 * 1024
MAX_JSON_BYTES = 32 * 1024 * 1024
MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024  # a compressed body, once inflated
USER_AGENT = "toolnexus"
# Loopback endpoints (a local model server) are never reached through a proxy.
_DIRECT = {"all://127.0.0.1": None, "all://localhost": None, "all://[::1]": None}

_HEAD, _DATA, _END, _FAIL, _STOP = range(5)
_NO_HEADERS: dict[str, str] = {}


class _Channel:
    """A bounded single-producer, single-consumer queue whose consumer can be woken
    by an interruption even while the queue is empty or full."""

    def __init__(self, limit: int = 64) -> None:
        self._items: deque[tuple[Any, ...]] = deque()
        self._limit = limit
        self._getter: asyncio.Future[None] | None = None
        self._putter: asyncio.Future[None] | None = None

    @staticmethod
    def _wake(waiter: asyncio.Future[None] | None) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def put(self, item: tuple[Any, ...]) -> None:
        while len(self._items) >= self._limit:
            self._putter = asyncio.get_running_loop().create_future()
            await self._putter
        self._items.append(item)
        self._wake(self._getter)

    def interrupt(self) -> None:
        self._items.appendleft((_STOP,))
        self._wake(self._getter)

    async def get(self) -> tuple[Any, ...]:
        while not self._items:
            self._getter = asyncio.get_running_loop().create_future()
            await self._getter
        item = self._items.popleft()
        self._wake(self._putter)
        return item

    def unget(self, items: list[tuple[Any, ...]]) -> None:
        """Put items taken with `get` back at the front, in their order."""
        self._items.extendleft(reversed(items))

    def take_data(self) -> list[bytes]:
        """The data items at the front of the queue, without waiting: a reader that
        fell behind handles everything already received in one go."""
        items, taken = self._items, []
        while items and items[0][0] == _DATA:
            taken.append(items.popleft()[1])
        if taken:
            self._wake(self._putter)
        return taken


class _Retryable(Exception):
    def __init__(self, error: ProviderError, reason: str, delay: float | None = None) -> None:
        self.error = error
        self.reason = reason
        self.delay = delay  # what the server asked for, if it did


StreamError = Callable[[str, str], ProviderError | None]


# What `Transport.send` yields: a retry about to be made, then the reply.
@dataclass(frozen=True)
class Retrying:
    event: RetryEvent


@dataclass(frozen=True)
class JsonReply:
    data: Any  # the parsed body, whatever JSON it is


@dataclass(frozen=True)
class StreamEvents:
    events: list[tuple[str, str]]  # (event, data) of the server-sent events read so far


Reply = Retrying | JsonReply | StreamEvents


class LoadCheck(NamedTuple):
    """Where a server says how busy it is (a GET of JSON), and how to read why it cannot
    take a request now (None: it can, or it does not say)."""

    url: str
    read: Callable[[Any], str | None]


MAX_BUSY_WAIT_S = 600.0  # then the call is retried anyway


class Transport:
    def __init__(
        self,
        *,
        retries: Retries,
        timeouts: Timeouts,
        describe_error: Callable[[int, str | None], ProviderError],
        http_client: httpx2.AsyncClient | None = None,
        load_check: LoadCheck | None = None,
    ) -> None:
        self.retries = retries
        self.timeouts = timeouts
        self.describe_error = describe_error
        self.load_check = load_check  # asked before retrying after an idle timeout
        self._caller_client = http_client  # the caller's: used, never closed
        self._pools: dict[tuple[asyncio.AbstractEventLoop, bool], _Pool] = {}
        self._timeout: httpx2.Timeout | None = None
        self._timeout_extension: dict[str, float | None] | None = None

    def _pool(self, url: str) -> _Pool:
        """The connection pool of the running event loop for `url` (connections belong to
        one loop): one for https URLs, one for plain http ones, which never loads the TLS
        trust store."""
        key = (asyncio.get_running_loop(), url[:6].lower() == "https:")
        pool = self._pools.get(key)
        if pool is None:
            for stale in [k for k in self._pools if k[0].is_closed()]:
                del self._pools[stale]
            pool = self._pools[key] = _new_pool(secure=key[1])
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
    ) -> _Response:
        """Send one request; the response, its body unread. A caller's client, or ours
        behind a proxy, gets it through `send` (auth, hooks, cookies and proxy mounts
        apply). With no proxy our client has none of those and never follows a redirect,
        so the request goes straight to its transport (http_network.py: httpcore2's pool,
        TLS and limits), with no httpx2.Request or Response built around it."""
        headers = {"user-agent": USER_AGENT, **headers}
        client, direct, defaults = self._caller_client, None, _NO_HEADERS
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
    ) -> AsyncGenerator[Reply]:
        """Yield Retrying before each retry, then the reply: one JsonReply, or a series of
        StreamEvents.

        `stream_error(event, data)` tells an error sent inside a stream. An overloaded
        server often answers 200 and then sends an error before any output (only events
        named in `preamble` may come first): that is retried like an HTTP error."""
        attempt = 0
        while True:
            control.check()
            started = False
            try:
                async with contextlib.aclosing(self._attempt(url, headers, body, control)) as items:
                    async for item in items:
                        if (
                            not started
                            and isinstance(item, StreamEvents)
                            and stream_error is not None
                        ):
                            started = _output_begins(item.events, stream_error, preamble)
                        else:
                            started = True
                        yield item
                return
            except _Retryable as failure:
                if started:
                    raise failure.error from None
                attempt += 1
                delay = await self._retry_delay(failure, attempt, control)
                if isinstance(failure.error, IdleTimeout):
                    async for event in self._while_busy(headers, control, attempt):
                        yield Retrying(event)
                yield Retrying(retry_event(attempt, delay, failure.reason))
                await control.sleep(delay)

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
            yield retry_event(attempt, poll, reason)
            await control.sleep(poll)
            waited += poll

    async def _retry_delay(self, failure: _Retryable, attempt: int, control: RunControl) -> float:
        """How long to wait before retry number `attempt`, or raise the error to give up."""
        error = failure.error
        retries = self.retries
        decision = "retry" if attempt <= retries.count else "fail"
        if retries.on_error is not None and attempt <= retries.count:
            info = {
                "status": error.status,
                "message": str(error),
                "attempt": attempt,
                "reason": failure.reason,
                "retry_after": failure.delay,
                "error": error,
            }
            outcome = retries.on_error(info)
            if inspect.isawaitable(outcome):
                outcome = await control.race(outcome)
            decision = outcome or decision
        if failure.delay is not None:
            remaining = control.remaining()
            if failure.delay > MAX_RETRY_AFTER_S or (
                remaining is not None and failure.delay > remaining
            ):
                # Say how long the server asked for, whether or not retries were left:
                # "wait an hour" is what the user needs to know.
                raise ProviderError(
                    f"{error} - the server asked to wait {failure.delay:g} s before retrying,"
                    " longer than this run can wait",
                    status=error.status,
                    provider_message=error.provider_message,
                    retry_after=failure.delay,
                    body=error.body,
                ) from None
        if decision != "retry":
            raise error
        if failure.delay is not None:
            return failure.delay
        backoff = retries.base_s * 2.0 ** (attempt - 1)
        return backoff * (0.5 + random.random() / 2)

    async def _attempt(
        self, url: str, headers: dict[str, str], body: dict[str, Any], control: RunControl
    ) -> AsyncGenerator[JsonReply | StreamEvents]:
        channel = _Channel()
        producer = asyncio.get_running_loop().create_task(
            self._produce(channel, url, headers, body)
        )
        unsubscribe = control.subscribe(channel.interrupt)
        # If the run ends while this generator is left suspended (the loop raised, or its
        # consumer stopped reading), nobody resumes it to run the `finally` below until
        # the garbage collector does: hang up now instead.
        forget = control.on_close(lambda: _hang_up(producer))
        try:
            kind, *head = await channel.get()
            if kind == _HEAD:
                start = await _body_start(channel)
                if _reads_as_json(start, content_type=head[0], expects_json=head[1]):
                    yield JsonReply(await self._read_json(channel, control))
                else:
                    async for events in self._read_sse(channel, control):
                        yield StreamEvents(events)
            else:
                self._unexpected(kind, head, control)
        finally:
            unsubscribe()
            forget()
            if not producer.done():
                _hang_up(producer)
                await asyncio.gather(producer, return_exceptions=True)

    def _unexpected(self, kind: int, payload: list[Any], control: RunControl) -> None:
        if kind == _STOP:
            control.check()
        if kind == _FAIL:
            raise payload[0]
        raise ProviderError("the response ended unexpectedly")

    async def _read_json(self, channel: _Channel, control: RunControl) -> Any:
        parts = []
        size = 0
        while True:
            kind, *payload = await channel.get()
            if kind == _DATA:
                parts.append(payload[0])
                size += len(payload[0])
                if size > MAX_JSON_BYTES:
                    raise ProviderError(
                        f"the endpoint's JSON reply is larger than {MAX_JSON_BYTES >> 20} MiB"
                    )
            elif kind == _END:
                break
            else:
                self._unexpected(kind, payload, control)
        raw = b"".join(parts)
        if not raw.strip():
            raise ProviderError("the endpoint sent an empty reply (HTTP 200 with no body)")
        try:
            return loads_bounded(raw)
        except TooDeep as exc:
            raise ProviderError(f"the endpoint's reply is {exc}") from None
        except ValueError:
            raise ProviderError(f"the endpoint's reply is not valid JSON: {raw[:200]!r}") from None

    async def _read_sse(
        self, channel: _Channel, control: RunControl
    ) -> AsyncIterator[list[tuple[str, str]]]:
        decoder = SSEDecoder()
        while True:
            kind, *payload = await channel.get()
            if kind == _DATA:
                more = channel.take_data()
                events = decoder.feed(b"".join((payload[0], *more)) if more else payload[0])
                if events:
                    yield events
            elif kind == _END:  # the style tells whether the stream was complete
                events = decoder.close()
                if events:
                    yield events
                return
            else:
                self._unexpected(kind, payload, control)

    async def _produce(
        self, channel: _Channel, url: str, headers: dict[str, str], body: dict[str, Any]
    ) -> None:
        response: _Response | None = None
        try:
            content = json.dumps(body, ensure_ascii=False).encode()
            response = await self._open(
                "POST", url, {"content-type": "application/json", **headers}, content
            )
            content_type = _check_status(response, url)
            if response.status_code >= 400:
                raise await self._http_error(response)
            await channel.put((_HEAD, content_type, not body.get("stream")))
            limit = MAX_DECOMPRESSED_BYTES if _is_compressed(response) else None
            size = 0
            async for chunk in response.aiter_bytes():
                if limit is not None:
                    size += len(chunk)
                    if size > limit:
                        raise ProviderError(
                            f"the endpoint's reply inflates to more than {limit >> 20} MiB"
                        )
                await channel.put((_DATA, chunk))
            await channel.put((_END,))
        except asyncio.CancelledError:
            raise
        except _Retryable as failure:
            await channel.put((_FAIL, failure))
        except Exception as exc:  # a transport failure, a ProviderError, or a bug: never hang
            await channel.put((_FAIL, self._transport_error(exc, url)))
        finally:
            if response is not None:
                await response.aclose()

    def _transport_error(self, exc: Exception, url: str) -> Exception:
        """What a failure below HTTP means for the run; all but TLS refusals and bad
        requests are retried (a stream that already gave output is never retried, see
        `send`)."""
        import httpx2

        if not isinstance(exc, (httpx2.HTTPError, httpx2.InvalidURL)):
            return exc
        said = _describe(exc)
        refusal = _tls_refusal(exc)
        if refusal is not None:
            return ProviderError(
                f"TLS with {url} failed: {refusal} (check the base URL, or "
                "SSL_CERT_FILE / SSL_CERT_DIR for a private CA)"
            )
        if isinstance(exc, httpx2.ReadTimeout):
            idle = self.timeouts.idle_s
            error: ProviderError = IdleTimeout(
                f"{url} sent nothing for {idle:g} s (idle timeout)", seconds=idle
            )
            return _Retryable(error, "the server stopped answering")
        if isinstance(
            exc, (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout, httpx2.ProxyError)
        ):
            error = ProviderError(f"could not connect to {url}: {said}")
            return _Retryable(error, f"connection failed: {said}")
        if isinstance(
            exc, (httpx2.UnsupportedProtocol, httpx2.LocalProtocolError, httpx2.InvalidURL)
        ):
            return ProviderError(f"cannot send the request to {url}: {said}")
        error = ProviderError(f"the connection to {url} broke: {said}")
        return _Retryable(error, "connection dropped")

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
        Only an interruption of the run is raised."""
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

    async def _http_error(self, response: _Response) -> Exception:
        parts, size = [], 0
        async for chunk in response.aiter_bytes():
            parts.append(chunk)
            size += len(chunk)
            if size > ERROR_BODY_LIMIT:
                break
        raw = b"".join(parts)[:ERROR_BODY_LIMIT]
        status = response.status_code
        data: Any
        try:
            data = loads_bounded(raw)
        except ValueError:
            data = raw.decode("utf-8", "replace").strip() or None
        error = self.describe_error(status, data)
        if not _retry_wanted(status, response.headers):
            return error
        reason = "rate limited" if status == 429 else f"the server answered {status}"
        error.retry_after = parse_retry_after(response.headers)
        return _Retryable(error, reason, error.retry_after)


class _Response(Protocol):
    """What is read of a reply: an httpx2.Response, or http_network's DirectResponse."""

    status_code: int
    headers: httpx2.Headers

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class _Pool(NamedTuple):
    client: httpx2.AsyncClient
    direct: AsyncioTransport | None  # its transport, when no proxy is set
    defaults: dict[str, str]  # the client's default headers, which `direct` adds


def _new_http_client(*, secure: bool = True) -> httpx2.AsyncClient:
    return _new_pool(secure=secure).client


def _new_pool(*, secure: bool) -> _Pool:
    """A pooled client: system trust store, proxies from the environment (HTTP(S)_PROXY,
    ALL_PROXY, NO_PROXY; loopback always direct), HTTP/2 when `h2` is installed. With no
    proxy in the environment, connections use asyncio directly (http_network.py), and a
    client for plain http URLs (not `secure`) leaves the trust store unread (tens of ms);
    httpx2 resolves proxies only for a client without a transport of its own, so with
    one set it keeps all of its defaults."""
    import importlib.util
    from urllib.request import getproxies

    import httpx2

    from .http_network import AsyncioTransport

    http2 = importlib.util.find_spec("h2") is not None
    proxies = getproxies()
    if not any(proxies.get(scheme) for scheme in ("http", "https", "all")):
        direct = AsyncioTransport(_tls_context() if secure else None, http2=http2)
        client = httpx2.AsyncClient(transport=direct, follow_redirects=False)
        return _Pool(client, direct, dict(client.headers))
    try:
        return _Pool(
            httpx2.AsyncClient(
                trust_env=True,
                follow_redirects=False,
                mounts=_DIRECT,
                verify=_tls_context(),
                http2=http2,
            ),
            None,
            _NO_HEADERS,
        )
    except ImportError:  # httpx2 names the missing package; a SOCKS proxy needs socksio
        raise ProviderError(
            "a SOCKS proxy is set in the environment (ALL_PROXY / HTTPS_PROXY), but SOCKS "
            "support is not installed: pip install 'toolnexus[socks]'"
        ) from None
    except (ValueError, httpx2.InvalidURL):  # never echo the proxy URL: it may hold a password
        raise ProviderError(
            "the proxy set in the environment (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY) is not "
            "usable: give an http://, https:// or socks5:// URL"
        ) from None


@contextlib.contextmanager
def socks_errors_mapped() -> Iterator[None]:
    """A SOCKS proxy that answers garbage makes socksio raise its own errors, which
    httpcore2 lets through as they are: here they become the httpx2.ProxyError they mean."""
    try:
        yield
    except Exception as exc:
        if type(exc).__module__.partition(".")[0] != "socksio":
            raise
        import httpx2

        raise httpx2.ProxyError(
            f"the SOCKS proxy's answer is not SOCKS5 ({_describe(exc)})"
        ) from None


_TLS_CONTEXTS: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def _tls_context() -> ssl.SSLContext:
    """httpx2's default TLS context (the system trust store, or SSL_CERT_FILE /
    SSL_CERT_DIR), built once per process and setting: loading a CA bundle takes tens of
    milliseconds, which every new client would otherwise pay inside its first run."""
    import httpx2

    key = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _TLS_CONTEXTS.get(key)
    if context is None:
        context = _TLS_CONTEXTS[key] = httpx2.create_ssl_context()
    return context


def _check_status(response: _Response, url: str) -> str:
    """The content type of a reply worth reading; a redirect or an HTML page (a web
    server, not a model endpoint) is an error that says what came back."""
    status = response.status_code
    if 300 <= status < 400:
        location = response.headers.get("location") or "nowhere"
        raise ProviderError(
            f"the endpoint {url} answered with a redirect (HTTP {status}) to {location[:200]}: "
            "model calls do not follow redirects; if that address is right, use it as the "
            "base URL"
        )
    content_type = response.headers.get("content-type", "")
    if status < 300 and "text/html" in content_type:
        raise ProviderError(
            f"the endpoint answered with an HTML page (is the base URL right? it is {url})"
        )
    return content_type


def _is_compressed(response: _Response) -> bool:
    return response.headers.get("content-encoding", "identity").strip().lower() != "identity"


def _tls_refusal(exc: BaseException) -> str | None:
    """Why TLS refused the connection, when an ssl error is behind `exc`."""
    import ssl

    seen: BaseException | None = exc
    for _ in range(8):  # the cause chain: httpx2 -> httpcore2 -> ssl
        if seen is None:
            return None
        if isinstance(seen, ssl.SSLCertVerificationError):
            return f"the certificate was refused: {seen.verify_message or seen}"
        if isinstance(seen, ssl.SSLError):
            return _describe(seen)
        seen = seen.__cause__ or seen.__context__
    return None


_SNIFF_BYTES = 8  # enough of a body's start to tell JSON from an SSE field line
_SSE_LINE_STARTS = (b"data", b"event", b"id:", b"retry:", b":")
_BOM = b"\xef\xbb\xbf"


async def _body_start(channel: _Channel) -> bytes:
    """The first bytes of the body past blanks (b"" for a blank body), left in the channel
    for the reader: a reply is read by what it is, whatever its content type says."""
    taken: list[tuple[Any, ...]] = []
    start = b""
    try:
        while len(start) < _SNIFF_BYTES and b"\n" not in start:
            item = await channel.get()
            taken.append(item)
            if item[0] != _DATA:
                break
            start = (start + item[1][:4096]).removeprefix(_BOM).lstrip()
    finally:
        channel.unget(taken)
    return start


def _reads_as_json(start: bytes, *, content_type: str, expects_json: bool) -> bool:
    """Whether a body beginning with `start` is one JSON document rather than an SSE stream:
    its first character says so when it can (SSE labelled application/json or text/plain,
    JSON sent as text/event-stream), else the content type and what was asked for."""
    if start[:1] in (b"{", b"["):
        return True
    if start.startswith(_SSE_LINE_STARTS):
        return False
    return "json" in content_type or ("event-stream" not in content_type and expects_json)


def _output_begins(
    events: list[tuple[str, str]], stream_error: StreamError, preamble: frozenset[str]
) -> bool:
    """Whether these events carry output; raises _Retryable for a retryable error that
    comes before any."""
    for event, data in events:
        error = stream_error(event, data)
        if error is not None:
            if error.status in RETRYABLE_STATUS:
                reason = (
                    "rate limited"
                    if error.status == 429
                    else (f"the server reported {error.provider_message or error.status}")
                )
                raise _Retryable(error, reason)
            return True  # not retryable: the stream's own reading raises it
        if event not in preamble:
            return True
    return False


def _hang_up(producer: asyncio.Task[None]) -> None:
    """Cancel the read once: a second cancel could interrupt the clean-up that closes
    the connection."""
    if not producer.done() and not producer.cancelling():
        producer.cancel()


def _retry_wanted(status: int, headers: Mapping[str, str]) -> bool:
    """Whether a failed request is worth sending again: as the server says in
    `x-should-retry` ("true" or "false", as the official SDKs obey it), else by its status."""
    said = headers.get("x-should-retry", "").strip().lower()
    if said in ("true", "false"):
        return said == "true"
    return status in RETRYABLE_STATUS


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a server asked for, in seconds: `retry-after-ms`, or `Retry-After` in its
    delay-seconds form. An HTTP-date or anything unparseable gives None (use backoff)."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value.strip()) / scale
        except ValueError:
            continue
        if seconds >= 0 and seconds == seconds and seconds != float("inf"):
            return seconds
    return None


def check_endpoint(url: str) -> None:
    """Refuse, before any connection, a URL no request could go to."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(
            f"the base URL {url!r} must start with http:// or https:// and name "
            "a host, e.g. 'https://api.openai.com/v1'"
        )
    try:
        parts.port  # noqa: B018 - urlsplit checks the port only when asked
    except ValueError:
        raise ValueError(f"the base URL {url!r} has an invalid port (1-65535)") from None


def check_headers(headers: Mapping[str, str]) -> None:
    """Refuse, before any connection, a header a line break or other control character
    would split or corrupt on the wire. The value is never shown: it may be a key."""
    for name, value in headers.items():
        if not name or not name.isascii() or any(c in _NOT_IN_NAMES for c in name):
            raise ValueError(f"the header name {name[:60]!r} is not a valid HTTP header name")
        problem = header_value_problem(value)
        if problem:
            raise ValueError(f"the value of the header {name!r} contains {problem}")


_NOT_IN_NAMES = frozenset('()<>@,;:\\"/[]?={} \t') | {chr(c) for c in range(32)} | {"\x7f"}


def header_value_problem(value: str) -> str | None:
    """What makes `value` unfit for a header ("a line break", "a control character
    (0x07)", "a non-ASCII character"), or None when it is fine."""
    if value.isascii() and value.isprintable():
        return None
    for char in value:
        code = ord(char)
        if char in "\r\n":
            return "a line break"
        if code < 32 or code == 127:
            return f"a control character (0x{code:02x})"
    return "a non-ASCII character"


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
