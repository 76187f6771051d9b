"""toolnexus.http, the library's own HTTP/1.1 client, against real sockets.

The stub provider (tests/stub_provider.py) gives exact control of response framing; where
it cannot (close-delimited bodies, repeated headers, interim responses, TLS, a proxy) a
tiny asyncio server in this file plays the other end. Every wait is on an event or a
socket, never a sleep; the only time limits are short read timeouts a test asks for.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import itertools
import json
import os
import shutil
import socket
import ssl
import subprocess
import zlib
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import pytest

import toolnexus.http as http_module
from tests.stub_provider import Reply, StubProvider, openai_text
from toolnexus import ProviderError, create_client
from toolnexus.http import HTTPClient, HTTPFailure, _Dechunker

WAIT = 5.0  # upper bound for waiting on an event that should come at once


def _loopback_alias_works() -> bool:
    """127.0.0.2 and .3 stand for hosts that are not loopback names (Linux routes all of
    127/8 to the loopback interface; macOS does not by default)."""
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.3", 0))
        return True
    except OSError:
        return False


needs_alias = pytest.mark.skipif(not _loopback_alias_works(),
                                 reason="127.0.0.2/127.0.0.3 are not loopback here")


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch):
    """Whatever proxies this machine names, the tests choose their own."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy") or name == "REQUEST_METHOD":
            monkeypatch.delenv(name)


@pytest.fixture
async def client():
    c = HTTPClient(connect_timeout=2, read_timeout=2)
    yield c
    c.close()


def idle_count(client: HTTPClient) -> int:
    return sum(len(conns) for conns in client._idle.values())


async def fetch(client: HTTPClient, url: str, method: str = "GET",
                headers: dict[str, str] | None = None, body: bytes = b""):
    """(status, headers, body) of one whole exchange; the response is closed."""
    response = await client.request(method, url, headers or {}, body)
    try:
        return response.status, response.headers, await response.read()
    finally:
        response.close()


async def in_thread(wait: Callable[..., bool], *args) -> bool:
    return await asyncio.to_thread(wait, *args)


# ----------------------------------------------------------------------------- raw servers

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, int], Awaitable[None]]


