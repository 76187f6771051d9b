"""The model-call transport on httpx2, against the loopback stub and small real servers
(tests/support/net_servers.py): the caller's http_client, pooling, proxies, TLS, the limits on a
reply, and replies that are not what the style promises."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import socket
import ssl
import sys

import httpx2
import pytest

from tests.support.net_servers import (
    ForwardProxy,
    H2Origin,
    JSONOrigin,
    LoopbackServer,
    Socks5Proxy,
    make_certificate,
)
from tests.support.resilience_helpers import collect, make_client
from tests.support.stub_provider import Reply, StubProvider, openai_stream, openai_text
from toolnexus import ProviderError, create_client

KEY = "sk-secret-key-0123456789"


def _loopback_alias_works() -> bool:
    """127.0.0.2 stands for a host that is not a loopback name (Linux routes all of 127/8
    to the loopback interface; macOS does not by default)."""
    try:
        with socket.socket() as probe:
            probe.bind(("127.0.0.2", 0))
        return True
    except OSError:
        return False


needs_alias = pytest.mark.skipif(not _loopback_alias_works(), reason="127.0.0.2 is not loopback")


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch):
    """Whatever proxies this machine names, the tests choose their own."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)


@pytest.fixture
def far_stub():
    """The stub on 127.0.0.2: loopback, but not a name that bypasses proxies by itself."""
    with StubProvider(host="127.0.0.2") as provider:
        yield provider


@pytest.fixture(scope="module")
def certificate(tmp_path_factory):
    made = make_certificate(tmp_path_factory.mktemp("tls"))
    if made is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    return made


@pytest.fixture
def server_tls(certificate):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


def trust(monkeypatch, certificate, trusted: bool) -> None:
    """Make new clients trust the test certificate (SSL_CERT_FILE), or only the system
    store."""
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    if trusted:
        monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    else:
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)


def client_on(base_url: str, **options):
    options.setdefault("retries", 0)
    return create_client(base_url=base_url, style="openai", model="m", api_key=KEY, **options)


async def answer_of(client) -> str:
    result = await client.run("hi", None)
    return result.text


# ----------------------------------------------------------------------------- the client


async def test_a_caller_http_client_is_used_and_never_closed():
    seen = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json=openai_text("from the mock"))

    mine = httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    async with client_on("https://api.example.test/v1", http_client=mine) as client:
        assert await answer_of(client) == "from the mock"
    assert not mine.is_closed  # Client.aclose left the caller's client alone
    [request] = seen
    assert str(request.url) == "https://api.example.test/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert json.loads(request.content)["model"] == "m"
    await mine.aclose()


async def test_runs_share_one_pooled_connection_until_aclose(stub):
    stub.default = Reply.json(openai_text("pooled"))
    client = client_on(stub.base_url)
    await answer_of(client)
    await answer_of(client)
    await client.aclose()
    await answer_of(client)  # a new pool, so a new connection
    await client.aclose()
    assert [r.connection for r in stub.requests] == [1, 1, 2]


def test_each_event_loop_gets_its_own_pool(stub):
    stub.default = Reply.json(openai_text("twice"))
    client = client_on(stub.base_url)
    assert asyncio.run(answer_of(client)) == "twice"
    assert asyncio.run(answer_of(client)) == "twice"  # the first loop's pool is not reused


@needs_alias
async def test_a_caller_http_client_with_its_own_proxy(far_stub):
    far_stub.script(Reply.json(openai_text("via your proxy")))
    proxy = ForwardProxy()
    async with LoopbackServer(proxy) as server:
        mine = httpx2.AsyncClient(proxy=server.url)
        async with client_on(far_stub.base_url, http_client=mine) as client:
            assert await answer_of(client) == "via your proxy"
        await mine.aclose()
    assert proxy.heads[0].startswith(f"POST {far_stub.base_url}/chat/completions HTTP/1.1")


# ----------------------------------------------------------------------------- proxies


@needs_alias
async def test_http_target_through_the_environment_proxy(far_stub, monkeypatch):
    far_stub.script(Reply.json(openai_text("proxied")))
    proxy = ForwardProxy()
    async with LoopbackServer(proxy) as server:
        monkeypatch.setenv("HTTP_PROXY", server.url)
        async with client_on(far_stub.base_url) as client:
            assert await answer_of(client) == "proxied"
    [head] = proxy.heads
    assert head.startswith(f"POST {far_stub.base_url}/chat/completions HTTP/1.1")
    assert far_stub.requests[0].headers["authorization"] == f"Bearer {KEY}"


