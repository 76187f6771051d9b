"""toolnexus._sse.SSEDecoder against the WHATWG event-stream rules, and one end-to-end run
through the client with CRLF line ends and UTF-8 characters cut by the network."""

from __future__ import annotations

import pytest

from tests.support.stub_provider import StubProvider, openai_stream
from toolnexus import ProviderError, create_client
from toolnexus._sse import SSEDecoder


def decode(*feeds: bytes) -> list[tuple[str, str]]:
    """Every event the decoder gives for these network reads, then close()."""
    decoder = SSEDecoder()
    events = [event for feed in feeds for event in decoder.feed(feed)]
    return events + decoder.close()


def bytewise(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


def msg(data: str) -> tuple[str, str]:
    return ("message", data)


# ----------------------------------------------------------------------------- line ends


@pytest.mark.parametrize("nl", ["\n", "\r", "\r\n"], ids=["LF", "CR", "CRLF"])
def test_line_ends(nl):
    body = f"data: a{nl}{nl}event: e{nl}data: b{nl}data: c{nl}{nl}".encode()
    expected = [msg("a"), ("e", "b\nc")]
    assert decode(body) == expected
    assert decode(*bytewise(body)) == expected  # one byte per network read


def test_mixed_line_ends_in_one_stream():
    assert decode(b"data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r") == [msg("a\nb\nc"), msg("d")]


def test_crlf_split_across_two_feeds_is_one_line_end():
    # Were the LF taken as a second (blank) line, "a" and "b" would be two events.
    assert decode(b"data: a\r", b"\ndata: b\r\n\r\n") == [msg("a\nb")]


def test_cr_at_the_end_of_a_feed_ends_the_line_at_once():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\r\r") == [msg("a")]  # no waiting for a possible LF
    assert decoder.feed(b"data: b\r") == []
    assert decoder.feed(b"data: c\r\r") == [msg("b\nc")]  # the next read need not be LF
    assert decoder.close() == []


# ----------------------------------------------------------------------------- fields


def test_comment_lines_are_keep_alives():
    body = b": keep-alive\n\n: OPENROUTER PROCESSING\n\ndata: a\n: in the middle\ndata: b\n\n"
    assert decode(body) == [msg("a\nb")]


@pytest.mark.parametrize(
    ("line", "data"),
    [
        (b"data: x", "x"),
        (b"data:x", "x"),
        (b"data:  x", " x"),
        (b"data:", ""),
        (b"data", ""),
        (b"data: a: b", "a: b"),
    ],
)
def test_data_with_and_without_the_space(line, data):
    assert decode(b"data: first\n" + line + b"\n\n") == [msg("first\n" + data)]


def test_several_data_lines_are_joined_by_newline():
    assert decode(b'data: {"a":\ndata: 1}\ndata:\n\n') == [msg('{"a":\n1}\n')]


def test_event_names_apply_to_one_event_only():
    body = b"event: message_start\ndata: {}\n\ndata: plain\n\nevent: ping\ndata: {}\n\n"
    assert decode(body) == [("message_start", "{}"), msg("plain"), ("ping", "{}")]


def test_event_without_data_is_not_dispatched():
    assert decode(b"event: lonely\n\ndata: x\n\n") == [msg("x")]


def test_id_and_retry_are_ignored():
    body = b"id: 7\nretry: 1000\n\nid: 8\ndata: x\nretry: 5\n\n"
    assert decode(body) == [msg("x")]


def test_an_error_field_is_an_error_event_of_its_own():
    """The one extension: llama.cpp's `error:` line (before ggml-org/llama.cpp#16109) is
    dispatched as it comes, named "error", whatever event it stands in; the standard would
    drop it and the failure's message with it."""
    body = b'error: {"code":500,"message":"boom"}\n\ndata: [DONE]\n\n'
    assert decode(body) == [("error", '{"code":500,"message":"boom"}'), msg("[DONE]")]
    assert decode(*bytewise(body)) == [("error", '{"code":500,"message":"boom"}'), msg("[DONE]")]
    assert decode(b"data: a\nerror:b\ndata: c\n\n") == [("error", "b"), msg("a\nc")]


def test_done_marker_passes_through_as_data():
    assert decode(b"data: [DONE]\n\n") == [msg("[DONE]")]


# ----------------------------------------------------------------------------- UTF-8


@pytest.mark.parametrize("char", ["é", "日", "🎉"])
def test_character_split_across_feeds_comes_out_whole(char):
    raw = char.encode()
    feeds = [b"data: x" + raw[:1], *bytewise(raw[1:]), b"y\n\n"]
    events = decode(*feeds)
    assert events == [msg(f"x{char}y")]
    assert "\ufffd" not in events[0][1]


def test_split_character_right_before_a_split_crlf():
    assert decode(b"data: \xe6\x97", b"\xa5\r", b"\n\r\n") == [msg("日")]


# ----------------------------------------------------------------------------- close()


def test_last_event_without_blank_line_is_dispatched_at_close():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: a\n\ndata: last") == [msg("a")]
    assert decoder.close() == [msg("last")]


def test_last_event_with_line_end_but_no_blank_line_at_close():
    decoder = SSEDecoder()
    assert decoder.feed(b"event: e\ndata: x\r\n") == []
    assert decoder.close() == [("e", "x")]


def test_close_flushes_an_unfinished_character_as_replacement():
    assert decode(b"data: a\xc3") == [msg("a\ufffd")]


# ----------------------------------------------------------------------------- end to end


@pytest.mark.parametrize("nl", ["\r\n", "\r", "\n"], ids=["CRLF", "CR", "LF"])
async def test_client_stream_with_three_byte_chunks(nl, no_keys_in_env):
    text = "Grüße aus Köln — 日本語 ok 🎉 fin"
    with StubProvider() as stub:
        stub.script(openai_stream(text, reasoning="überlegt … 思考", chunks=3, line_end=nl))
        async with create_client(base_url=stub.base_url, style="openai", model="m") as client:
            events = [event async for event in client.stream("hi", None)]
    deltas = [e["delta"] for e in events if e["type"] == "text"]
    assert len(deltas) > 1 and "".join(deltas) == text
    assert "".join(e["delta"] for e in events if e["type"] == "reasoning") == "überlegt … 思考"
    assert events[-1]["type"] == "done"
    result = events[-1]["result"]
    assert result.text == text
    assert result.usage == {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


# ----------------------------------------------------------------------------- BOM, limits


def test_a_byte_order_mark_at_the_start_is_dropped():
    assert decode(b"\xef\xbb\xbfdata: a\n\n") == [msg("a")]
    assert decode(b"\xef", b"\xbb", b"\xbfevent: e\ndata: b\n\n") == [("e", "b")]  # split
    assert decode(b"\xef\xbb\xbf", b"data: c\n\n") == [msg("c")]  # alone in the first read


def test_a_byte_order_mark_later_in_the_stream_is_data():
    assert decode(b"data: a\n\ndata: \xef\xbb\xbfb\n\n") == [msg("a"), msg("\ufeffb")]
    assert decode(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [msg("a")]  # a field named BOM+data


def test_an_unterminated_line_over_the_cap_is_refused():
    decoder = SSEDecoder()
    piece = b"x" * (1 << 20)
    decoder.feed(b"data: ")
    with pytest.raises(ProviderError, match="larger than 16 MiB"):
        for _ in range(17):
            decoder.feed(piece)


def test_an_event_of_many_lines_over_the_cap_is_refused():
    decoder = SSEDecoder()
    line = b"data: " + b"y" * (1 << 20) + b"\n"
    with pytest.raises(ProviderError, match="larger than 16 MiB"):
        for _ in range(17):
            decoder.feed(line)


def test_a_long_line_under_the_cap_arrives_whole():
    decoder = SSEDecoder()
    pieces = [b"data: "] + [b"z" * 65536] * 160 + [b"\n\n"]  # 10 MiB in 64 KiB reads
    events = [event for piece in pieces for event in decoder.feed(piece)]
    assert events == [msg("z" * (65536 * 160))]
