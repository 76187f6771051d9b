"""create_client and its options: what it checks before any request, the grouped Retries
(on the scripted model) and Timeouts (against the loopback stub, whose server never
answers), in seconds, and the older keywords that still set them. Threads through a client
(ask with id=, resume) are tests/library/test_client_threads.py."""

from __future__ import annotations

import pytest

from tests.support.resilience_helpers import collect, make_client
from tests.support.scripted import scripted_client
from tests.support.stub_provider import Reply
from toolnexus import ProviderError, Retries, RunTimeout, Timeouts, create_client
from toolnexus.testing import ScriptedModel, failure


def retries_of(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "retry"]


# ----------------------------------------------------------------------------- what is checked


def test_unknown_style_names_every_choice():
    with pytest.raises(ValueError, match="'openai', 'anthropic', 'responses'"):
        create_client(base_url="http://x", style="gemini", model="m")


@pytest.mark.parametrize(
    "missing, words",
    [({"base_url": ""}, "base_url is required"), ({"model": ""}, "model is required")],
)
def test_a_missing_endpoint_or_model_says_which(missing, words):
    options = {"base_url": "http://127.0.0.1:9/v1", "style": "openai", "model": "m", **missing}
    with pytest.raises(ValueError, match=words):
        create_client(**options)


def test_retries_must_be_a_count_or_a_retries():
    with pytest.raises(TypeError, match="Retries or an int, not str"):
        create_client(base_url="http://127.0.0.1:9/v1", style="openai", model="m", retries="3")


# ----------------------------------------------------------------------------- Retries


def always_busy() -> ScriptedModel:
    """A model whose every call fails with HTTP 503, which is retried."""
    return ScriptedModel(respond=lambda request: failure(503, "busy"))


async def test_retries_count_and_on_error_come_from_a_retries():
    seen = []
    model = always_busy()
    retries = Retries(count=2, base_s=0.001, on_error=lambda info: seen.append(info["attempt"]))
    async with scripted_client(model, retries=retries) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and exc.status == 503
    assert [r["attempt"] for r in retries_of(events)] == [1, 2]
    assert all(r["delay"] < 0.01 for r in retries_of(events))  # base_s is seconds
    assert seen == [1, 2] and len(model.requests) == 3


async def test_on_error_may_stop_the_retries():
    model = always_busy()
    stopping = Retries(count=5, on_error=lambda info: "fail")
    async with scripted_client(model, retries=stopping) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and retries_of(events) == []
    assert len(model.requests) == 1


async def test_the_older_retry_keywords_set_their_fields(scripted):
    scripted.add(failure(503, "busy"), "ok")
    seen = []
    async with scripted_client(
        scripted,
        retries=Retries(count=1, base_s=60),
        retry_base_ms=1,
        on_error=lambda info: seen.append(info["reason"]),
    ) as client:
        events, exc = await collect(client)
    assert exc is None and events[-1]["result"].text == "ok"
    [retry] = retries_of(events)
    assert retry["delay"] < 0.01  # retry_base_ms=1 over base_s=60
    assert len(seen) == 1


# ----------------------------------------------------------------------------- Timeouts


async def test_timeouts_idle_s_ends_a_server_that_never_answers(stub):
    stub.script(Reply.hang())
    async with make_client(stub, retries=0, timeouts=Timeouts(idle_s=0.3)) as client:
        events, exc = await collect(client)
    assert isinstance(exc, ProviderError) and "sent nothing for 0.3 s (idle timeout)" in str(exc)


async def test_timeouts_run_s_is_the_whole_runs_deadline(stub):
    stub.script(Reply.hang())
    async with make_client(stub, timeouts=Timeouts(idle_s=60, run_s=0.3)) as client:
        events, exc = await collect(client)
    assert isinstance(exc, RunTimeout) and exc.seconds == 0.3
    assert "timed out after 0.3 s" in str(exc) and len(stub.requests) == 1


async def test_the_older_timeout_keywords_set_their_fields(stub):
    stub.script(Reply.hang())
    async with make_client(
        stub, timeouts=Timeouts(idle_s=0.3, run_s=60), timeout_ms=300, idle_timeout_s=60
    ) as client:
        events, exc = await collect(client)
    assert isinstance(exc, RunTimeout) and exc.seconds == 0.3  # timeout_ms=300 over run_s=60