@needs_alias
async def test_https_target_is_tunnelled_and_the_key_never_crosses_the_proxy_in_clear(
    monkeypatch, certificate, server_tls
):
    trust(monkeypatch, certificate, True)
    origin, proxy = JSONOrigin(openai_text("through the tunnel")), ForwardProxy()
    async with (
        LoopbackServer(origin, host="127.0.0.2", tls=server_tls) as target,
        LoopbackServer(proxy) as server,
    ):
        monkeypatch.setenv("HTTPS_PROXY", server.url)
        async with client_on(target.url + "/v1") as client:
            assert await answer_of(client) == "through the tunnel"
    assert proxy.heads[0].startswith(f"CONNECT 127.0.0.2:{target.port} HTTP/1.1")
    assert KEY.encode() not in proxy.seen and b"authorization" not in proxy.seen.lower()
    assert f"authorization: Bearer {KEY}".lower() in origin.heads[0].lower()


@needs_alias
async def test_an_https_proxy_is_spoken_to_over_tls(far_stub, monkeypatch, certificate, server_tls):
    trust(monkeypatch, certificate, True)
    far_stub.script(Reply.json(openai_text("via a TLS proxy")))
    proxy = ForwardProxy()
    async with LoopbackServer(proxy, tls=server_tls) as server:  # a plain hello would fail
        monkeypatch.setenv("HTTP_PROXY", server.url)
        assert server.url.startswith("https://")
        async with client_on(far_stub.base_url) as client:
            assert await answer_of(client) == "via a TLS proxy"
    assert proxy.heads[0].startswith(f"POST {far_stub.base_url}/chat/completions HTTP/1.1")


@needs_alias
async def test_no_proxy_and_loopback_names_go_direct(stub, far_stub, monkeypatch):
    stub.script(Reply.json(openai_text("loopback")))
    far_stub.script(Reply.json(openai_text("no_proxy")))
    proxy = ForwardProxy()
    async with LoopbackServer(proxy) as server:
        monkeypatch.setenv("HTTP_PROXY", server.url)
        monkeypatch.setenv("NO_PROXY", "127.0.0.2")
        async with client_on(stub.base_url) as client:
            assert await answer_of(client) == "loopback"
        async with client_on(far_stub.base_url) as client:
            assert await answer_of(client) == "no_proxy"
    assert proxy.heads == []


@needs_alias
async def test_a_socks5_proxy_carries_the_request(far_stub, monkeypatch):
    pytest.importorskip("socksio")
    far_stub.script(Reply.json(openai_text("over socks")))
    proxy = Socks5Proxy()
    async with LoopbackServer(proxy) as server:
        monkeypatch.setenv("ALL_PROXY", f"socks5://127.0.0.1:{server.port}")
        async with client_on(far_stub.base_url) as client:
            assert await answer_of(client) == "over socks"
    assert proxy.targets == [("127.0.0.2", far_stub.port)]


@needs_alias
async def test_a_socks_proxy_without_socks_support_is_one_clear_refusal(far_stub, monkeypatch):
    monkeypatch.setitem(sys.modules, "socksio", None)  # as if not installed
    monkeypatch.setenv("ALL_PROXY", "socks5://user:hunter2@127.0.0.1:9")
    async with client_on(far_stub.base_url, retries=2) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError)
    assert "SOCKS" in str(exc) and "toolnexus[socks]" in str(exc)
    assert "hunter2" not in str(exc)
    assert [e for e in events if e["type"] == "retry"] == [] and far_stub.requests == []


# ----------------------------------------------------------------------------- TLS


async def test_tls_refusal_names_ssl_cert_file_and_is_not_retried(
    monkeypatch, certificate, server_tls
):
    trust(monkeypatch, certificate, False)
    origin = JSONOrigin(openai_text("unreached"))
    async with LoopbackServer(origin, tls=server_tls) as target:
        async with client_on(target.url + "/v1", retries=2, retry_base_ms=1) as client:
            events, exc = await collect(client)
    assert isinstance(exc, ProviderError)
    assert "certificate" in str(exc) and "SSL_CERT_FILE" in str(exc)
    assert [e for e in events if e["type"] == "retry"] == [] and origin.heads == []


async def test_tls_trusted_through_ssl_cert_file(monkeypatch, certificate, server_tls):
    trust(monkeypatch, certificate, True)
    async with LoopbackServer(JSONOrigin(openai_text("over TLS")), tls=server_tls) as target:
        async with client_on(target.url + "/v1") as client:
            assert await answer_of(client) == "over TLS"


