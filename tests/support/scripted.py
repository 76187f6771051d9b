"""Clients on toolnexus.testing's scripted model, for the library tests whose subject is not
HTTP (the loop, hooks, suspension, memory, budgets): the style's real encoding runs through
the model's httpx2 transport, with no server to start."""

from __future__ import annotations

import json
from typing import Any

import httpx2

from toolnexus import Client, create_client
from toolnexus.testing import ModelRequest, Responder, ScriptedCall, ScriptedModel, ScriptedReply

BASE_URL = "http://scripted.test/v1"


def scripted_client(model: ScriptedModel, style: str = "openai", **options: Any) -> Client:
    """A client speaking `style` ("openai" or "anthropic": the wire formats the model's
    transport speaks) to `model`, on model "m", that never retries (as
    resilience_helpers.single_try_client on the stub)."""
    options.setdefault("retries", 0)
    options.setdefault("api_key", "sk-test")
    options.setdefault("model", "m")
    http = httpx2.AsyncClient(transport=model.transport())
    return create_client(base_url=BASE_URL, style=style, http_client=http, **options)


def calling(*named: tuple[str, dict[str, Any] | str]) -> ScriptedReply:
    """A reply making these (name, arguments) tool calls, with ids call_1, call_2, ..."""
    return ScriptedReply(tool_calls=[ScriptedCall(name, args) for name, args in named])


def usage(prompt: int, completion: int) -> dict[str, int]:
    """A reply's usage as an endpoint counts it."""
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def sent_results(model: ScriptedModel, request: int = 1) -> list[dict[str, Any]]:
    """The tool results request number `request` (from 0) sent back, as on the wire."""
    body = model.requests[request].body or {}
    return [m for m in body["messages"] if m["role"] == "tool"]


SUMMARY = "Summary: the user sent long notes; the assistant noted each one."


def asks_for_a_summary(request: ModelRequest) -> bool:
    """Whether `request` is compaction's summary request (its last message holds the
    conversation to summarize)."""
    return "<conversation>" in request.last_text


def answered(model: ScriptedModel) -> list[ModelRequest]:
    """The requests `model` got that were not compaction's summary requests."""
    return [r for r in model.requests if not asks_for_a_summary(r)]


def summarizer(answer: str = "Noted.", *, echo: bool = False) -> Responder:
    """Replies as a small model behind compaction: a summary request gets a short summary
    (with `echo`, its whole input, as a verbose model gives whatever max_tokens asked),
    any other request `answer`; each counts the request's encoded body / 4 as its prompt."""

    def respond(request: ModelRequest) -> ScriptedReply:
        text = answer
        if asks_for_a_summary(request):
            text = request.last_text if echo else SUMMARY
        prompt = len(json.dumps(request.body)) // 4
        return ScriptedReply(text, usage=usage(prompt, max(1, len(text) // 4)))

    return respond
