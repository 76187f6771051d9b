"""A small HTTP/1.1 client on asyncio streams: what talking to a model endpoint needs.

POST and GET, keep-alive connections, chunked, length- and close-delimited bodies, gzip,
TLS, and proxies from the environment (HTTPS_PROXY, HTTP_PROXY, ALL_PROXY, NO_PROXY).
A general-purpose client spends most of an agent run's CPU time on its own layers
(about 0.75 ms per request here); this one reads bytes off the socket and hands them on.
"""

from __future__ import annotations

import asyncio
import base64
import os
import ssl
import zlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import unquote, urlsplit

HEADER_LIMIT = 1 << 20
READ_SIZE = 1 << 16
LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
USER_AGENT = "toolnexus"
_HEX_DIGITS = b"0123456789abcdefABCDEF"


class HTTPFailure(Exception):
    """The exchange failed below HTTP. `kind` says how: "connect" (no connection was
    made), "tls" (the certificate or handshake was refused), "timeout" (no byte within
    the read timeout) or "dropped" (the connection broke or the response was malformed)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Connection:
    __slots__ = ("reader", "writer", "key")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 key: tuple[Any, ...]) -> None:
        self.reader, self.writer, self.key = reader, writer, key

    def close(self) -> None:
        self.writer.close()


class Response:
    """A response whose headers have arrived; the body is read with `chunks()`.
    `close()` hands a fully read keep-alive connection back to the pool, or closes it."""

    def __init__(self, client: HTTPClient, conn: _Connection, status: int,
                 headers: dict[str, str], *, keep_alive: bool, no_body: bool) -> None:
        self.status = status
        self.headers = headers
        self._client = client
        self._conn: _Connection | None = conn
        self._keep_alive = keep_alive
        self._done = no_body
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self._length = int(length) if length and length.strip().isdigit() else None
        if no_body or (self._length is None and not self._chunked):
            self._keep_alive = self._keep_alive and no_body  # close-delimited body
        self._encoding = headers.get("content-encoding", "").lower().strip()
        self._inflate = (zlib.decompressobj(47) if self._encoding in ("gzip", "deflate")
                         else None)

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives, framing and compression removed."""
        if self._done:
            return
        reader, timeout = self._conn.reader, self._client.read_timeout  # type: ignore[union-attr]
        if self._chunked:
            pieces = _chunked_body(reader, timeout)
        elif self._length is not None:
            pieces = _sized_body(reader, self._length, timeout)
        else:
            pieces = _body_until_close(reader, timeout)
        async for piece in pieces:
            if self._inflate is not None:
                piece = self._decompress(piece)
                if not piece:
                    continue
            yield piece
        if self._inflate is not None:
            tail = self._decompress(None)
            if tail:
                yield tail
        self._done = True

    def _decompress(self, data: bytes | None) -> bytes:
        """Inflate a piece of the body (None: what is left); a corrupt stream is a
        malformed response, like bad framing."""
        inflate = self._inflate
        assert inflate is not None
        try:
            return inflate.decompress(data) if data is not None else inflate.flush()
        except zlib.error as exc:
            raise HTTPFailure("dropped", f"the {self._encoding} body is corrupt ({exc})"
                              ) from None

    async def read(self, limit: int | None = None) -> bytes:
        parts, size = [], 0
        async for piece in self.chunks():
            parts.append(piece)
            size += len(piece)
            if limit is not None and size > limit:
                break
        return b"".join(parts)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._done and self._keep_alive:
            self._client._release(conn)
        else:
            conn.close()


async def _timed(awaitable: Any, timeout: float) -> Any:
    try:
        async with asyncio.timeout(timeout):
            return await awaitable
    except TimeoutError:
        raise HTTPFailure("timeout", f"nothing arrived for {timeout:g} s") from None
    except asyncio.IncompleteReadError:
        raise HTTPFailure("dropped", "the server closed the connection mid-response") from None
    except (ConnectionError, OSError) as exc:
        raise HTTPFailure("dropped", f"the connection broke ({_describe(exc)})") from None


