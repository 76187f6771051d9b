"""Retries against the stub endpoint (issue 3, "Retries" and acceptance point 1).

Delays are asserted on the `retry` events, not on the wall clock. Where a test proves a
server-requested wait is honoured, `retry_base_ms` is set huge so that falling back to
backoff would show (and `timeout_ms` keeps such a failure from hanging the suite). What
`on_error` may decide, where no header or connection is involved, is checked on the
scripted model.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.resilience_helpers import (
    THREAD,
    assert_resendable,
    assert_wire_resendable,
    collect,
    make_client,
    ok_reply,
    partial_parts,
    text_of_events,
)
from tests.support.scripted import scripted_client
from tests.support.stub_provider import Reply
from toolnexus import (
    AuthFailed,
    Client,
    Overloaded,
    ProviderError,
    RateLimited,
    RunTimeout,
    ServerError,
)
from toolnexus.testing import ScriptedModel, failure

STYLES = ["openai", "anthropic"]
HUGE_BASE_MS = 60_000  # backoff would wait 30-60 s: only a honoured header is fast


def retries_of(events):
    return [e for e in events if e["type"] == "retry"]


def fast_retrying(model: ScriptedModel, **options: Any) -> Client:
    """A client on the scripted model with make_client's fast retries."""
    options.setdefault("retries", 2)
    return scripted_client(model, retry_base_ms=1, **options)


# ----------------------------------------------------------------------------- what is retried


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("status", [408, 409, 429, 500, 501, 502, 503, 504, 520, 529, 599])
async def test_retryable_status_is_retried(stub, style, status):
    """Retried as the official SDKs retry (openai/openai-python src/openai/_base_client.py
    and anthropics/anthropic-sdk-python src/anthropic/_base_client.py, `_should_retry`):
    408, 409 (lock timeouts), 429 and every status from 500 up."""
    stub.script(Reply.error(status, "try again later", style=style), ok_reply(style, "ok"))
    async with make_client(stub, style, retries=2, retry_base_ms=1) as client:
        events, exc = await collect(client)
    assert exc is None
    assert events[-1]["type"] == "done" and events[-1]["result"].text == "ok"
    [retry] = retries_of(events)
    assert retry["attempt"] == 1 and retry["delay"] >= 0
    assert str(status) in retry["reason"] or "rate limited" in retry["reason"]
    assert len(stub.requests) == 2
    assert stub.requests[0].json == stub.requests[1].json  # the same request, re-sent


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 422])
async def test_other_4xx_is_never_retried(stub, style, status):
    stub.script(Reply.error(status, "no good", style=style), ok_reply(style, "unreached"))
    async with make_client(stub, style, retries=3, retry_base_ms=1) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError)
    assert exc.status == status and exc.provider_message == "no good"
    assert retries_of(events) == []
    assert len(stub.requests) == 1


@pytest.mark.parametrize(
    ("status", "header", "retried"),
    [
        (503, "false", False),
        (429, "false", False),
        (400, "true", True),
        (409, "true", True),
        (409, "false", False),
        (520, "false", False),
        (500, "True", True),
    ],
)
async def test_x_should_retry_overrides_the_status(stub, status, header, retried):
    """The official SDKs obey `x-should-retry` before looking at the status
    (openai/openai-python src/openai/_base_client.py, `_should_retry`): "false" is never
    retried, "true" always is."""
    stub.script(
        Reply.error(status, "said the server", headers={"x-should-retry": header}),
        ok_reply("openai", "ok"),
    )
    async with make_client(stub, retries=2, retry_base_ms=1) as client:
        events, exc = await collect(client)
    assert len(stub.requests) == (2 if retried else 1)
    assert len(retries_of(events)) == (1 if retried else 0)
    if retried:
        assert exc is None and events[-1]["result"].text == "ok"
    else:
        assert isinstance(exc, ProviderError) and exc.status == status


async def test_connection_closed_before_the_response_is_retried(stub):
    stub.script(Reply.close_without_response(), ok_reply("openai", "second time lucky"))
    async with make_client(stub, retries=1) as client:
        events, exc = await collect(client)
    assert exc is None and events[-1]["result"].text == "second time lucky"
    [retry] = retries_of(events)
    assert retry["attempt"] == 1 and "connection" in retry["reason"]
    assert len(stub.requests) == 2


