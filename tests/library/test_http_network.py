"""Model calls with no proxy go through toolnexus/transport/_network.py (httpcore2 on asyncio's
own transports): what a server sees on the wire, and bodies too big for one send."""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest

from tests.support.stub_provider import Reply, StubProvider, openai_text
from toolnexus import create_client


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch):
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


def client_on(base_url: str):
    return create_client(base_url=base_url, style="openai", model="m", api_key="k", retries=0)


class FirstReadServer:
    """Answers one request with an OpenAI reply, remembering what its first recv() got:
    a request sent in one write arrives whole, one sent head-then-body may not."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.base_url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.first_read = b""
        self.request = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        with conn:
            self.first_read = data = conn.recv(1 << 20)
            while b"\r\n\r\n" not in data:
                data += conn.recv(1 << 20)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(body) < length:
                body += conn.recv(1 << 20)
            self.request = data
            reply = json.dumps(openai_text("one piece")).encode()
            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (len(reply), reply)
            )

    def close(self) -> None:
        self.thread.join(timeout=10)
        self.listener.close()


async def test_a_request_leaves_in_one_write_head_and_body_together():
    server = FirstReadServer()
    try:
        async with client_on(server.base_url) as client:
            assert (await client.run("hello there", None)).text == "one piece"
    finally:
        server.close()
    assert server.first_read.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert server.first_read.endswith(b"}") and b"hello there" in server.first_read


async def test_a_request_body_larger_than_the_socket_takes_at_once_arrives_whole():
    big = "x" * (6 << 20)  # far past the socket buffer: the write waits for the server
    with StubProvider() as stub:
        stub.default = Reply.json(openai_text("got it"))
        async with client_on(stub.base_url) as client:
            assert (await client.run(big, None)).text == "got it"
            assert (await client.run("again", None)).text == "got it"  # same connection
        [first, second] = stub.requests
    assert first.json["messages"][-1]["content"] == big
    assert second.connection == first.connection