class _Dechunker:
    """Removes chunked transfer framing from bytes as they arrive, so a read that holds
    many small chunks (a fast token stream) costs one pass, not an await per chunk."""

    def __init__(self) -> None:
        self.done = False
        self._buffer = b""
        self._left = 0  # data bytes still to come in the current chunk
        self._state = "size"  # "size", "data", "crlf", "trailer"

    def feed(self, data: bytes) -> bytes:
        buffer = self._buffer + data if self._buffer else data
        pos, out = 0, []
        while not self.done:
            if self._state == "data":
                take = min(self._left, len(buffer) - pos)
                if take:
                    out.append(buffer[pos:pos + take])
                    pos += take
                    self._left -= take
                if self._left:
                    break
                self._state = "crlf"
            elif self._state == "crlf":
                if len(buffer) - pos < 2:
                    break
                if buffer[pos:pos + 2] != b"\r\n":
                    raise HTTPFailure("dropped", "a chunk did not end in CRLF")
                pos += 2
                self._state = "size"
            else:
                end = buffer.find(b"\r\n", pos)
                if end < 0:
                    if len(buffer) - pos > 4096:
                        raise HTTPFailure("dropped", "a chunk header is too long")
                    break
                line, pos = buffer[pos:end], end + 2
                if self._state == "trailer":
                    self.done = not line
                    continue
                size = line.split(b";", 1)[0].strip()
                # int() alone would also take "-1", "+5", "0x5" and "1_0"
                if not size or size.strip(_HEX_DIGITS):
                    raise HTTPFailure("dropped", f"bad chunk size {line[:40]!r}")
                self._left = int(size, 16)
                self._state = "data" if self._left else "trailer"
        self._buffer = buffer[pos:]
        return b"".join(out) if len(out) != 1 else out[0]


async def _chunked_body(reader: asyncio.StreamReader, timeout: float
                        ) -> AsyncIterator[bytes]:
    dechunker = _Dechunker()
    while not dechunker.done:
        data = await _timed(reader.read(READ_SIZE), timeout)
        if not data:
            raise HTTPFailure("dropped", "the server closed the connection mid-response")
        payload = dechunker.feed(data)
        if payload:
            yield payload


async def _sized_body(reader: asyncio.StreamReader, size: int, timeout: float
                      ) -> AsyncIterator[bytes]:
    while size > 0:
        piece = await _timed(reader.read(min(size, READ_SIZE)), timeout)
        if not piece:
            raise HTTPFailure("dropped", "the server closed the connection mid-response")
        size -= len(piece)
        yield piece


async def _body_until_close(reader: asyncio.StreamReader, timeout: float
                            ) -> AsyncIterator[bytes]:
    while piece := await _timed(reader.read(READ_SIZE), timeout):
        yield piece