@pytest.mark.parametrize(
    "broken",
    [
        Reply.drop_after([]),  # SSE headers, then the connection closes: no event yet
        Reply.drop_after([b": keep-alive comment\n\n"]),  # only a comment: nothing shown
        Reply(
            200,
            {"Content-Type": "application/json"},
            [b'{"id": "chatcmpl-x", "cho'],
            chunked=True,
            end="drop",
        ),  # a JSON body cut off half way
    ],
    ids=["headers-only", "comment-only", "json-cut"],
)
async def test_a_response_broken_before_any_output_is_retried(stub, broken):
    stub.script(broken, ok_reply("openai", "whole"))
    async with make_client(stub, retries=1) as client:
        events, exc = await collect(client)
    assert exc is None and events[-1]["result"].text == "whole"
    assert text_of_events(events) == "whole"  # nothing from the broken attempt
    [retry] = retries_of(events)
    assert retry["reason"] == "connection dropped"
    assert len(stub.requests) == 2


async def test_connection_closed_every_time_fails_with_a_connection_error(stub):
    stub.default = Reply.close_without_response()
    async with make_client(stub, retries=2) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and exc.status is None
    assert "connection" in str(exc) and stub.url in str(exc)
    assert [r["attempt"] for r in retries_of(events)] == [1, 2]
    assert len(stub.requests) == 3


async def test_connection_refused_is_retried_then_fails():
    import socket

    # A bound socket that never listens: connecting to it is refused, and nobody else
    # can take the port while the test runs.
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        from toolnexus import create_client

        client = create_client(
            base_url=f"http://127.0.0.1:{port}/v1",
            style="openai",
            model="m",
            api_key="k",
            retries=1,
            retry_base_ms=1,
        )
        async with client:
            events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "could not connect" in str(exc)
    [retry] = retries_of(events)
    assert "connect" in retry["reason"]


# ----------------------------------------------------------------------------- how long to wait


async def test_backoff_is_exponential_with_jitter_and_bounded_by_retries(stub):
    stub.default = Reply.error(500, "down")
    async with make_client(stub, retries=3, retry_base_ms=20) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and exc.status == 500
    assert "down" in str(exc)
    retries = retries_of(events)
    # each says which retry it is, and of how many at most
    assert [(r["attempt"], r["max_attempts"]) for r in retries] == [(1, 3), (2, 3), (3, 3)]
    for r in retries:
        full = 0.020 * 2 ** (r["attempt"] - 1)
        assert full / 2 <= r["delay"] <= full, r  # jittered within [half, full]
    assert len(stub.requests) == 4  # 1 + retries, then it stops


async def test_retries_zero_means_one_attempt(stub):
    stub.default = Reply.error(503, "busy")
    async with make_client(stub, retries=0) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and exc.status == 503
    assert retries_of(events) == [] and len(stub.requests) == 1


async def test_retry_after_zero_is_retried_at_once(stub):
    stub.script(
        Reply.error(429, "slow down", headers={"Retry-After": "0"}), ok_reply("openai", "ok")
    )
    async with make_client(stub, retry_base_ms=HUGE_BASE_MS, timeout_ms=10_000) as client:
        events, exc = await collect(client)
    assert exc is None and events[-1]["result"].text == "ok"
    [retry] = retries_of(events)
    assert retry == {
        "type": "retry",
        "attempt": 1,
        "max_attempts": 2,
        "delay": 0.0,
        "reason": "rate limited",
    }


async def test_retry_after_ms_is_honoured_exactly(stub):
    stub.script(
        Reply.error(429, "slow down", headers={"retry-after-ms": "15"}), ok_reply("openai", "ok")
    )
    async with make_client(stub, retry_base_ms=HUGE_BASE_MS, timeout_ms=10_000) as client:
        events, exc = await collect(client)
    assert exc is None
    assert [r["delay"] for r in retries_of(events)] == [0.015]