async def test_a_plain_http_endpoint_needs_no_trust_store(monkeypatch, tmp_path):
    """A local model server over plain http is reached without reading the TLS trust
    store: a broken SSL_CERT_FILE (meant for some https endpoint) does not stop it."""
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
    async with LoopbackServer(JSONOrigin(openai_text("no TLS here"))) as target:
        async with client_on(target.url + "/v1") as client:
            assert await answer_of(client) == "no TLS here"


async def test_an_endpoint_offering_http2_is_spoken_to_over_http2_on_one_connection(
    monkeypatch, certificate
):
    """h2 installed (toolnexus[http2]) and the server offering it: both calls of a run go
    over one HTTP/2 connection, as two streams, each with the whole request."""
    trust(monkeypatch, certificate, True)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(*certificate)
    tls.set_alpn_protocols(["h2", "http/1.1"])
    origin = H2Origin(openai_text("over HTTP/2"))
    async with LoopbackServer(origin, tls=tls) as target:
        async with client_on(target.url + "/v1") as client:
            assert await answer_of(client) == "over HTTP/2"
            assert await answer_of(client) == "over HTTP/2"
    assert origin.protocols == ["h2"]
    assert [sid for sid, _, _ in origin.requests] == [1, 3]
    for _, head, body in origin.requests:
        assert head[b":method"] == b"POST" and head[b":path"] == b"/v1/chat/completions"
        assert head[b"authorization"] == f"Bearer {KEY}".encode()
        assert json.loads(body)["messages"][-1]["content"] == "hi"


# ----------------------------------------------------------------------------- bad targets


@pytest.mark.parametrize(
    "url, words",
    [
        ("http://127.0.0.1:99999/v1", "invalid port"),
        ("127.0.0.1:8080/v1", "must start with http"),
        ("ftp://example.com/v1", "must start with http"),
        ("http:///v1", "name a host"),
    ],
)
def test_a_base_url_no_request_could_use_is_refused_at_once(url, words):
    with pytest.raises(ValueError, match=words):
        client_on(url)


@pytest.mark.parametrize(
    "headers, api_key, named",
    [
        ({}, "sk-a\r\nX-Injected: 1", "Authorization"),
        ({"X-Org": "org\nX-Injected: 1"}, "sk", "X-Org"),
        ({"X-Org": "org\x07"}, "sk", "X-Org"),
    ],
)
def test_a_header_with_a_line_break_or_control_character_is_refused(stub, headers, api_key, named):
    with pytest.raises(ValueError) as caught:
        create_client(
            base_url=stub.base_url, style="openai", model="m", api_key=api_key, headers=headers
        )
    assert named in str(caught.value) and "X-Injected" not in str(caught.value)
    assert stub.requests == []


# ----------------------------------------------------------------------------- limits


async def test_a_json_reply_over_32_mib_is_refused(stub):
    huge = b'{"choices": [{"message": {"content": "' + b"x" * (33 << 20) + b'"}}]}'
    stub.script(Reply.raw([huge], chunked=False))
    async with client_on(stub.base_url) as client:
        _, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "larger than 32 MiB" in str(exc)


async def test_one_stream_event_over_16_mib_is_refused(stub):
    stub.script(Reply.raw([b"data: " + b"x" * (1 << 20)] * 17))  # one line that never ends
    async with client_on(stub.base_url) as client:
        _, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "larger than 16 MiB" in str(exc)


async def test_a_body_inflating_past_64_mib_is_refused(stub):
    comment = b":" + b"k" * (8 << 20) + b"\n"  # keep-alive comments, each under the event cap
    bomb = gzip.compress(comment * 9, compresslevel=9)
    stub.script(
        Reply.raw(
            [bomb],
            chunked=False,
            headers={"Content-Encoding": "gzip", "Content-Type": "text/event-stream"},
        )
    )
    async with client_on(stub.base_url) as client:
        _, exc = await collect(client)
    assert len(bomb) < 1 << 20
    assert isinstance(exc, ProviderError) and "more than 64 MiB" in str(exc)


async def test_a_gzip_stream_is_decoded(stub):
    reply = openai_stream("squeezed")
    body = gzip.compress(b"".join(reply.parts))
    stub.script(
        Reply.raw(
            [body],
            chunked=False,
            headers={"Content-Encoding": "gzip", "Content-Type": "text/event-stream"},
        )
    )
    async with client_on(stub.base_url) as client:
        events, exc = await collect(client)
    assert exc is None and events[-1]["result"].text == "squeezed"