class HTTPClient:
    """Keep-alive connections for one event loop."""

    def __init__(self, *, connect_timeout: float, read_timeout: float) -> None:
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._idle: dict[tuple[Any, ...], list[_Connection]] = {}

    async def request(self, method: str, url: str, headers: dict[str, str],
                      body: bytes = b"") -> Response:
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), parts.hostname or ""
        if scheme not in ("http", "https") or not host:
            raise HTTPFailure("connect", f"not an http(s) URL: {url}")
        port = parts.port or (443 if scheme == "https" else 80)
        proxy = _proxy_for(scheme, host)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        authority = host if ":" not in host else f"[{host}]"
        if parts.port:
            authority += f":{parts.port}"
        if proxy is not None and scheme == "http":
            # A plain-HTTP proxy takes the absolute URL, but never the fragment or user info.
            target = f"http://{authority}{target}"
        lines = [f"{method} {target} HTTP/1.1", f"host: {authority}",
                 "accept-encoding: gzip, deflate", f"user-agent: {USER_AGENT}"]
        if proxy is not None and scheme == "http" and proxy[2]:
            lines.append(f"proxy-authorization: {proxy[2]}")
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body or method == "POST":
            lines.append(f"content-length: {len(body)}")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        key = (scheme, host, port, proxy)
        while True:
            conn, reused = await self._connection(key)
            try:
                conn.writer.write(head + body)
                return await self._response(conn, method)
            except HTTPFailure as failure:
                conn.close()
                # A kept-alive connection the server has quietly closed: use a new one.
                if not (reused and failure.kind == "dropped"):
                    raise
            except BaseException:
                conn.close()
                raise

    async def _response(self, conn: _Connection, method: str) -> Response:
        while True:
            try:
                raw = await _timed(conn.reader.readuntil(b"\r\n\r\n"), self.read_timeout)
            except asyncio.LimitOverrunError:
                raise HTTPFailure("dropped", "the response headers are too long") from None
            status_line, *header_lines = raw.decode("latin-1").split("\r\n")
            version, _, rest = status_line.partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/") or not code.isdigit():
                raise HTTPFailure("dropped", f"not an HTTP response: {status_line[:60]!r}")
            status = int(code)
            if 100 <= status < 200:
                continue  # an interim response (100 Continue, 103 Early Hints)
            headers: dict[str, str] = {}
            for line in header_lines:
                name, sep, value = line.partition(":")
                if sep:
                    name = name.strip().lower()
                    value = value.strip()
                    headers[name] = f"{headers[name]}, {value}" if name in headers else value
            connection = headers.get("connection", "").lower()
            keep_alive = version == "HTTP/1.1" and "close" not in connection
            no_body = method == "HEAD" or status in (204, 304)
            return Response(self, conn, status, headers, keep_alive=keep_alive,
                            no_body=no_body)

    async def _connection(self, key: tuple[Any, ...]) -> tuple[_Connection, bool]:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.reader.at_eof() and not conn.writer.is_closing():
                return conn, True
            conn.close()
        scheme, host, port, proxy = key
        tls = _tls_context() if scheme == "https" else None
        try:
            async with asyncio.timeout(self.connect_timeout):
                if proxy is None:
                    reader, writer = await asyncio.open_connection(
                        host, port, ssl=tls, server_hostname=host if tls else None,
                        limit=HEADER_LIMIT)
                else:
                    reader, writer = await self._through_proxy(proxy, host, port, tls)
        except TimeoutError:
            raise HTTPFailure("connect", f"connecting to {host}:{port} took over "
                                         f"{self.connect_timeout:g} s") from None
        except ssl.SSLCertVerificationError as exc:
            raise HTTPFailure("tls", f"the TLS certificate of {host} was refused: "
                                     f"{exc.verify_message or exc}") from None
        except ssl.SSLError as exc:
            raise HTTPFailure("tls", f"TLS with {host} failed: {_describe(exc)}") from None
        except OSError as exc:
            raise HTTPFailure("connect", f"cannot connect to {host}:{port} "
                                         f"({_describe(exc)})") from None
        return _Connection(reader, writer, key), False

    async def _through_proxy(self, proxy: tuple[str, int, str | None], host: str, port: int,
                             tls: ssl.SSLContext | None
                             ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        proxy_host, proxy_port, auth = proxy
        reader, writer = await asyncio.open_connection(proxy_host, proxy_port,
                                                       limit=HEADER_LIMIT)
        if tls is None:
            return reader, writer
        try:  # the proxy socket is closed on every failure, a timeout's cancel included
            lines = [f"CONNECT {host}:{port} HTTP/1.1", f"host: {host}:{port}"]
            if auth:
                lines.append(f"proxy-authorization: {auth}")
            writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
            try:
                answer = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                raise OSError(f"the proxy {proxy_host}:{proxy_port} gave no answer to "
                              "CONNECT") from None
            status = answer.split(b" ", 2)[1:2]
            if status != [b"200"]:
                first = answer.split(b"\r\n", 1)[0].decode("latin-1")
                raise OSError(f"the proxy {proxy_host}:{proxy_port} refused: {first}")
            await writer.start_tls(tls, server_hostname=host)
        except BaseException:
            writer.close()
            raise
        return reader, writer

    def _release(self, conn: _Connection) -> None:
        self._idle.setdefault(conn.key, []).append(conn)

    def close(self) -> None:
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()


def _proxy_for(scheme: str, host: str) -> tuple[str, int, str | None] | None:
    """The proxy the environment names for this URL, as (host, port, auth header)."""
    if host in LOOPBACK or not any(k.lower().endswith("_proxy") for k in os.environ):
        return None
    import urllib.request

    proxies = urllib.request.getproxies()
    url = proxies.get(scheme) or proxies.get("all")
    if not url or urllib.request.proxy_bypass(host):
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    auth = None
    if parts.username:
        user_pass = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        auth = "Basic " + base64.b64encode(user_pass.encode()).decode()
    return parts.hostname or "", parts.port or 80, auth


_TLS: ssl.SSLContext | None = None


def _tls_context() -> ssl.SSLContext:
    """The certificate store, loaded once per process: the system's (SSL_CERT_FILE and
    SSL_CERT_DIR are honoured) plus certifi's bundle when it is installed."""
    global _TLS
    if _TLS is None:
        context = ssl.create_default_context()
        try:
            import certifi
        except ImportError:
            pass
        else:
            if not (os.environ.get("SSL_CERT_FILE") or os.environ.get("SSL_CERT_DIR")):
                context.load_verify_locations(certifi.where())
        _TLS = context
    return _TLS


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