async def test_retry_after_ms_wins_over_retry_after(stub):
    # OpenAI sends both; the millisecond one is the precise one.
    stub.script(
        Reply.error(429, "slow", headers={"retry-after-ms": "5", "Retry-After": "1"}),
        ok_reply("openai", "ok"),
    )
    async with make_client(stub, retry_base_ms=HUGE_BASE_MS, timeout_ms=10_000) as client:
        events, exc = await collect(client)
    assert exc is None and [r["delay"] for r in retries_of(events)] == [0.005]


async def test_retry_after_seconds_is_reported_before_sleeping(stub):
    """The retry event arrives before the wait: the next request has not been sent yet,
    and a consumer that stops there never waits at all."""
    stub.script(
        Reply.error(503, "busy", headers={"Retry-After": "7"}), ok_reply("openai", "unreached")
    )
    async with make_client(stub, retry_base_ms=1) as client:
        stream = client.stream("hi", None)
        event = await anext(stream)
        assert event == {
            "type": "retry",
            "attempt": 1,
            "max_attempts": 2,
            "delay": 7.0,
            "reason": "the server answered 503",
        }
        assert len(stub.requests) == 1
        await stream.aclose()
    assert len(stub.requests) == 1


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"},  # an HTTP-date in the past
        {"Retry-After": "Fri, 31 Dec 2999 23:59:59 GMT"},  # and one far in the future
        {"Retry-After": "soon"},
        {"Retry-After": "-5"},
        {"Retry-After": ""},
        {"Retry-After": "nan"},
        {"Retry-After": "inf"},
        {"Retry-After": "1e999"},
        {"retry-after-ms": "abc"},
        {"retry-after-ms": "-100"},
    ],
    ids=lambda h: f"{next(iter(h))}={next(iter(h.values()))!r}",
)
async def test_unusable_retry_after_falls_back_to_backoff(stub, headers):
    stub.script(Reply.error(429, "slow", headers=headers), ok_reply("openai", "ok"))
    async with make_client(stub, retry_base_ms=20) as client:
        events, exc = await collect(client)
    assert exc is None and events[-1]["result"].text == "ok"
    [retry] = retries_of(events)
    assert 0.010 <= retry["delay"] <= 0.020  # attempt 1 backoff: never negative, never huge


@pytest.mark.parametrize(
    ("headers", "asked"),
    [
        ({"Retry-After": "61"}, "61 s"),
        ({"Retry-After": "3600"}, "3600 s"),
        ({"retry-after-ms": "120000"}, "120 s"),
    ],
)
@pytest.mark.parametrize("retries", [5, 0])
async def test_a_wait_over_60s_fails_at_once_saying_how_long(stub, headers, asked, retries):
    stub.script(Reply.error(429, "quota exhausted", headers=headers), ok_reply("openai", "x"))
    async with make_client(stub, retries=retries) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError)
    assert exc.status == 429 and exc.retry_after == float(asked.split()[0])
    assert asked in str(exc) and "quota exhausted" in str(exc)
    assert retries_of(events) == [] and len(stub.requests) == 1


async def test_a_wait_beyond_the_run_deadline_fails_at_once(stub):
    stub.script(
        Reply.error(503, "maintenance", headers={"Retry-After": "30"}), ok_reply("openai", "x")
    )
    async with make_client(stub, retries=5, timeout_ms=5_000) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and not isinstance(exc, RunTimeout)
    assert exc.status == 503 and exc.retry_after == 30
    assert "30 s" in str(exc) and "maintenance" in str(exc)
    assert retries_of(events) == [] and len(stub.requests) == 1


async def test_an_exhausted_retry_after_is_still_reported(stub):
    """With no retries left the error still tells the caller what the server asked."""
    stub.script(Reply.error(429, "slow", headers={"Retry-After": "12"}))
    async with make_client(stub, retries=0) as client:
        _, exc = await collect(client)
    assert isinstance(exc, ProviderError) and exc.status == 429
    assert exc.retry_after == 12


# ----------------------------------------------------------------------------- on_error


