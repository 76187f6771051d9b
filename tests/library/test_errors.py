"""toolnexus.errors promises one family of exceptions (all ToolnexusError, each carrying the
run's `.result` when a run ended in it), a ProviderError whose message ends with the hint
and whose attributes keep what the endpoint said, and `http_error`: for each HTTP failure
the hint a user can act on, naming the key variable, the model or the base URL."""

from __future__ import annotations

import pytest

import toolnexus
from toolnexus.errors import (
    AuthFailed,
    ContextOverflow,
    ContextSize,
    Overloaded,
    ProviderError,
    RateLimited,
    RunCancelled,
    RunTimeout,
    ServerError,
    ToolnexusError,
    http_error,
)


def failure(status: int, said: str | None = "nope", **kw) -> ProviderError:
    options = {
        "url": "http://127.0.0.1:9/v1",
        "model": "gpt-x",
        "key_env": "OPENAI_API_KEY",
        "key_sent": True,
        **kw,
    }
    return http_error(status, said, **options)


# ----------------------------------------------------------------------------- the classes


@pytest.mark.parametrize("error", [ProviderError("x"), RunCancelled(), RunTimeout()])
def test_every_error_is_a_toolnexus_error_without_a_result_until_a_run_sets_one(error):
    assert isinstance(error, ToolnexusError)
    assert error.result is None


def test_a_provider_error_ends_its_message_with_the_hint_and_keeps_its_facts():
    overflow = ContextSize(used=1200, window=1000)
    error = ProviderError(
        "HTTP 400 from the endpoint",
        status=400,
        provider_message="too long",
        hint="send less",
        retry_after=2.5,
        body={"error": "too long"},
        context_overflow=overflow,
    )
    assert str(error) == "HTTP 400 from the endpoint (send less)"
    assert (
        error.status,
        error.provider_message,
        error.hint,
        error.retry_after,
        error.body,
        error.context_overflow,
    ) == (400, "too long", "send less", 2.5, {"error": "too long"}, overflow)


def test_a_provider_error_without_a_hint_is_just_its_message():
    error = ProviderError("connection refused")
    assert str(error) == "connection refused"
    assert (error.status, error.hint, error.retry_after, error.context_overflow) == (
        None,
        None,
        None,
        None,
    )


def test_cancel_and_timeout_say_what_happened_and_carry_the_transcript():
    transcript = object()
    assert str(RunCancelled()) == "run cancelled"
    assert str(RunTimeout()) == "run timed out" and RunTimeout().seconds is None
    cancelled = RunCancelled("stopped by the user", result=transcript)
    timed_out = RunTimeout("run timed out after 3 s", result=transcript, seconds=3)
    assert (str(cancelled), cancelled.result) == ("stopped by the user", transcript)
    assert (str(timed_out), timed_out.result, timed_out.seconds) == (
        "run timed out after 3 s",
        transcript,
        3,
    )


# ----------------------------------------------------------------------------- http_error


def test_an_unknown_key_hint_names_the_variable_when_no_key_was_sent():
    for status in (401, 403):
        error = failure(status, key_sent=False)
        assert error.hint == "no API key was sent: set OPENAI_API_KEY or pass api_key="
        assert str(error) == f"HTTP {status} from the endpoint: nope ({error.hint})"


def test_a_refused_key_hint_names_where_the_key_came_from_and_the_model():
    error = failure(401)
    assert error.hint == (
        "check the API key (from api_key= or OPENAI_API_KEY) and that it may use 'gpt-x'"
    )


def test_a_404_hint_names_the_model_and_the_base_url():
    assert failure(404).hint == (
        "check the model name 'gpt-x' and the base URL (http://127.0.0.1:9/v1)"
    )


def test_a_too_long_prompt_hint_gives_the_sizes_when_the_provider_said_them():
    sized = failure(400, context_overflow=ContextSize(208310, 200000))
    assert sized.hint == (
        "the conversation is too long for the model (208,310 tokens; its "
        "window is 200,000): start a new thread or send less"
    )
    assert sized.context_overflow == ContextSize(208310, 200000)
    for overflow in (ContextSize(None, 200000), ContextSize(208310, None)):
        assert failure(400, context_overflow=overflow).hint == (
            "the conversation is too long for the model: start a new thread or send less"
        )
    assert failure(413).hint == failure(400, context_overflow=ContextSize(None, None)).hint


def test_a_429_hint_says_to_wait():
    assert failure(429).hint == "rate limited: wait a moment and try again"


@pytest.mark.parametrize("status", [400, 418, 500, 502, 503])
def test_other_statuses_have_no_hint_and_a_bare_message(status):
    error = failure(status, "busy", body={"raw": 1})
    assert error.hint is None
    assert str(error) == f"HTTP {status} from the endpoint: busy"
    assert (error.status, error.provider_message, error.body) == (status, "busy", {"raw": 1})


def test_an_endpoint_that_says_nothing_leaves_no_dangling_colon():
    for said in (None, ""):
        assert str(failure(500, said)) == "HTTP 500 from the endpoint"


# ----------------------------------------------------------------------------- by meaning


@pytest.mark.parametrize(
    ("status", "kind", "name"),
    [
        (401, AuthFailed, "auth_failed"),
        (403, AuthFailed, "auth_failed"),
        (429, RateLimited, "rate_limited"),
        (503, Overloaded, "overloaded"),
        (529, Overloaded, "overloaded"),
        (500, ServerError, "server_error"),
        (502, ServerError, "server_error"),
        (520, ServerError, "server_error"),
        (400, ProviderError, "provider_error"),
        (404, ProviderError, "provider_error"),
    ],
)
def test_an_http_failure_is_raised_as_the_class_of_its_meaning(status, kind, name):
    error = failure(status, "the provider's words")
    assert type(error) is kind and isinstance(error, ProviderError)
    assert (error.status, error.provider_message, error.kind) == (
        status,
        "the provider's words",
        name,
    )
    assert str(error).startswith(f"HTTP {status} from the endpoint: the provider's words")


def test_overloaded_is_a_server_error():
    assert isinstance(failure(529), ServerError) and isinstance(failure(503), ServerError)


def test_a_prompt_too_long_is_a_context_overflow_with_its_numbers():
    error = failure(400, "prompt is too long", context_overflow=ContextSize(208310, 200000))
    assert isinstance(error, ContextOverflow) and error.kind == "context_overflow"
    assert (error.used, error.window, error.status) == (208310, 200000, 400)
    unsized = failure(400, context_overflow=ContextSize(None, None))
    assert isinstance(unsized, ContextOverflow) and (unsized.used, unsized.window) == (None, None)


def test_the_classes_by_meaning_are_public():
    for kind in (RateLimited, Overloaded, AuthFailed, ContextOverflow, ServerError):
        assert getattr(toolnexus, kind.__name__) is kind
        assert kind.__name__ in toolnexus.__all__