class RawServer:
    """A loopback asyncio server (plain or TLS) that hands each connection to `handler`.

    `accepted` counts TCP connections as they are accepted, before any TLS handshake, so
    an attempt refused during the handshake is counted too."""

    def __init__(self, handler: Handler, host: str = "127.0.0.1",
                 tls: ssl.SSLContext | None = None) -> None:
        self.handler, self.host, self.tls = handler, host, tls
        self.accepted = 0
        self.port = 0
        self._tasks: set[asyncio.Task] = set()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    async def __aenter__(self) -> RawServer:
        loop = asyncio.get_running_loop()

        def protocol() -> asyncio.StreamReaderProtocol:
            self.accepted += 1
            index = self.accepted

            def connected(reader, writer):
                task = loop.create_task(self._serve(reader, writer, index))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

            return asyncio.StreamReaderProtocol(asyncio.StreamReader(), connected)

        self._server = await loop.create_server(protocol, self.host, 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader, writer, index) -> None:
        try:
            await self.handler(reader, writer, index)
        except (OSError, EOFError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def __aexit__(self, *exc: object) -> None:
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def read_request(reader: asyncio.StreamReader) -> tuple[str, bytes]:
    """The head of a request (as text) and its Content-Length body."""
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    length = 0
    for line in head.split("\r\n")[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return head, await reader.readexactly(length) if length else b""


def header_of(head: str, name: str) -> str | None:
    for line in head.split("\r\n")[1:]:
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == name:
            return value.strip()
    return None


def answer(body: bytes, *headers: str, status: str = "200 OK",
           version: str = "HTTP/1.1") -> bytes:
    lines = [f"{version} {status}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


# ----------------------------------------------------------------------------- the dechunker

BODY_PIECES = [b"Hello", b", ", b"chunked world! " * 3, b"x", b"\r\n in data \r\n"]
WIRE = (
    b"5\r\nHello\r\n"
    b"2;name=value\r\n, \r\n"  # a chunk extension
    + b"%X ; a=1;b=\"q;r\"\r\n" % len(BODY_PIECES[2]) + BODY_PIECES[2] + b"\r\n"
    b"1\r\nx\r\n"
    b"d\r\n\r\n in data \r\n\r\n"  # CRLF inside the data is data
    b"0;last\r\n"
    b"Trailer-One: 1\r\n"
    b"Trailer-Two: 2\r\n"
    b"\r\n"
)
PAYLOAD = b"".join(BODY_PIECES)


def dechunk(pieces: list[bytes]) -> tuple[bytes, _Dechunker]:
    dechunker = _Dechunker()
    out = []
    for i, piece in enumerate(pieces):
        assert not dechunker.done, f"done before piece {i} of {len(pieces)}"
        out.append(dechunker.feed(piece))
    return b"".join(out), dechunker


def test_dechunker_whole():
    data, dechunker = dechunk([WIRE])
    assert data == PAYLOAD and dechunker.done


def test_dechunker_every_split_in_two_and_three():
    cuts = range(1, len(WIRE))
    for i in cuts:
        data, dechunker = dechunk([WIRE[:i], WIRE[i:]])
        assert (data, dechunker.done) == (PAYLOAD, True), f"split at {i}"
    for i, j in itertools.combinations(cuts, 2):
        data, dechunker = dechunk([WIRE[:i], WIRE[i:j], WIRE[j:]])
        assert (data, dechunker.done) == (PAYLOAD, True), f"split at {i}, {j}"


def test_dechunker_byte_at_a_time_and_not_done_early():
    dechunker = _Dechunker()
    out = b""
    for i in range(len(WIRE)):
        assert not dechunker.done, f"done after {i} of {len(WIRE)} bytes"
        out += dechunker.feed(WIRE[i:i + 1])
    assert out == PAYLOAD and dechunker.done


def test_dechunker_empty_feeds_and_no_trailers():
    dechunker = _Dechunker()
    assert dechunker.feed(b"") == b""
    assert dechunker.feed(b"3\r\nabc\r\n") == b"abc"
    assert dechunker.feed(b"") == b"" and not dechunker.done
    assert dechunker.feed(b"0\r\n") == b"" and not dechunker.done  # the blank line is due
    assert dechunker.feed(b"\r\n") == b"" and dechunker.done


@pytest.mark.parametrize("wire, words", [
    (b"zz\r\nabc\r\n0\r\n\r\n", "bad chunk size"),
    (b"\r\nabc\r\n0\r\n\r\n", "bad chunk size"),
    (b"-1\r\nabc\r\n0\r\n\r\n", "bad chunk size"),
    (b"+3\r\nabc\r\n0\r\n\r\n", "bad chunk size"),
    (b"0x3\r\nabc\r\n0\r\n\r\n", "bad chunk size"),
    (b"1_0\r\n0123456789abcdef\r\n0\r\n\r\n", "bad chunk size"),
    (b"3\r\nabcXY0\r\n\r\n", "did not end in CRLF"),
    (b"3\r\nabc\n0\r\n\r\n", "did not end in CRLF"),
    (b"1" * 5000, "too long"),
])
def test_dechunker_malformed_framing_is_dropped(wire, words):
    for pieces in ([wire], [wire[i:i + 1] for i in range(len(wire))]):
        with pytest.raises(HTTPFailure) as caught:
            dechunk(pieces)
        assert caught.value.kind == "dropped" and words in str(caught.value)


# ----------------------------------------------------------------------------- bodies


async def test_content_length_body(stub, client):
    stub.script(Reply.raw([b'{"a": ', b'1}'], chunked=False))
    status, headers, body = await fetch(client, stub.url + "/v1/x")
    assert status == 200 and body == b'{"a": 1}'
    assert headers["content-length"] == "8" and "transfer-encoding" not in headers
    assert idle_count(client) == 1  # read to the end: kept for the next request


@pytest.mark.parametrize("parts", [
    [bytes([65 + i % 26]) for i in range(500)],  # 500 one-byte chunks
    [os.urandom(300_000)],  # one chunk larger than a socket read
], ids=["many-tiny", "one-large"])
async def test_chunked_body(stub, client, parts):
    stub.script(Reply.raw(parts, chunked=True))
    response = await client.request("GET", stub.url + "/v1/x", {})
    assert response.headers["transfer-encoding"] == "chunked"
    pieces = [piece async for piece in response.chunks()]
    response.close()
    assert b"".join(pieces) == b"".join(parts)
    assert all(pieces)  # framing-only reads yield nothing rather than b""
    assert idle_count(client) == 1


async def test_empty_and_no_body_responses_keep_the_connection(stub, client):
    stub.script(Reply.raw([], chunked=False), Reply.raw([], status=204, chunked=False),
                Reply.raw([], chunked=True), Reply.raw([b"x"], chunked=False))
    for expected in (b"", b"", b"", b"x"):
        assert (await fetch(client, stub.url + "/v1/x"))[2] == expected
    assert {r.connection for r in stub.requests} == {1}


@pytest.mark.parametrize("version, extra", [
    ("HTTP/1.0", []),
    ("HTTP/1.1", ["Connection: close"]),
    ("HTTP/1.1", []),  # neither length nor chunked: the body still ends with the connection
], ids=["http10", "connection-close", "http11-no-length"])
async def test_close_delimited_body_is_not_reused(client, version, extra):
    async def handler(reader, writer, index):
        await read_request(reader)
        writer.write(answer(b"", "Content-Type: text/plain", *extra, version=version))
        for part in (b"first ", b"second ", b"connection %d" % index):
            writer.write(part)
            await writer.drain()
        # returning closes the socket: that ends the body

    async with RawServer(handler) as server:
        status, headers, body = await fetch(client, server.url + "/a")
        assert status == 200 and body == b"first second connection 1"
        assert "content-length" not in headers and idle_count(client) == 0
        assert (await fetch(client, server.url + "/b"))[2].endswith(b"connection 2")
        assert server.accepted == 2


async def test_keep_alive_two_requests_share_one_connection(stub, client):
    stub.script(Reply.json({"n": 1}), Reply.json({"n": 2}))
    first = await fetch(client, stub.url + "/v1/a", "POST", body=b"{}")
    second = await fetch(client, stub.url + "/v1/b", "POST", body=b"{}")
    assert json.loads(first[2]) == {"n": 1} and json.loads(second[2]) == {"n": 2}
    assert [r.connection for r in stub.requests] == [1, 1]


async def test_connection_close_header_is_honoured(stub, client):
    stub.script(Reply.json({"n": 1}, headers={"Connection": "close"}), Reply.json({"n": 2}))
    await fetch(client, stub.url + "/v1/a")
    assert idle_count(client) == 0
    await fetch(client, stub.url + "/v1/b")
    assert [r.connection for r in stub.requests] == [1, 2]


async def test_server_closed_idle_connection_after_response(client):
    """The server answers (keep-alive framing, no `Connection: close`) and hangs up; the
    next request goes out on a new connection and succeeds."""
    hung_up = asyncio.Event()

    async def handler(reader, writer, index):
        await read_request(reader)
        writer.write(answer(b"conn %d" % index, "Content-Length: 6"))
        await writer.drain()
        writer.close()
        await writer.wait_closed()
        hung_up.set()

    async with RawServer(handler) as server:
        assert (await fetch(client, server.url + "/"))[2] == b"conn 1"
        assert idle_count(client) == 1
        await asyncio.wait_for(hung_up.wait(), WAIT)
        assert (await fetch(client, server.url + "/", "POST", body=b"{}"))[2] == b"conn 2"
        assert server.accepted == 2


async def test_stale_reused_connection_is_retried_transparently(stub, client):
    """The server reads the second request on the kept connection and closes it without a
    byte of answer (what a server timing out an idle connection looks like as it
    happens): the client sends the request again on a new connection, once."""
    stub.script(Reply.json({"n": 1}), Reply.close_without_response(), Reply.json({"n": 2}))
    await fetch(client, stub.url + "/v1/a", "POST", body=b'{"q": 1}')
    status, _, body = await fetch(client, stub.url + "/v1/b", "POST", body=b'{"q": 2}')
    assert status == 200 and json.loads(body) == {"n": 2}
    assert [(r.path, r.connection) for r in stub.requests] == [
        ("/v1/a", 1), ("/v1/b", 1), ("/v1/b", 2)]
    assert stub.requests[2].json == {"q": 2}


async def test_fresh_connection_closed_without_response_is_not_retried(stub, client):
    stub.script(Reply.close_without_response(), Reply.json({"unreached": True}))
    with pytest.raises(HTTPFailure) as caught:
        await client.request("POST", stub.url + "/v1/a", {}, b"{}")
    assert caught.value.kind == "dropped"
    assert len(stub.requests) == 1


# ----------------------------------------------------------------------------- encodings


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
async def test_compressed_json_body_is_decoded(stub, client, encoding, chunked):
    document = {"text": "é" * 2000, "n": list(range(100))}
    raw = json.dumps(document).encode()
    packed = gzip.compress(raw) if encoding == "gzip" else zlib.compress(raw)
    parts = [packed[i:i + 7] for i in range(0, len(packed), 7)] if chunked else [packed]
    stub.script(Reply.raw(parts, chunked=chunked, headers={
        "Content-Encoding": encoding, "Content-Type": "application/json"}))
    status, headers, body = await fetch(client, stub.url + "/v1/x")
    assert json.loads(body) == document
    assert stub.requests[0].headers["accept-encoding"] == "gzip, deflate"
    assert idle_count(client) == 1


async def test_corrupt_compressed_body_is_a_dropped_response(stub, client):
    stub.script(Reply.raw([b"this is not gzip at all"], chunked=False,
                          headers={"Content-Encoding": "gzip"}))
    with pytest.raises(HTTPFailure) as caught:
        await fetch(client, stub.url + "/v1/x")
    assert caught.value.kind == "dropped" and "gzip" in str(caught.value)
    assert idle_count(client) == 0


async def test_interim_responses_are_skipped(client):
    async def handler(reader, writer, index):
        head, body = await read_request(reader)
        writer.write(answer(b"", status="100 Continue"))
        writer.write(answer(b"", "Link: </style.css>; rel=preload", status="103 Early Hints"))
        writer.write(answer(b"got " + body, "Content-Length: 6", "X-Final: yes",
                            status="201 Created"))
        await writer.drain()
        await read_request(reader)  # the connection is kept: a second request
        writer.write(answer(b"again", "Content-Length: 5"))
        await writer.drain()
        await reader.read()

    async with RawServer(handler) as server:
        status, headers, body = await fetch(client, server.url + "/", "POST", body=b"hi")
        assert (status, body) == (201, b"got hi")
        assert headers["x-final"] == "yes" and "link" not in headers
        assert (await fetch(client, server.url + "/"))[2] == b"again"
        assert server.accepted == 1


async def test_response_headers_lowercase_and_repeated_names_joined(client):
    async def handler(reader, writer, index):
        await read_request(reader)
        writer.write(answer(b"ok", "X-Dup: a", "Content-Type: text/plain", "x-dup: b",
                            "Set-Cookie: s=1", "SET-COOKIE: t=2", "X-Spaced:   padded  ",
                            "Content-Length: 2"))
        await writer.drain()

    async with RawServer(handler) as server:
        _, headers, body = await fetch(client, server.url + "/")
    assert body == b"ok"
    assert headers == {"x-dup": "a, b", "content-type": "text/plain",
                       "set-cookie": "s=1, t=2", "x-spaced": "padded", "content-length": "2"}


async def test_the_request_the_server_receives(stub, client):
    stub.script(Reply.json({}), Reply.json({}))
    await fetch(client, stub.url + "/v1/chat?a=1&b=2", "POST",
                {"Authorization": "Bearer sk-x", "x-caller": "yes"}, b'{"k": "v"}')
    await fetch(client, stub.url + "/v1/models", "GET", {"accept": "*/*"})
    post, get = stub.requests
    assert (post.method, post.path, post.json) == ("POST", "/v1/chat?a=1&b=2", {"k": "v"})
    assert post.headers["host"] == f"127.0.0.1:{stub.port}"
    assert post.headers["content-length"] == "10"
    assert post.headers["user-agent"] == http_module.USER_AGENT
    assert post.headers["accept-encoding"] == "gzip, deflate"
    assert post.headers["authorization"] == "Bearer sk-x" and post.headers["x-caller"] == "yes"
    assert (get.method, get.path, get.body) == ("GET", "/v1/models", b"")
    assert "content-length" not in get.headers and get.headers["accept"] == "*/*"


# ----------------------------------------------------------------------------- failures


async def test_read_timeout_before_headers(stub):
    stub.script(Reply.hang())
    client = HTTPClient(connect_timeout=2, read_timeout=0.2)
    try:
        with pytest.raises(HTTPFailure) as caught:
            await client.request("POST", stub.url + "/v1/x", {}, b"{}")
    finally:
        client.close()
    assert caught.value.kind == "timeout" and "0.2 s" in str(caught.value)
    assert await in_thread(stub.requests[0].disconnected.wait, WAIT)  # the socket was closed


async def test_read_timeout_mid_body(stub):
    stub.script(Reply.hang_after(["data: one\n\n"]))
    client = HTTPClient(connect_timeout=2, read_timeout=0.2)
    try:
        response = await client.request("GET", stub.url + "/v1/x", {})
        chunks = response.chunks()
        assert await anext(chunks) == b"data: one\n\n"
        with pytest.raises(HTTPFailure) as caught:
            await anext(chunks)
        response.close()
    finally:
        client.close()
    assert caught.value.kind == "timeout"
    assert await in_thread(stub.requests[0].disconnected.wait, WAIT)


async def test_connection_refused(client):
    with socket.socket() as closed:  # bound but not listening: connecting is refused
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        with pytest.raises(HTTPFailure) as caught:
            await client.request("GET", f"http://127.0.0.1:{port}/", {})
    assert caught.value.kind == "connect" and f"127.0.0.1:{port}" in str(caught.value)


@pytest.mark.parametrize("url", ["ftp://example.com/x", "http:///nohost", "example.com"])
async def test_not_an_http_url(client, url):
    with pytest.raises(HTTPFailure) as caught:
        await client.request("GET", url, {})
    assert caught.value.kind == "connect" and "not an http(s) URL" in str(caught.value)


async def test_dropped_mid_chunked_body(stub, client):
    stub.script(Reply.drop_after(["data: one\n\n", "data: two\n\n"]))
    response = await client.request("GET", stub.url + "/v1/x", {})
    received = []
    with pytest.raises(HTTPFailure) as caught:
        async for piece in response.chunks():
            received.append(piece)
    response.close()
    assert caught.value.kind == "dropped" and "mid-response" in str(caught.value)
    assert b"".join(received) == b"data: one\n\ndata: two\n\n"
    assert idle_count(client) == 0


async def test_dropped_mid_sized_body(stub, client):
    stub.script(Reply.raw([b"only part"], chunked=False,
                          headers={"Content-Length": "100", "Connection": "close"}))
    with pytest.raises(HTTPFailure) as caught:
        await fetch(client, stub.url + "/v1/x")
    assert caught.value.kind == "dropped"
    assert idle_count(client) == 0


async def test_garbage_instead_of_a_response(client):
    async def handler(reader, writer, index):
        await read_request(reader)
        writer.write(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
        await writer.drain()

    async with RawServer(handler) as server:
        with pytest.raises(HTTPFailure) as caught:
            await client.request("GET", server.url + "/", {})
    assert caught.value.kind == "dropped" and "not an HTTP response" in str(caught.value)


async def test_close_mid_body_closes_the_socket_and_skips_the_pool(stub, client):
    stub.script(Reply.hang_after(["data: one\n\n"]), Reply.json({"next": True}))
    response = await client.request("GET", stub.url + "/v1/x", {})
    chunks = response.chunks()
    assert await anext(chunks) == b"data: one\n\n"
    response.close()
    await chunks.aclose()
    assert await in_thread(stub.requests[0].disconnected.wait, WAIT)
    assert idle_count(client) == 0
    response.close()  # twice is harmless
    assert json.loads((await fetch(client, stub.url + "/v1/y"))[2]) == {"next": True}
    assert [r.connection for r in stub.requests] == [1, 2]


async def test_read_with_a_limit_stops_early_and_does_not_pool(stub, client):
    stub.script(Reply.raw([b"a" * 100] * 50, chunked=True))
    response = await client.request("GET", stub.url + "/v1/x", {})
    data = await response.read(limit=250)
    response.close()
    assert 250 < len(data) <= 5000 and set(data) == {ord("a")}
    assert idle_count(client) == 0  # not known to be read to the end: closed
    stub.script(Reply.json({"next": True}))
    await fetch(client, stub.url + "/v1/y")
    assert [r.connection for r in stub.requests] == [1, 2]


# ----------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    """A throwaway self-signed certificate for localhost, 127.0.0.1 and 127.0.0.2."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:127.0.0.2",
         "-addext", "keyUsage=critical,digitalSignature,keyCertSign",
         "-addext", "extendedKeyUsage=serverAuth"],
        check=True, capture_output=True)
    return cert, key


@pytest.fixture
def server_tls(certificate):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


@pytest.fixture
def trust(monkeypatch, certificate):
    """Returns a function that makes the client trust the test certificate (or not)."""
    def choose(trusted: bool) -> None:
        monkeypatch.setattr(http_module, "_TLS", None)  # the context is cached per process
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        if trusted:
            monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
        else:
            monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    return choose


class TLSApp:
    """An HTTPS endpoint: answers each request with what it received."""

    def __init__(self) -> None:
        self.heads: list[str] = []

    async def __call__(self, reader, writer, index) -> None:
        while True:
            head, body = await read_request(reader)
            self.heads.append(head)
            reply = json.dumps({"line": head.split("\r\n")[0], "body": body.decode(),
                                "connection": index}).encode()
            writer.write(answer(reply, "Content-Type: application/json",
                                f"Content-Length: {len(reply)}"))
            await writer.drain()


async def test_tls_untrusted_certificate_is_refused(client, server_tls, trust):
    trust(False)
    async with RawServer(TLSApp(), tls=server_tls) as server:
        with pytest.raises(HTTPFailure) as caught:
            await client.request("GET", server.url + "/", {})
    assert caught.value.kind == "tls"
    message = str(caught.value)
    assert "127.0.0.1" in message and "self-signed" in message


async def test_tls_trusted_via_ssl_cert_file(client, server_tls, trust):
    trust(True)
    app = TLSApp()
    async with RawServer(app, tls=server_tls) as server:
        status, _, body = await fetch(client, server.url + "/secure?x=1", "POST", body=b"hi")
        again = await fetch(client, server.url + "/again")
        assert server.accepted == 1  # the TLS connection was kept alive
    assert status == 200
    assert json.loads(body) == {"line": "POST /secure?x=1 HTTP/1.1", "body": "hi",
                                "connection": 1}
    assert json.loads(again[2])["line"] == "GET /again HTTP/1.1"
    assert header_of(app.heads[0], "host") == f"127.0.0.1:{server.port}"


@needs_alias
async def test_tls_certificate_for_another_name_is_refused(client, server_tls, trust):
    trust(True)  # trusted, but not issued for 127.0.0.3
    async with RawServer(TLSApp(), host="127.0.0.3", tls=server_tls) as server:
        with pytest.raises(HTTPFailure) as caught:
            await client.request("GET", server.url + "/", {})
    assert caught.value.kind == "tls" and "127.0.0.3" in str(caught.value)


async def collect(client, prompt="hi"):
    events = []
    try:
        async for event in client.stream(prompt, None):
            events.append(event)
    except Exception as exc:  # noqa: BLE001 - returned for the test to inspect
        return events, exc
    return events, None


async def test_tls_refusal_is_a_provider_error_that_is_not_retried(server_tls, trust):
    trust(False)
    async with RawServer(TLSApp(), tls=server_tls) as server:
        async with create_client(base_url=server.url + "/v1", style="openai", model="m",
                                 api_key="sk-test", retries=2, retry_base_ms=1) as agent:
            events, exc = await collect(agent)
        assert server.accepted == 1
    assert isinstance(exc, ProviderError)
    assert "127.0.0.1" in str(exc) and "SSL_CERT_FILE" in str(exc)
    assert [e for e in events if e["type"] == "retry"] == []


async def test_connect_refusal_is_retried_for_contrast():
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        async with create_client(base_url=url, style="openai", model="m", api_key="sk-test",
                                 retries=2, retry_base_ms=1) as agent:
            events, exc = await collect(agent)
    assert isinstance(exc, ProviderError) and "could not connect" in str(exc)
    assert len([e for e in events if e["type"] == "retry"]) == 2


async def test_openai_answer_over_trusted_tls(server_tls, trust):
    trust(True)
    body = json.dumps(openai_text("over TLS")).encode()

    async def handler(reader, writer, index):
        await read_request(reader)
        writer.write(answer(body, "Content-Type: application/json",
                            f"Content-Length: {len(body)}"))
        await writer.drain()

    async with RawServer(handler, tls=server_tls) as server:
        async with create_client(base_url=server.url + "/v1", style="openai", model="m",
                                 api_key="sk-test", retries=0) as agent:
            events, exc = await collect(agent)
    assert exc is None and events[-1]["type"] == "done"
    assert events[-1]["result"].text == "over TLS"


# ----------------------------------------------------------------------------- proxies


class ForwardProxy:
    """A loopback forward proxy: absolute-form requests are forwarded, CONNECT tunnels.
    `heads` is what it received from the client, first line and headers."""

    def __init__(self, refuse: bytes | None = None, silent: bool = False) -> None:
        self.heads: list[str] = []
        self.refuse = refuse  # answer CONNECT with this (or b"" to hang up) instead
        self.silent = silent  # never answer CONNECT; `client_left` is set at the client's EOF
        self.client_left = asyncio.Event()

    async def __call__(self, reader, writer, index) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        self.heads.append(head)
        method, target, _ = head.split("\r\n", 1)[0].split(" ", 2)
        if method == "CONNECT":
            if self.silent:
                await reader.read()
                self.client_left.set()
                return
            if self.refuse is not None:
                writer.write(self.refuse)
                await writer.drain()
                return
            host, port = target.rsplit(":", 1)
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            parts = urlsplit(target)
            up_reader, up_writer = await asyncio.open_connection(parts.hostname, parts.port)
            lines = head.split("\r\n")
            origin = parts.path + (f"?{parts.query}" if parts.query else "")
            lines[0] = f"{method} {origin} HTTP/1.1"
            lines = [line for line in lines
                     if not line.lower().startswith("proxy-authorization:")]
            up_writer.write("\r\n".join(lines).encode("latin-1"))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except OSError:
        pass
    finally:
        sink.close()


@pytest.fixture
def far_stub():
    """The stub on 127.0.0.2: loopback, but not a name that bypasses proxies by itself."""
    with StubProvider(host="127.0.0.2") as s:
        yield s


@needs_alias
async def test_http_through_a_proxy(client, far_stub, monkeypatch):
    far_stub.script(Reply.json({"via": "proxy"}))
    async with RawServer(ForwardProxy()) as proxy_server:
        proxy = proxy_server.handler
        monkeypatch.setenv("HTTP_PROXY", proxy_server.url)
        url = far_stub.url + "/v1/x?q=1"
        status, _, body = await fetch(client, url + "#fragment", "POST",
                                      {"x-caller": "1"}, b'{"a": 1}')
    assert status == 200 and json.loads(body) == {"via": "proxy"}
    [head] = proxy.heads
    assert head.split("\r\n")[0] == f"POST {url} HTTP/1.1"  # absolute form, no fragment
    assert header_of(head, "host") == f"127.0.0.2:{far_stub.port}"
    assert header_of(head, "proxy-authorization") is None
    [received] = far_stub.requests
    assert received.path == "/v1/x?q=1" and received.json == {"a": 1}
    assert received.headers["x-caller"] == "1"


@needs_alias
async def test_proxy_credentials_become_basic_proxy_authorization(client, far_stub,
                                                                  monkeypatch):
    far_stub.script(Reply.json({}))
    async with RawServer(ForwardProxy()) as proxy_server:
        monkeypatch.setenv("HTTP_PROXY", f"http://us%20er:p%40ss@127.0.0.1:{proxy_server.port}")
        await fetch(client, far_stub.url + "/v1/x")
    [head] = proxy_server.handler.heads
    expected = "Basic " + base64.b64encode(b"us er:p@ss").decode()
    assert header_of(head, "proxy-authorization") == expected


@needs_alias
async def test_https_through_a_proxy_tunnel(client, server_tls, trust, monkeypatch):
    trust(True)
    app = TLSApp()
    async with RawServer(app, host="127.0.0.2", tls=server_tls) as origin, \
            RawServer(ForwardProxy()) as proxy_server:
        monkeypatch.setenv("HTTPS_PROXY", f"http://user:pw@127.0.0.1:{proxy_server.port}")
        status, _, body = await fetch(client, origin.url + "/secure", "POST", body=b"tunnel")
        again = await fetch(client, origin.url + "/again")
    assert status == 200 and json.loads(body)["body"] == "tunnel"
    assert json.loads(again[2])["line"] == "GET /again HTTP/1.1"
    [head] = proxy_server.handler.heads  # one tunnel, kept alive for both requests
    assert head.split("\r\n")[0] == f"CONNECT 127.0.0.2:{origin.port} HTTP/1.1"
    expected = "Basic " + base64.b64encode(b"user:pw").decode()
    assert header_of(head, "proxy-authorization") == expected
    assert app.heads[0].split("\r\n")[0] == "POST /secure HTTP/1.1"
    assert header_of(app.heads[0], "proxy-authorization") is None  # never inside the tunnel


@pytest.mark.parametrize("refusal, words", [
    (b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n", "407"),
    (b"", "proxy"),  # hangs up without an answer
    (b"HTTP/1.1 200 OK\r\n", "proxy"),  # hangs up mid-answer
], ids=["407", "hang-up", "partial"])
async def test_proxy_refusing_connect_is_a_connect_failure(client, monkeypatch, refusal, words):
    async with RawServer(ForwardProxy(refuse=refusal)) as proxy_server:
        monkeypatch.setenv("HTTPS_PROXY", proxy_server.url)
        with pytest.raises(HTTPFailure) as caught:
            await client.request("GET", "https://127.0.0.2:9/", {})
    assert caught.value.kind == "connect" and words in str(caught.value)


async def test_proxy_silent_on_connect_times_out_and_its_socket_is_closed(monkeypatch):
    client = HTTPClient(connect_timeout=0.2, read_timeout=2)
    async with RawServer(ForwardProxy(silent=True)) as proxy_server:
        monkeypatch.setenv("HTTPS_PROXY", proxy_server.url)
        with pytest.raises(HTTPFailure) as caught:
            await client.request("GET", "https://127.0.0.2:9/", {})
        assert caught.value.kind == "connect" and "0.2 s" in str(caught.value)
        await asyncio.wait_for(proxy_server.handler.client_left.wait(), WAIT)
    client.close()


@needs_alias
async def test_https_through_a_proxy_to_an_untrusted_server(client, server_tls, trust,
                                                            monkeypatch):
    trust(False)
    async with RawServer(TLSApp(), host="127.0.0.2", tls=server_tls) as origin, \
            RawServer(ForwardProxy()) as proxy_server:
        monkeypatch.setenv("HTTPS_PROXY", proxy_server.url)
        with pytest.raises(HTTPFailure) as caught:
            await client.request("GET", origin.url + "/", {})
    assert caught.value.kind == "tls" and "127.0.0.2" in str(caught.value)
    assert len(proxy_server.handler.heads) == 1


@needs_alias
async def test_no_proxy_and_loopback_names_bypass_the_proxy(client, stub, far_stub,
                                                           monkeypatch):
    stub.script(Reply.json({"direct": "loopback"}))
    far_stub.script(Reply.json({"direct": "no_proxy"}), Reply.json({"direct": "https only"}))
    async with RawServer(ForwardProxy()) as proxy_server:
        monkeypatch.setenv("HTTP_PROXY", proxy_server.url)
        assert json.loads((await fetch(client, stub.url + "/v1/x"))[2]) == {
            "direct": "loopback"}
        monkeypatch.setenv("NO_PROXY", "127.0.0.2")
        assert json.loads((await fetch(client, far_stub.url + "/v1/x"))[2]) == {
            "direct": "no_proxy"}
        monkeypatch.delenv("NO_PROXY")
        monkeypatch.delenv("HTTP_PROXY")
        monkeypatch.setenv("HTTPS_PROXY", proxy_server.url)  # names no proxy for http://
        assert json.loads((await fetch(client, far_stub.url + "/v1/y"))[2]) == {
            "direct": "https only"}
    assert proxy_server.handler.heads == [] and proxy_server.accepted == 0
    assert [r.path for r in far_stub.requests] == ["/v1/x", "/v1/y"]


@needs_alias
async def test_all_proxy_is_used_for_http(client, far_stub, monkeypatch):
    far_stub.script(Reply.json({}))
    async with RawServer(ForwardProxy()) as proxy_server:
        monkeypatch.setenv("ALL_PROXY", proxy_server.url)
        await fetch(client, far_stub.url + "/v1/x")
    assert len(proxy_server.handler.heads) == 1