async def test_on_error_can_force_fail(stub):
    seen = []

    def on_error(info):
        seen.append(info)
        return "fail"

    stub.script(Reply.error(503, "busy", headers={"Retry-After": "0"}), ok_reply("openai", "x"))
    async with make_client(stub, retries=3, on_error=on_error) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and exc.status == 503
    assert retries_of(events) == [] and len(stub.requests) == 1
    [info] = seen
    assert info["status"] == 503 and info["attempt"] == 1
    assert info["retry_after"] == 0 and "busy" in info["message"]
    assert info["reason"] == "the server answered 503"


async def test_on_error_cannot_go_beyond_retries():
    calls = []

    def on_error(info):
        calls.append(info["attempt"])
        return "retry"

    model = ScriptedModel(respond=lambda request: failure(500, "down"))
    async with fast_retrying(model, retries=1, on_error=on_error) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and exc.status == 500
    assert calls == [1] and len(retries_of(events)) == 1
    assert len(model.requests) == 2


async def test_on_error_returning_none_keeps_the_default(scripted):
    scripted.add(failure(502, "bad gateway"), "ok")
    async with fast_retrying(scripted, on_error=lambda info: None) as client:
        events, exc = await collect(client)
    assert exc is None and len(retries_of(events)) == 1


@pytest.mark.parametrize("answer", ["retry", "fail"])
async def test_on_error_may_be_async(scripted, answer):
    async def on_error(info):
        await asyncio.sleep(0)
        return answer

    scripted.add(failure(503, "busy"), "ok")
    async with fast_retrying(scripted, on_error=on_error) as client:
        events, exc = await collect(client)
    if answer == "retry":
        assert exc is None and len(scripted.requests) == 2
    else:
        assert isinstance(exc, ProviderError) and len(scripted.requests) == 1


async def test_on_error_retry_still_cannot_beat_a_long_retry_after(stub):
    stub.script(Reply.error(429, "later", headers={"Retry-After": "90"}))
    async with make_client(stub, on_error=lambda info: "retry") as client:
        _, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "90 s" in str(exc)
    assert len(stub.requests) == 1


# ----------------------------------------------------------------------------- mid-stream


@pytest.mark.parametrize("style", STYLES)
async def test_stream_failing_after_output_began_is_not_retried(stub, style):
    stub.script(Reply.drop_after(partial_parts(style, "The answer is")))
    stub.default = ok_reply(style, "unreached")  # what a retry would get
    async with make_client(stub, style, retries=3) as client:
        events, exc = await collect(client, "question", id=THREAD)
        assert isinstance(exc, ProviderError)
        assert "connection" in str(exc)
        assert text_of_events(events) == "The answer is"
        assert retries_of(events) == [] and len(stub.requests) == 1

        messages = exc.result.messages
        assert messages[-1] == {
            "role": "assistant",
            "content": "The answer is",
            "interrupted": True,
        }
        assert_resendable(messages, "question")
        assert await client.conversation_store.get(THREAD) == messages

        # The thread goes on from what the user saw.
        stub.script(ok_reply(style, "...42."))
        result = await client.ask("go on", None, id=THREAD)
        assert result.text == "...42."
        assert_wire_resendable(stub.requests[-1].json, style)
        assert (await client.conversation_store.get(THREAD))[-1]["content"] == "...42."


async def test_stream_failure_after_output_kept_by_conversation_and_ask(stub):
    stub.script(Reply.drop_after(partial_parts("openai", "Partial words")))
    async with make_client(stub, retries=2) as client:
        conversation = client.conversation(None)
        with pytest.raises(ProviderError):
            await conversation.send("question")
        assert conversation.messages[-1]["content"] == "Partial words"
        assert conversation.messages[-1]["interrupted"] is True
        assert_resendable(conversation.messages, "question")
        stub.script(ok_reply("openai", "fine"))
        assert (await conversation.send("again")).text == "fine"
        assert_wire_resendable(stub.requests[-1].json, "openai")

        stub.script(Reply.drop_after(partial_parts("openai", "Half an")))
        deltas = []
        with pytest.raises(ProviderError) as info:
            await client.ask("q2", None, id="t2", on_text=deltas.append)
        assert "".join(deltas) == "Half an"
        saved = await client.conversation_store.get("t2")
        assert saved == info.value.result.messages
        assert saved[-1] == {"role": "assistant", "content": "Half an", "interrupted": True}
    assert len(stub.requests) == 3


