"""httpcore2's network layer on asyncio's own transports, and the httpx2 transport that
puts httpcore2's pool on it, for model calls no proxy stands in front of.

httpx2 reaches the network through anyio: a cancel scope around every read and write,
exception maps, and one send per HTTP event (headers, then body). Here a read returns
what asyncio already buffered, a timeout is one timer, and what one step of the event
loop writes (a request's head and body) goes out in one send. The HTTP protocol itself,
pooling, keep-alive and TLS policy stay httpcore2's; proxies stay httpx2's (the client
mounts its own proxy transports in front of this one). _direct.py sends a model call
straight to this pool.

Imported only when a model call is made: it imports httpx2 and httpcore2 (declared in
pyproject.toml; HTTP/2 when h2 is installed, tested in tests/library/test_http_network.py).
Its bench row: bench/loop.py's "toolnexus, through httpx2's client" against "toolnexus,
httpx2's own transport" (bench/instructions.py counted 5.16 M instructions per agent run
against 6.20 M, 7.35 M against 8.39 M streaming).
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2
import httpx2

_MAX_BUFFERED = 256 * 1024  # unread bytes before the socket stops being read
_MAX_UNSENT = 64 * 1024  # bytes held back to share one send
_HAPPY_EYEBALLS_DELAY_S = 0.25


class _Protocol(asyncio.Protocol):
    """Collects what arrives; wakes the one reader (HTTP/1.1 and HTTP/2 read serially)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.chunks: deque[bytes] = deque()
        self.buffered = 0
        self.eof = False
        self.lost: Exception | None = None
        self.closed = False
        self.paused_reading = False
        self._reader: asyncio.Future[None] | None = None
        self._drain: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.chunks.append(data)
        self.buffered += len(data)
        if self.buffered > _MAX_BUFFERED and self.transport is not None:
            self.transport.pause_reading()
            self.paused_reading = True
        self._wake_reader()

    def eof_received(self) -> None:
        self.eof = True
        self._wake_reader()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.lost = exc
        self._wake_reader()
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)

    def pause_writing(self) -> None:
        self._drain = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._drain is not None and not self._drain.done():
            self._drain.set_result(None)
        self._drain = None

    def _wake_reader(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(None)

    async def wait_readable(self, timeout: float | None) -> None:
        self._reader = asyncio.get_running_loop().create_future()
        try:
            await _within(self._reader, timeout, httpcore2.ReadTimeout)
        finally:
            self._reader = None

    async def drained(self, timeout: float | None) -> None:
        if self._drain is not None:
            await _within(asyncio.shield(self._drain), timeout, httpcore2.WriteTimeout)

    def take(self, max_bytes: int) -> bytes:
        chunk = self.chunks.popleft()
        if len(chunk) > max_bytes:
            self.chunks.appendleft(chunk[max_bytes:])
            chunk = chunk[:max_bytes]
        self.buffered -= len(chunk)
        if self.paused_reading and self.buffered <= _MAX_BUFFERED // 2 and not self.closed:
            self.paused_reading = False
            assert self.transport is not None
            self.transport.resume_reading()
        return chunk


async def _within(
    waiter: asyncio.Future[None], timeout: float | None, error: type[Exception]
) -> None:
    if timeout is None:
        await waiter
        return

    def time_out() -> None:
        if not waiter.done():
            waiter.set_exception(error("timed out"))

    timer = asyncio.get_running_loop().call_later(timeout, time_out)
    try:
        await waiter
    finally:
        timer.cancel()


class AsyncioStream(httpcore2.AsyncNetworkStream):
    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._unsent: list[bytes] = []
        self._unsent_size = 0

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._flush()
        protocol = self._protocol
        if not protocol.chunks and not protocol.eof and not protocol.closed:
            await protocol.wait_readable(timeout)
        if protocol.chunks:
            return protocol.take(max_bytes)
        if protocol.lost is not None:
            raise httpcore2.ReadError(str(protocol.lost) or "the connection broke")
        return b""  # end of stream

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        if self._protocol.closed or self._transport.is_closing():
            raise httpcore2.WriteError("the connection is closed")
        if not self._unsent:
            asyncio.get_running_loop().call_soon(self._flush)  # if nothing reads first
        self._unsent.append(buffer)
        self._unsent_size += len(buffer)
        if self._unsent_size > _MAX_UNSENT:
            self._flush()
            await self._protocol.drained(timeout)

    def _flush(self) -> None:
        if self._unsent and not self._transport.is_closing():
            self._transport.write(b"".join(self._unsent))
        self._unsent.clear()
        self._unsent_size = 0

    async def aclose(self) -> None:
        self._unsent.clear()
        self._transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> AsyncioStream:
        self._flush()
        loop = asyncio.get_running_loop()
        try:
            with _connect_errors():
                async with asyncio.timeout(timeout):
                    transport = await loop.start_tls(
                        self._transport,
                        self._protocol,
                        ssl_context,
                        server_hostname=server_hostname,
                    )
        except BaseException:
            self._transport.abort()
            raise
        assert transport is not None
        return AsyncioStream(transport, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":  # an idle pooled connection the server closed, or spoke on
            protocol = self._protocol
            return bool(protocol.chunks) or protocol.eof or protocol.closed
        names = {
            "ssl_object": "ssl_object",
            "client_addr": "sockname",
            "server_addr": "peername",
            "socket": "socket",
        }
        return self._transport.get_extra_info(names[info]) if info in names else None


@contextmanager
def _connect_errors() -> Iterator[None]:
    try:
        yield
    except TimeoutError as exc:
        raise httpcore2.ConnectTimeout(str(exc) or "timed out") from exc
    except OSError as exc:  # ssl.SSLError included: _failures.py reads the cause
        raise httpcore2.ConnectError(str(exc) or type(exc).__name__) from exc


class AsyncioBackend(httpcore2.AsyncNetworkBackend):
    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> AsyncioStream:
        loop = asyncio.get_running_loop()
        with _connect_errors():
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_connection(
                    _Protocol,
                    host,
                    port,
                    happy_eyeballs_delay=_HAPPY_EYEBALLS_DELAY_S,
                    local_addr=(local_address, 0) if local_address else None,
                )
        return _opened(transport, protocol, socket_options)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> AsyncioStream:
        loop = asyncio.get_running_loop()
        with _connect_errors():
            async with asyncio.timeout(timeout):
                transport, protocol = await loop.create_unix_connection(_Protocol, path)
        return _opened(transport, protocol, socket_options)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _opened(
    transport: asyncio.Transport, protocol: _Protocol, socket_options: Iterable[Any] | None
) -> AsyncioStream:
    sock = transport.get_extra_info("socket")
    for option in socket_options or ():
        sock.setsockopt(*option)
    return AsyncioStream(transport, protocol)


# httpcore2's errors as the httpx2 errors of the same name (most specific class first).
_ERRORS: dict[type[Exception], type[Exception]] = {
    getattr(httpcore2, name): getattr(httpx2, name)
    for name in (
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "ConnectError",
        "ReadError",
        "WriteError",
        "RemoteProtocolError",
        "LocalProtocolError",
        "UnsupportedProtocol",
        "ProxyError",
        "TimeoutException",
        "NetworkError",
        "ProtocolError",
    )
}


@contextmanager
def as_httpx2_errors() -> Iterator[None]:
    try:
        yield
    except Exception as exc:
        for kind in type(exc).__mro__:
            mapped = _ERRORS.get(kind)
            if mapped is not None:
                raise mapped(str(exc)) from exc
        raise


class ResponseStream(httpx2.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with as_httpx2_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        with as_httpx2_errors():
            await self._stream.aclose()


class AsyncioTransport(httpx2.AsyncBaseTransport):
    """httpcore2's connection pool with the asyncio network layer: what httpx2's default
    transport does for a request that goes straight to the server."""

    def __init__(self, ssl_context: ssl.SSLContext | None, *, http2: bool) -> None:
        limits = httpx2.Limits(max_connections=100, max_keepalive_connections=20)
        self.pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context,
            http2=http2,
            network_backend=AsyncioBackend(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = request.url
        core_request = httpcore2.Request(
            method=request.method,
            url=httpcore2.URL(
                scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with as_httpx2_errors():
            response = await self.pool.handle_async_request(core_request)
        return httpx2.Response(
            status_code=response.status,
            headers=response.headers,
            stream=ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.pool.aclose()
