"""The direct path of a model call: a request handed straight to httpcore2's pool (_network.py)
without an httpx2.Request or Response built around it.

With no proxy and no caller's client, a model call uses none of httpx2's client layers
(auth, redirects, cookies, hooks), so the request goes straight to the pool: the URL is
parsed once per address, the headers on the wire are those an httpx2.Request would carry
(Host first, Content-Length last), and a compressed body is still decoded by httpx2.
Its bench row: bench/loop.py's "toolnexus" against "toolnexus, through httpx2's client"
(bench/instructions.py counted 4.05 M instructions per agent run against 5.16 M, 6.14 M
against 7.35 M streaming).
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Protocol

import httpcore2
import httpx2

from ._network import AsyncioTransport, ResponseStream, as_httpx2_errors


class DirectTransport(AsyncioTransport):
    """The asyncio transport, which also takes a model call's request as it is (`open`)."""

    def __init__(self, ssl_context: ssl.SSLContext | None, *, http2: bool) -> None:
        super().__init__(ssl_context, http2=http2)
        self._targets: dict[str, _Target] = {}

    async def open(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        content: bytes | None,
        timeouts: dict[str, float | None],
    ) -> DirectResponse:
        """Send one request straight to the pool; the response, its body unread. The same
        request on the wire as an httpx2.Request of these headers and content (Host first,
        Content-Length last), without building one: the URL is parsed once per address."""
        target = self._targets.get(url)
        if target is None:
            if len(self._targets) >= _MAX_TARGETS:
                self._targets.clear()
            target = self._targets[url] = _Target.of(url)
        raw = [(b"Host", target.host)]
        raw += [(name.encode("ascii"), value.encode("ascii")) for name, value in headers.items()]
        if content is not None:
            raw.append((b"Content-Length", b"%d" % len(content)))
        request = httpcore2.Request(
            method=method,
            url=target.url,
            headers=raw,
            content=content,
            extensions={"timeout": timeouts},
        )
        with as_httpx2_errors():
            response = await self.pool.handle_async_request(request)
        return DirectResponse(response)


_MAX_TARGETS = 64  # parsed addresses kept (a client calls one or two)


@dataclass(frozen=True, slots=True)
class _Target:
    """An address as httpcore2 takes it, parsed once."""

    url: httpcore2.URL
    host: bytes  # the Host header

    @classmethod
    def of(cls, url: str) -> _Target:
        parsed = httpx2.URL(url)  # httpx2's checks: httpx2.InvalidURL as before
        core = httpcore2.URL(
            scheme=parsed.raw_scheme,
            host=parsed.raw_host,
            port=parsed.port,
            target=parsed.raw_path,
        )
        return cls(core, parsed.netloc)


class HttpResponse(Protocol):
    """What a model call reads of a reply: an httpx2.Response (through httpx2's client), or
    a DirectResponse (straight from the pool)."""

    status_code: int
    headers: httpx2.Headers

    def aiter_bytes(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None: ...


class DirectResponse:
    """What a model call reads of a response (status, headers, the body as it comes),
    without an httpx2.Response around it; a compressed body is decoded by one."""

    def __init__(self, response: httpcore2.Response) -> None:
        self.status_code = response.status
        self.headers = httpx2.Headers(response.headers)
        self._stream = response.stream
        self._decoding: httpx2.Response | None = None

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        if self.headers.get("content-encoding", "identity").strip().lower() == "identity":
            return self._raw()
        self._decoding = httpx2.Response(
            self.status_code, headers=self.headers, stream=ResponseStream(self._stream)
        )
        return self._decoding.aiter_bytes()

    async def _raw(self) -> AsyncIterator[bytes]:
        with as_httpx2_errors():
            async for part in self._stream:  # type: ignore[union-attr]
                if part:
                    yield part

    async def aclose(self) -> None:
        if self._decoding is not None:
            await self._decoding.aclose()
            return
        with as_httpx2_errors():
            await self._stream.aclose()  # type: ignore[union-attr]
