"""Reading a reply's body from the channel: JSON or SSE by what it is (its first bytes),
whatever its content type says; within the limits on its size; a redirect or an HTML page
is an error that says what came back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, NoReturn

from .._bounded_json import TooDeep, loads_bounded
from .._control import RunControl
from .._sse import SSEDecoder
from ..errors import ProviderError
from ._channel import DATA, END, FAIL, STOP, Channel

if TYPE_CHECKING:
    from ._direct import HttpResponse


MAX_JSON_BYTES = 32 * 1024 * 1024


MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024  # a compressed body once inflated, or one held whole


_SNIFF_BYTES = 8  # enough of a body's start to tell JSON from an SSE field line


_SSE_LINE_STARTS = (b"data", b"event", b"id:", b"retry:", b":")


_BOM = b"\xef\xbb\xbf"


def check_status(response: HttpResponse, url: str) -> str:
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


def is_compressed(response: HttpResponse) -> bool:
    return response.headers.get("content-encoding", "identity").strip().lower() != "identity"


async def body_start(channel: Channel) -> bytes:
    """The first bytes of the body past blanks (b"" for a blank body), left in the channel
    for the reader: a reply is read by what it is, whatever its content type says."""
    taken: list[tuple[Any, ...]] = []
    start = b""
    try:
        while len(start) < _SNIFF_BYTES and b"\n" not in start:
            item = await channel.get()
            taken.append(item)
            if item[0] != DATA:
                break
            start = (start + item[1][:4096]).removeprefix(_BOM).lstrip()
    finally:
        channel.unget(taken)
    return start


def reads_as_json(start: bytes, *, content_type: str, expects_json: bool) -> bool:
    """Whether a body beginning with `start` is one JSON document rather than an SSE stream:
    its first character says so when it can (SSE labelled application/json or text/plain,
    JSON sent as text/event-stream), else the content type and what was asked for."""
    if start[:1] in (b"{", b"["):
        return True
    if start.startswith(_SSE_LINE_STARTS):
        return False
    return "json" in content_type or ("event-stream" not in content_type and expects_json)


def unexpected(kind: int, payload: list[Any], control: RunControl) -> NoReturn:
    if kind == STOP:
        control.check()
    if kind == FAIL:
        raise payload[0]
    raise ProviderError("the response ended unexpectedly")


async def read_json(channel: Channel, control: RunControl) -> Any:
    parts = []
    size = 0
    while True:
        kind, *payload = await channel.get()
        if kind == DATA:
            parts.append(payload[0])
            size += len(payload[0])
            if size > MAX_JSON_BYTES:
                raise ProviderError(
                    f"the endpoint's JSON reply is larger than {MAX_JSON_BYTES >> 20} MiB"
                )
        elif kind == END:
            break
        else:
            unexpected(kind, payload, control)
    raw = b"".join(parts)
    if not raw.strip():
        raise ProviderError("the endpoint sent an empty reply (HTTP 200 with no body)")
    try:
        return loads_bounded(raw)
    except TooDeep as exc:
        raise ProviderError(f"the endpoint's reply is {exc}") from None
    except ValueError:
        raise ProviderError(f"the endpoint's reply is not valid JSON: {raw[:200]!r}") from None


async def read_sse(channel: Channel, control: RunControl) -> AsyncIterator[list[tuple[str, str]]]:
    decoder = SSEDecoder()
    while True:
        kind, *payload = await channel.get()
        if kind == DATA:
            more = channel.take_data()
            events = decoder.feed(b"".join((payload[0], *more)) if more else payload[0])
            if events:
                yield events
        elif kind == END:  # the style tells whether the stream was complete
            events = decoder.close()
            if events:
                yield events
            return
        else:
            unexpected(kind, payload, control)
