"""Loopback servers the transport tests need beside the stub provider: a TLS origin, an
HTTP forward proxy (absolute-form requests and CONNECT tunnels) and a SOCKS5 proxy; and
`dead_port`, for an endpoint that is down.

Each records what the client sent it, so a test can check what travelled in clear text.
They run on the test's own event loop; waits are on sockets, never on sleeps.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from urllib.parse import urlsplit

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def dead_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LoopbackServer:
    """An asyncio server on 127.0.0.1 (plain or TLS) handing each connection to `handler`."""

    def __init__(
        self, handler: Handler, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None
    ) -> None:
        self.handler, self.host, self.tls = handler, host, tls
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    async def __aenter__(self) -> LoopbackServer:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            self._tasks.add(task)
            try:
                await self.handler(reader, writer)
            except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                pass
            finally:
                self._tasks.discard(task)
                writer.close()

        self._server = await asyncio.start_server(serve, self.host, 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

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


class JSONOrigin:
    """An endpoint answering every POST with one OpenAI text reply; `heads` is what it got."""

    def __init__(self, body: dict) -> None:
        self.body = json.dumps(body).encode()
        self.heads: list[str] = []

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head, _ = await read_request(reader)
            self.heads.append(head)
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(self.body), self.body)
            )
            await writer.drain()


class H2Origin:
    """An HTTP/2 endpoint (TLS with ALPN "h2", the h2 package's server side) answering every
    request with one OpenAI text reply; `protocols` is what each connection negotiated and
    `requests` the (stream id, headers, body) of each request."""

    def __init__(self, body: dict) -> None:
        self.body = json.dumps(body).encode()
        self.protocols: list[str | None] = []
        self.requests: list[tuple[int, dict[bytes, bytes], bytes]] = []

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        from h2.config import H2Configuration
        from h2.connection import H2Connection
        from h2.events import DataReceived, RequestReceived, StreamEnded

        self.protocols.append(writer.get_extra_info("ssl_object").selected_alpn_protocol())
        conn = H2Connection(H2Configuration(client_side=False))
        conn.initiate_connection()
        writer.write(conn.data_to_send())
        heads: dict[int, dict[bytes, bytes]] = {}
        bodies: dict[int, bytes] = {}
        while data := await reader.read(65536):
            for event in conn.receive_data(data):
                if isinstance(event, RequestReceived):
                    heads[event.stream_id] = dict(event.headers)
                    bodies[event.stream_id] = b""
                elif isinstance(event, DataReceived):
                    bodies[event.stream_id] += event.data
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, StreamEnded):
                    sid = event.stream_id
                    self.requests.append((sid, heads.pop(sid), bodies.pop(sid)))
                    conn.send_headers(
                        sid,
                        [
                            (":status", "200"),
                            ("content-type", "application/json"),
                            ("content-length", str(len(self.body))),
                        ],
                    )
                    conn.send_data(sid, self.body, end_stream=True)
            writer.write(conn.data_to_send())
            await writer.drain()


class ForwardProxy:
    """An HTTP proxy: forwards absolute-form requests, tunnels CONNECT. `heads` holds the
    request heads it read, `seen` every byte the client sent it (tunnelled ones included)."""

    def __init__(self) -> None:
        self.heads: list[str] = []
        self.seen = bytearray()

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raw = await reader.readuntil(b"\r\n\r\n")
        self.seen += raw
        head = raw.decode("latin-1")
        self.heads.append(head)
        method, target, _ = head.split("\r\n", 1)[0].split(" ", 2)
        if method == "CONNECT":
            host, port = target.rsplit(":", 1)
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            parts = urlsplit(target)
            up_reader, up_writer = await asyncio.open_connection(parts.hostname, parts.port)
            lines = head.split("\r\n")
            lines[0] = f"{method} {parts.path or '/'} HTTP/1.1"
            up_writer.write("\r\n".join(lines).encode("latin-1"))
        await pipe_both(reader, writer, up_reader, up_writer, self.seen)


class Socks5Proxy:
    """A SOCKS5 proxy without authentication; `targets` lists the (host, port) asked for."""

    def __init__(self) -> None:
        self.targets: list[tuple[str, int]] = []

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        version, count = await reader.readexactly(2)
        await reader.readexactly(count)  # the methods offered; "no authentication" is taken
        writer.write(b"\x05\x00")
        _, _, _, kind = await reader.readexactly(4)
        if kind == 1:
            host = ".".join(str(b) for b in await reader.readexactly(4))
        elif kind == 3:
            host = (await reader.readexactly((await reader.readexactly(1))[0])).decode()
        else:
            raise EOFError("IPv6 targets are not needed here")
        port = int.from_bytes(await reader.readexactly(2), "big")
        self.targets.append((host, port))
        up_reader, up_writer = await asyncio.open_connection(host, port)
        writer.write(b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")
        await pipe_both(reader, writer, up_reader, up_writer)


async def pipe_both(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    up_reader: asyncio.StreamReader,
    up_writer: asyncio.StreamWriter,
    record: bytearray | None = None,
) -> None:
    await asyncio.gather(_pipe(reader, up_writer, record), _pipe(up_reader, writer))


async def _pipe(
    source: asyncio.StreamReader, sink: asyncio.StreamWriter, record: bytearray | None = None
) -> None:
    try:
        while data := await source.read(65536):
            if record is not None:
                record += data
            sink.write(data)
            await sink.drain()
    except OSError:
        pass
    finally:
        sink.close()


def make_certificate(folder: Path) -> tuple[Path, Path] | None:
    """A throwaway self-signed certificate for localhost and 127.0.0.1-2 (cert, key), or
    None when the openssl command is missing."""
    openssl = shutil.which("openssl")
    if openssl is None:
        return None
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:127.0.0.2",
            "-addext",
            "keyUsage=critical,digitalSignature,keyCertSign",
            "-addext",
            "extendedKeyUsage=serverAuth",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key