async def test_an_error_body_is_read_only_up_to_its_cap(stub):
    stub.script(
        Reply.raw(
            [b"E" * (4 << 20)], status=400, chunked=False, headers={"Content-Type": "text/plain"}
        )
    )
    async with client_on(stub.base_url) as client:
        _, exc = await collect(client)
    assert isinstance(exc, ProviderError) and exc.status == 400
    assert len(str(exc)) < 80 * 1024


# ----------------------------------------------------------------------------- not a reply


async def test_an_html_page_is_an_error_that_says_so(stub):
    stub.script(
        Reply.raw(
            [b"<html><body>Welcome to nginx</body></html>"],
            chunked=False,
            headers={"Content-Type": "text/html; charset=utf-8"},
        )
    )
    async with client_on(stub.base_url) as client:
        _, exc = await collect(client)
    assert isinstance(exc, ProviderError)
    assert "HTML page (is the base URL right?" in str(exc) and stub.base_url in str(exc)


@pytest.mark.parametrize(
    "reply, words",
    [
        (Reply.raw([], chunked=False), "empty reply"),  # JSON content type, no body
        (Reply.raw([]), "ended before the reply was complete"),  # a stream that ends at once
        (Reply.raw([b": keep-alive\n\n"]), "ended before the reply was complete"),
    ],
    ids=["json", "stream", "comment-only"],
)
async def test_an_empty_reply_is_an_error(stub, reply, words):
    stub.script(reply)
    async with client_on(stub.base_url) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and words in str(exc)
    assert [e for e in events if e["type"] == "text"] == []


@pytest.mark.parametrize("label", ["application/json", "text/plain", ""])
@pytest.mark.parametrize("streamed", [True, False], ids=["stream", "run"])
async def test_sse_under_another_content_type_is_read_as_sse(stub, label, streamed):
    """Relays and gateways send a healthy SSE body as application/json, text/plain or with
    no type at all (xiaoliu10/claude-code-router-next#45): it is read by what it is."""
    reply = openai_stream(["whole ", "answer"], chunks=3)  # even when it trickles in
    stub.script(Reply.raw(reply.parts, headers={"Content-Type": label}))
    async with client_on(stub.base_url) as client:
        if streamed:
            events, exc = await collect(client)
            assert exc is None and [e["delta"] for e in events if e["type"] == "text"] == [
                "whole ",
                "answer",
            ]
            text = events[-1]["result"].text
        else:
            text = (await client.run("hi", None)).text
    assert text == "whole answer"


async def test_a_json_body_under_text_event_stream_is_read_as_json(stub):
    """A server answering a streaming request with one JSON body labelled as a stream
    (mistralai/mistral-vibe#619) gives its answer, never an empty success."""
    body = json.dumps(openai_text("one piece", usage=(3, 2))).encode()
    stub.script(Reply.raw([b"\n", body], headers={"Content-Type": "text/event-stream"}))
    async with client_on(stub.base_url) as client:
        events, exc = await collect(client)
    assert exc is None
    assert [e["delta"] for e in events if e["type"] == "text"] == ["one piece"]
    assert events[-1]["result"].usage["completion_tokens"] == 2


async def test_broken_json_under_text_event_stream_is_one_clear_error(stub):
    stub.script(
        Reply.raw([b'{"choices": [{"message": '], headers={"Content-Type": "text/event-stream"})
    )
    async with client_on(stub.base_url) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "not valid JSON" in str(exc)
    assert "\n" not in str(exc) and [e for e in events if e["type"] == "text"] == []


async def test_a_redirect_is_not_followed_and_names_where_it_pointed(stub):
    stub.script(
        Reply.raw(
            [b""],
            status=308,
            chunked=False,
            headers={"Location": "https://elsewhere.example/v1/chat/completions"},
        )
    )
    async with make_client(stub) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError)
    assert "redirect" in str(exc) and "https://elsewhere.example/v1/chat/completions" in str(exc)
    assert len(stub.requests) == 1  # neither followed nor retried


@pytest.mark.parametrize("proxy", ["ftp://user:hunter2@127.0.0.1:9", "http://user:hunter2@[::1"])
async def test_an_unusable_proxy_is_one_line_without_its_password(monkeypatch, proxy):
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    async with client_on("https://api.example.test/v1", retries=2) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "proxy" in str(exc)
    assert "hunter2" not in str(exc) and [e for e in events if e["type"] == "retry"] == []