async def test_error_event_inside_a_stream_after_output_is_not_retried(stub):
    parts = partial_parts("openai", "Some text")
    parts.append(b'data: {"error": {"message": "overloaded mid-way", "type": "server_error"}}\n\n')
    stub.script(Reply.raw(parts), ok_reply("openai", "unreached"))
    async with make_client(stub, retries=2) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "overloaded mid-way" in str(exc)
    assert text_of_events(events) == "Some text" and len(stub.requests) == 1
    assert exc.result.messages[-1]["interrupted"] is True


async def test_an_overloaded_error_before_any_output_is_retried_anthropic(stub):
    """Anthropic answers 200, starts the message, then reports it is overloaded: nothing was
    shown yet, so the request is retried like a 529."""
    overloaded = Reply.sse(
        [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "content": [],
                        "model": "claude-stub",
                        "usage": {"input_tokens": 5, "output_tokens": 1},
                    },
                },
            ),
            ("ping", {"type": "ping"}),
            (
                "error",
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            ),
        ]
    )
    stub.script(overloaded, ok_reply("anthropic", "fine now"))
    async with make_client(stub, "anthropic", retries=2) as client:
        events, exc = await collect(client)
    assert exc is None
    assert [r["reason"] for r in retries_of(events)] == ["the server reported Overloaded"]
    assert text_of_events(events) == "fine now" and len(stub.requests) == 2


async def test_an_error_chunk_before_any_output_is_retried_openai(stub):
    stub.script(
        Reply.sse([{"error": {"message": "provider busy", "code": 502}}]),
        ok_reply("openai", "fine now"),
    )
    async with make_client(stub, retries=2) as client:
        events, exc = await collect(client)
    assert exc is None and len(retries_of(events)) == 1
    assert text_of_events(events) == "fine now"


async def test_a_non_retryable_error_chunk_is_raised_at_once(stub):
    stub.script(
        Reply.sse([{"error": {"message": "bad request", "code": 400}}]),
        ok_reply("openai", "unreached"),
    )
    async with make_client(stub, retries=2) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "bad request" in str(exc)
    assert retries_of(events) == [] and len(stub.requests) == 1


# ----------------------------------------------------------------------------- error messages


async def error_for(stub, reply, style="openai", **options):
    stub.script(reply)
    async with make_client(stub, style, retries=0, **options) as client:
        with pytest.raises(ProviderError) as info:
            await client.run("hi", None)
    return info.value


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_carry_status_message_and_key_hint(stub, status):
    exc = await error_for(stub, Reply.error(status, "Incorrect API key provided: sk-te***"))
    text = str(exc)
    assert exc.status == status and str(status) in text
    assert exc.provider_message == "Incorrect API key provided: sk-te***"
    assert "Incorrect API key provided" in text
    assert exc.hint and "API key" in exc.hint and "OPENAI_API_KEY" in exc.hint
    assert exc.hint in text
    assert "sk-test" not in text  # never the key itself


async def test_missing_key_hint_names_the_variable(stub, no_keys_in_env):
    exc = await error_for(
        stub,
        Reply.error(401, "x-api-key header is required", style="anthropic"),
        style="anthropic",
        api_key=None,
    )
    assert exc.status == 401 and "x-api-key header is required" in str(exc)
    assert "no API key was sent" in exc.hint and "ANTHROPIC_API_KEY" in exc.hint


async def test_not_found_hint_names_model_and_url(stub):
    exc = await error_for(stub, Reply.error(404, "The model `stub-model` does not exist"))
    assert exc.status == 404 and "does not exist" in str(exc)
    assert "stub-model" in exc.hint and stub.base_url in exc.hint and exc.hint in str(exc)


@pytest.mark.parametrize(
    ("style", "status", "message"),
    [
        ("openai", 413, "Request Entity Too Large"),
        (
            "openai",
            400,
            "This model's maximum context length is 8192 tokens. However, your "
            "messages resulted in 9001 tokens.",
        ),
        ("anthropic", 400, "prompt is too long: 210000 tokens > 200000 maximum"),
        ("anthropic", 413, "Request exceeds the maximum allowed number of bytes."),
    ],
)
async def test_too_long_errors_get_the_context_hint(stub, style, status, message):
    exc = await error_for(stub, Reply.error(status, message, style=style), style=style)
    assert exc.status == status and message in str(exc)
    assert "too long" in exc.hint and exc.hint in str(exc)


