"""The fake endpoint itself: framing, keep-alive, scripting, hangs and drops."""

import json
import socket

import httpx2 as httpx
import pytest

from tests.support.stub_provider import (
    Reply,
    StubProvider,
    anthropic_stream,
    openai_stream,
    openai_text,
)
from tests.support.waiting import WAIT_S


def raw_exchange(stub: StubProvider, path: str = "/v1/x") -> bytes:
    """Send one request over a bare socket and return every byte of the answer."""
    with socket.create_connection(("127.0.0.1", stub.port), timeout=5) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return data


def test_json_reply_and_recorded_request(stub):
    stub.script(Reply.json(openai_text("hi there", usage=(3, 2))))
    r = httpx.post(
        stub.base_url + "/chat/completions",
        json={"model": "m", "messages": []},
        headers={"Authorization": "Bearer sk-test"},
    )
    assert r.status_code == 200 and r.headers["content-length"] == str(len(r.content))
    assert r.json()["choices"][0]["message"]["content"] == "hi there"
    assert r.json()["usage"] == {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    req = stub.requests[0]
    assert (req.method, req.path) == ("POST", "/v1/chat/completions")
    assert req.headers["authorization"] == req.headers.get("Authorization") == "Bearer sk-test"
    assert req.json == {"model": "m", "messages": []} and json.loads(req.body) == req.json


@pytest.mark.parametrize("nl", ["\n", "\r\n", "\r"])
def test_sse_is_chunked_and_ordered(stub, nl):
    stub.script(Reply.sse([{"a": 1}, "two", ("ev", {"b": "é"})], line_end=nl, done=True))
    with httpx.stream("GET", stub.url + "/s") as r:
        assert r.headers["transfer-encoding"] == "chunked"
        assert r.headers["content-type"] == "text/event-stream"
        body = r.read().decode()
    expected = ['data: {"a": 1}', "data: two", "event: ev", 'data: {"b": "é"}', "data: [DONE]"]
    assert body == (nl + nl).join([*expected[:2], nl.join(expected[2:4]), expected[4]]) + nl * 2


def test_chunk_framing_on_the_wire(stub):
    stub.script(Reply.sse(["é"], chunks=7), Reply.raw([b"ab", b"", b"c"], pause=0.01))
    head, _, body = raw_exchange(stub).partition(b"\r\n\r\n")
    assert b"Transfer-Encoding: chunked" in head
    assert body == b"7\r\ndata: \xc3\r\n3\r\n\xa9\n\n\r\n0\r\n\r\n"  # cuts the UTF-8 char
    assert raw_exchange(stub).partition(b"\r\n\r\n")[2] == b"2\r\nab\r\n1\r\nc\r\n0\r\n\r\n"


def test_keep_alive_and_connection_close(stub):
    stub.script(*[Reply.json({"n": i}) for i in range(4)])
    with httpx.Client() as client:
        assert [client.get(stub.url + "/a").json()["n"] for _ in range(2)] == [0, 1]
        r = client.get(stub.url + "/b", headers={"Connection": "close"})
        assert r.headers["connection"] == "close"
        client.get(stub.url + "/c")
    assert [q.connection for q in stub.requests] == [1, 1, 1, 2]


def test_errors_and_retry_after(stub):
    stub.script(
        Reply.error(429, "slow down", headers={"Retry-After": "2"}),
        Reply.error(529, "busy", style="anthropic"),
    )
    r = httpx.get(stub.url)
    assert r.status_code == 429 and r.headers["retry-after"] == "2"
    assert r.json()["error"]["message"] == "slow down"
    r = httpx.get(stub.url)
    assert r.status_code == 529
    assert r.json() == {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}


def test_hang_notices_client_disconnect(stub):
    stub.script(Reply.hang())
    with pytest.raises(httpx.ReadTimeout), httpx.Client(timeout=httpx.Timeout(5, read=0.1)) as c:
        c.get(stub.url)
    assert stub.wait_for_requests(1)
    assert stub.requests[0].disconnected.wait(WAIT_S)
    assert stub.requests[0].disconnected_at is not None


def test_hang_after_then_cancel_mid_stream(stub):
    stub.script(Reply.hang_after(["data: first\n\n"]))
    with httpx.Client() as c, c.stream("GET", stub.url) as r:
        assert next(r.iter_lines()) == "data: first"
    assert stub.requests[0].disconnected.wait(WAIT_S)


def test_drop_and_close_without_response(stub):
    stub.script(Reply.drop_after(["data: x\n\n"]), Reply.close_without_response())
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(stub.url)
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(stub.url)


def test_script_order_default_and_handler(stub):
    stub.script(Reply.json({"n": 1}), Reply.json({"n": 2}))
    assert [httpx.get(stub.url).json()["n"] for _ in range(2)] == [1, 2]
    r = httpx.get(stub.url)
    assert r.status_code == 500 and r.json()["error"]["message"] == "stub: no scripted reply"
    stub.handler = lambda req: Reply.json({"path": req.path})
    assert httpx.get(stub.url + "/v1/echo").json() == {"path": "/v1/echo"}


def sse_data(reply: Reply) -> list:
    text = b"".join(reply.parts).decode()
    return [json.loads(line[6:]) for line in text.split("\n") if line.startswith("data: {")]


def test_stream_helpers_assemble():
    chunks = sse_data(openai_stream("Hello big world", tool_calls=[("f", {"x": 1})]))
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "Hello big world"
    args = "".join(t["function"]["arguments"] for d in deltas for t in d.get("tool_calls", []))
    assert json.loads(args) == {"x": 1} and chunks[-1]["usage"]["total_tokens"] == 15
    events = sse_data(anthropic_stream("ok", tool_calls=[("f", {"y": 2})], thinking="hmm"))
    kinds = [e["delta"]["type"] for e in events if e["type"] == "content_block_delta"]
    assert kinds[:2] == ["thinking_delta", "signature_delta"] and "text_delta" in kinds
    assert events[-2]["delta"]["stop_reason"] == "tool_use"


def test_close_cuts_open_connections():
    stub = StubProvider().start()
    stub.script(Reply.hang())
    with socket.create_connection(("127.0.0.1", stub.port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert stub.wait_for_requests(1)
        stub.close()
        assert sock.recv(10) == b""
    assert not stub.requests[0].disconnected.is_set()