async def test_other_errors_carry_status_and_message_without_a_hint(stub):
    exc = await error_for(stub, Reply.error(400, "Invalid value for 'temperature'"))
    assert exc.status == 400 and exc.hint is None
    assert "400" in str(exc) and "Invalid value for 'temperature'" in str(exc)


async def test_a_non_json_error_body_is_quoted(stub):
    exc = await error_for(
        stub,
        Reply.raw(
            [b"<html>upstream exploded</html>"],
            status=502,
            headers={"Content-Type": "text/html"},
            chunked=False,
        ),
    )
    assert exc.status == 502 and "upstream exploded" in str(exc)


# A Cloudflare 52x error page, as its edge answers for an origin that failed (the page of
# "520: Web server is returning an unknown error" quoted in exa-labs/exa-mcp-server#100,
# its markup cut short).
CLOUDFLARE_520 = b"""<!DOCTYPE html>
<!--[if lt IE 7]> <html class="no-js ie6 oldie" lang="en-US"> <![endif]-->
<!--[if gt IE 8]><!--> <html class="no-js" lang="en-US"> <!--<![endif]-->
<head>
<title>api.example.com | 520: Web server is returning an unknown error</title>
<meta charset="UTF-8" />
<style>body{margin:0;padding:0}</style>
</head>
<body><div id="cf-wrapper"><h1>Web server is returning an unknown error</h1>
<div class="cf-error-footer cf-wrapper"><p class="text-13">
<span class="cf-footer-item">Cloudflare Ray ID: <strong>9af4ec38feeaed4b</strong></span>
<span class="cf-footer-separator">&bull;</span></p></div></div></body>
</html>"""


async def test_a_cdn_error_page_is_retried_then_reported_by_its_title(stub):
    page = Reply.raw([CLOUDFLARE_520], status=520, headers={"Content-Type": "text/html"})
    stub.script(page, page)
    async with make_client(stub, retries=1) as client:
        events, exc = await collect(client)
    assert len(stub.requests) == 2 and len(retries_of(events)) == 1  # retried like any 5xx
    assert isinstance(exc, ServerError) and exc.status == 520
    assert exc.provider_message == "api.example.com | 520: Web server is returning an unknown error"
    assert str(exc) == (
        "HTTP 520 from the endpoint: api.example.com | 520: Web server is returning an "
        "unknown error"
    )


@pytest.mark.parametrize(
    ("reply", "style", "kind"),
    [
        (Reply.error(429, "slow down", headers={"Retry-After": "7"}), "openai", RateLimited),
        (Reply.error(529, "Overloaded", style="anthropic"), "anthropic", Overloaded),
        (Reply.error(401, "bad key"), "openai", AuthFailed),
        (Reply.error(500, "oops"), "openai", ServerError),
    ],
    ids=["429", "529", "401", "500"],
)
async def test_a_failed_call_raises_the_error_of_its_meaning(stub, reply, style, kind):
    exc = await error_for(stub, reply, style)
    assert type(exc) is kind
    assert exc.provider_message in ("slow down", "Overloaded", "bad key", "oops")
    if kind is RateLimited:
        assert exc.retry_after == 7


async def test_an_overloaded_error_inside_a_stream_is_overloaded(stub):
    """Anthropic's `overloaded_error` event after output began (so not retried) keeps its
    meaning: an Overloaded error, status 529, with the provider's words, and the partial
    answer kept."""
    parts = partial_parts("anthropic", "Some text")
    parts.append(
        b'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", '
        b'"message": "Overloaded"}}\n\n'
    )
    stub.script(Reply.raw(parts), ok_reply("anthropic", "unreached"))
    async with make_client(stub, "anthropic", retries=2) as client:
        events, exc = await collect(client)
    assert isinstance(exc, Overloaded) and (exc.status, exc.provider_message) == (529, "Overloaded")
    assert text_of_events(events) == "Some text" and len(stub.requests) == 1
    assert exc.result.messages[-1]["interrupted"] is True
