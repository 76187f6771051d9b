"""Tools that need a person: suspend, wait_for, status "pending" and Client.resume."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.support.scripted import calling, scripted_client, usage
from toolnexus import (
    MemoryStore,
    ToolContext,
    ToolnexusError,
    ToolResult,
    create_toolkit,
    define_tool,
    make_answer,
    make_request,
    suspend,
)
from toolnexus.testing import ScriptedCall, ScriptedModel, ScriptedReply
from toolnexus.tools.suspension import declined, pending_request
from toolnexus.wire import STYLES

KINDS = ["sync", "async"]


class Deploy:
    """A tool that asks for approval first. `always_suspend`: it asks again even when
    re-run with an answer."""

    def __init__(self, always_suspend: bool = False) -> None:
        self.answers: list[dict[str, Any] | None] = []  # ctx.answer at each run
        self.always_suspend = always_suspend

    async def toolkit(self):
        def deploy(target: str, ctx: ToolContext) -> Any:
            """Deploy a target."""
            self.answers.append(ctx.answer)
            if ctx.answer is None or self.always_suspend:
                return suspend(
                    "approval", f"deploy {target}?", data={"target": target}, id=f"req_{target}"
                )
            return f"deployed {target} ({ctx.answer.get('data')})"

        toolkit = await create_toolkit()
        return toolkit.register(define_tool(deploy))


def wait_for_of(kind: str, answer_for, seen: list[dict[str, Any]] | None = None):
    """A wait_for that records, when called, the events the consumer had already seen."""
    calls: list[dict[str, Any]] = []

    def answer(req: dict[str, Any]) -> Any:
        calls.append({"request": req, "seen_before": list(seen) if seen is not None else None})
        return answer_for(req)

    if kind == "sync":
        return answer, calls

    async def async_answer(req: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return answer(req)

    return async_answer, calls


def tool_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m["role"] == "tool"]


def assert_every_call_answered(messages: list[dict[str, Any]]) -> None:
    calls = [
        c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or []
    ]
    answered = [m["tool_call_id"] for m in tool_messages(messages)]
    assert sorted(calls) == sorted(answered)


# ----------------------------------------------------------------------------- helpers


def test_make_request_and_make_answer():
    req = make_request("approval", "go?")
    assert set(req) == {"id", "kind", "prompt"}
    assert req["kind"] == "approval" and req["prompt"] == "go?" and req["id"]
    assert make_request("approval", "go?")["id"] != req["id"]  # ids are fresh
    full = make_request(
        "oauth",
        "sign in",
        url="https://x.test/a",
        data={"s": 1},
        expires_at="2030-01-01T00:00:00Z",
        id="req_1",
    )
    assert full == {
        "id": "req_1",
        "kind": "oauth",
        "prompt": "sign in",
        "url": "https://x.test/a",
        "data": {"s": 1},
        "expiresAt": "2030-01-01T00:00:00Z",
    }

    assert make_answer(full, True) == {"id": "req_1", "ok": True}
    assert make_answer("req_1", False, reason="no") == {"id": "req_1", "ok": False, "reason": "no"}
    assert make_answer(full, True, data={"code": 9}) == {
        "id": "req_1",
        "ok": True,
        "data": {"code": 9},
    }


def test_suspend_pending_request_and_declined():
    result = suspend("approval", "delete it?", id="req_9", data=[1])
    assert isinstance(result, ToolResult) and not result.is_error
    assert result.output == "waiting for the user: delete it?"
    assert pending_request(result) == {
        "id": "req_9",
        "kind": "approval",
        "prompt": "delete it?",
        "data": [1],
    }
    assert pending_request(ToolResult("plain")) is None
    assert pending_request(ToolResult("odd", metadata={"pending": "not a request"})) is None

    req = pending_request(result)
    no = declined(req, make_answer(req, False, reason="too risky"))
    assert (no.output, no.is_error) == ("declined: delete it? (too risky)", True)
    assert declined(req).output == "declined: delete it?"
    assert declined(req, make_answer(req, False)).output == "declined: delete it?"


# ----------------------------------------------------------------------------- wait_for


@pytest.mark.parametrize("kind", KINDS)
async def test_wait_for_ok_reruns_the_tool_with_the_answer(scripted, kind):
    scripted.add(
        calling(("deploy", {"target": "prod"})),
        "shipped",
    )
    tool = Deploy()
    seen: list[dict[str, Any]] = []
    wait_for, calls = wait_for_of(kind, lambda req: make_answer(req, True, data="ok by ann"), seen)
    async with scripted_client(scripted, wait_for=wait_for) as client:
        async for event in client.stream("deploy prod", await tool.toolkit()):
            seen.append(event)

    request = {
        "id": "req_prod",
        "kind": "approval",
        "prompt": "deploy prod?",
        "data": {"target": "prod"},
    }
    # the pending event reached the consumer before wait_for ran
    assert len(calls) == 1
    assert calls[0]["request"] == request
    assert calls[0]["seen_before"][-1] == {"type": "pending", "request": request}
    types = [e["type"] for e in seen]
    assert types.index("tool_call") < types.index("pending") < types.index("tool_result")
    assert types.count("pending") == 1

    # ran twice: first without an answer, then once with it
    assert tool.answers == [None, {"id": "req_prod", "ok": True, "data": "ok by ann"}]
    result_event = next(e for e in seen if e["type"] == "tool_result")
    assert (result_event["output"], result_event["is_error"]) == (
        "deployed prod (ok by ann)",
        False,
    )
    # the model gets the real output, not the "waiting" text
    assert tool_messages(scripted.requests[1].body["messages"]) == [
        {"role": "tool", "tool_call_id": "call_1", "content": "deployed prod (ok by ann)"}
    ]
    result = seen[-1]["result"]
    assert result.status == "done" and result.pending is None and result.text == "shipped"
    assert "pending" not in tool_messages(result.messages)[0]


@pytest.mark.parametrize("kind", KINDS)
async def test_wait_for_works_with_run(scripted, kind):
    scripted.add(
        calling(("deploy", {"target": "qa"})),
        "done",
    )
    tool = Deploy()
    wait_for, calls = wait_for_of(kind, lambda req: make_answer(req, True))
    async with scripted_client(scripted, wait_for=wait_for) as client:
        result = await client.run("deploy qa", await tool.toolkit())
    assert len(calls) == 1 and len(tool.answers) == 2
    assert result.status == "done" and result.text == "done"
    assert tool_messages(result.messages)[0]["content"] == "deployed qa (None)"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            lambda req: make_answer(req, False, reason="not on a Friday"),
            "declined: deploy prod? (not on a Friday)",
        ),
        (lambda req: make_answer(req, False), "declined: deploy prod?"),
        (lambda req: None, "declined: deploy prod?"),
    ],
    ids=["with-reason", "no-reason", "no-answer"],
)
async def test_wait_for_refusal_goes_to_the_model_as_declined(scripted, kind, answer, expected):
    scripted.add(
        calling(("deploy", {"target": "prod"})),
        "ok, not deploying",
    )
    tool = Deploy()
    wait_for, calls = wait_for_of(kind, answer)
    async with scripted_client(scripted, wait_for=wait_for) as client:
        events = [e async for e in client.stream("deploy prod", await tool.toolkit())]

    assert len(calls) == 1
    assert tool.answers == [None]  # not re-run
    result_event = next(e for e in events if e["type"] == "tool_result")
    assert (result_event["output"], result_event["is_error"]) == (expected, True)
    # the model gets the failure marked
    assert (
        tool_messages(scripted.requests[1].body["messages"])[0]["content"] == f"Error: {expected}"
    )
    result = events[-1]["result"]
    assert result.status == "done" and result.text == "ok, not deploying"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_second_suspension_on_the_rerun_is_declined(scripted, kind):
    scripted.add(
        calling(("deploy", {"target": "prod"})),
        "gave up",
    )
    tool = Deploy(always_suspend=True)
    wait_for, calls = wait_for_of(kind, lambda req: make_answer(req, True))
    async with scripted_client(scripted, wait_for=wait_for) as client:
        result = await client.run("deploy prod", await tool.toolkit())

    assert len(calls) == 1  # the person is asked once, not again
    assert len(tool.answers) == 2  # one re-run only
    assert tool_messages(scripted.requests[1].body["messages"])[0]["content"] == (
        "Error: declined: deploy prod?"
    )
    message = tool_messages(result.messages)[0]
    assert message["is_error"] is True and "pending" not in message
    assert result.status == "done" and result.pending is None


async def test_wait_for_answers_two_suspended_calls_in_call_order(scripted):
    scripted.add(
        calling(("deploy", {"target": "a"}), ("deploy", {"target": "b"})),
        "both handled",
    )
    tool = Deploy()
    wait_for, calls = wait_for_of(
        "async", lambda req: make_answer(req, req["id"] == "req_a", reason="b is frozen")
    )
    async with scripted_client(scripted, wait_for=wait_for) as client:
        result = await client.run("deploy a and b", await tool.toolkit())
    assert [c["request"]["id"] for c in calls] == ["req_a", "req_b"]
    assert [m["content"] for m in tool_messages(scripted.requests[1].body["messages"])] == [
        "deployed a (None)",
        "Error: declined: deploy b? (b is frozen)",
    ]
    assert result.status == "done"


# ----------------------------------------------------------------------------- no wait_for


async def pending_run(scripted: ScriptedModel, tool: Deploy, client, target: str = "prod"):
    call = ScriptedCall("deploy", {"target": target})
    scripted.add(ScriptedReply(tool_calls=[call], usage=usage(7, 3)))
    toolkit = await tool.toolkit()
    return await client.run(f"deploy {target}", toolkit), toolkit


async def test_without_wait_for_the_run_ends_pending(scripted):
    tool = Deploy()
    async with scripted_client(scripted) as client:
        result, _ = await pending_run(scripted, tool, client)

    assert len(scripted.requests) == 1  # no second model call
    assert result.status == "pending"
    assert result.pending == {
        "id": "req_prod",
        "kind": "approval",
        "prompt": "deploy prod?",
        "data": {"target": "prod"},
    }
    assert result.text == "" and result.turns == 1
    assert tool.answers == [None]
    # the transcript: the call, and a tool message saying what it waits for
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool"]
    assert result.messages[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "waiting for the user: deploy prod?",
        "pending": result.pending,
    }
    assert_every_call_answered(result.messages)
    # valid to send again: the request built from it carries no "pending" key anywhere
    for wire in STYLES.values():
        body = wire.build_body(
            model="m", messages=result.messages, system=None, tools=[], stream=False
        )
        assert '"pending"' not in json.dumps(body)
        assert "req_prod" not in json.dumps(body)


async def test_streaming_without_wait_for_ends_pending_without_asking(scripted):
    scripted.add(calling(("deploy", {"target": "prod"})))
    tool = Deploy()
    async with scripted_client(scripted) as client:
        events = [e async for e in client.stream("deploy prod", await tool.toolkit())]
    result = events[-1]["result"]
    assert result.status == "pending" and result.pending["id"] == "req_prod"
    tool_result = next(e for e in events if e["type"] == "tool_result")
    assert tool_result["output"] == "waiting for the user: deploy prod?"
    # a UI still learns what the run waits for, right after the tool's result
    kinds = [e["type"] for e in events]
    assert kinds[-3:] == ["tool_result", "pending", "done"]
    assert events[-2]["request"] == result.pending


async def test_a_pending_transcript_can_be_sent_again(scripted):
    """Sending the pending transcript as history: the endpoint gets a well-formed request
    (each call answered, no "pending" key)."""
    tool = Deploy()
    async with scripted_client(scripted) as client:
        result, toolkit = await pending_run(scripted, tool, client)
        scripted.add("still waiting on you")
        again = await client.run("any news?", toolkit, history=result.messages)
    sent = scripted.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "waiting for the user: deploy prod?",
    }
    assert again.text == "still waiting on you"


@pytest.mark.parametrize("style_of_answer", ["request", "id"])
async def test_resume_ok_reruns_the_tool_and_finishes(scripted, style_of_answer):
    tool = Deploy()
    async with scripted_client(scripted) as client:
        result, toolkit = await pending_run(scripted, tool, client)
        before = json.dumps(result.messages)
        scripted.add(ScriptedReply(text="deployed, all good", usage=usage(20, 4)))
        target = result.pending if style_of_answer == "request" else result.pending["id"]
        resumed = await client.resume(result, make_answer(target, True, data="yes"), toolkit)

    assert tool.answers == [None, {"id": "req_prod", "ok": True, "data": "yes"}]
    sent = scripted.requests[1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "deployed prod (yes)"}
    assert resumed.status == "done" and resumed.pending is None
    assert resumed.text == "deployed, all good"
    assert resumed.turns == 2
    assert resumed.usage == {"prompt_tokens": 27, "completion_tokens": 7, "total_tokens": 34}
    assert [c["name"] for c in resumed.tool_calls] == ["deploy"]
    assert resumed.messages[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "deployed prod (yes)",
    }
    assert resumed.messages[-1]["content"] == "deployed, all good"
    assert_every_call_answered(resumed.messages)
    assert json.dumps(result.messages) == before  # the pending result is left as it was


async def test_resume_with_a_refusal(scripted):
    tool = Deploy()
    async with scripted_client(scripted) as client:
        result, toolkit = await pending_run(scripted, tool, client)
        scripted.add("understood, not deploying")
        resumed = await client.resume(
            result, make_answer(result.pending, False, reason="change freeze"), toolkit
        )

    assert tool.answers == [None]  # not re-run
    assert scripted.requests[1].body["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Error: declined: deploy prod? (change freeze)",
    }
    assert resumed.messages[2]["is_error"] is True and "pending" not in resumed.messages[2]
    assert resumed.status == "done" and resumed.text == "understood, not deploying"


async def test_resume_when_the_rerun_suspends_again_is_declined(scripted):
    tool = Deploy(always_suspend=True)
    async with scripted_client(scripted) as client:
        result, toolkit = await pending_run(scripted, tool, client)
        scripted.add("ok")
        resumed = await client.resume(result, make_answer(result.pending, True), toolkit)
    assert len(tool.answers) == 2
    assert scripted.requests[1].body["messages"][2]["content"] == "Error: declined: deploy prod?"
    assert resumed.status == "done"


async def test_resume_with_an_unknown_request_id_is_a_clear_error(scripted):
    tool = Deploy()
    async with scripted_client(scripted) as client:
        result, toolkit = await pending_run(scripted, tool, client)
        with pytest.raises(ToolnexusError, match="no pending request 'req_nope'"):
            await client.resume(result, make_answer("req_nope", True), toolkit)
    assert len(scripted.requests) == 1  # nothing was sent
    assert tool.answers == [None]  # nothing re-ran
    assert result.status == "pending"


async def test_resume_a_run_that_is_not_pending_is_an_error(scripted):
    scripted.add("nothing to wait for")
    async with scripted_client(scripted) as client:
        toolkit = await Deploy().toolkit()
        done = await client.run("hi", toolkit)
        with pytest.raises(ToolnexusError, match="no pending request"):
            await client.resume(done, make_answer("req_prod", True), toolkit)
    assert len(scripted.requests) == 1


async def test_resume_with_id_saves_the_thread(scripted):
    store = MemoryStore()
    tool = Deploy()
    async with scripted_client(scripted, store=store) as client:
        toolkit = await tool.toolkit()
        scripted.add(calling(("deploy", {"target": "prod"})))
        result = await client.ask("deploy prod", toolkit, id="thread-1")
        assert result.status == "pending"
        saved_pending = await store.get("thread-1")
        assert saved_pending == result.messages  # the pending transcript was saved

        scripted.add("done deploying")
        resumed = await client.resume(
            result, make_answer(result.pending, True), toolkit, id="thread-1"
        )
        saved = await store.get("thread-1")
        assert saved == resumed.messages
        assert saved[-1] == {"role": "assistant", "content": "done deploying"}
        assert all("pending" not in m for m in saved)

        # the thread goes on from the saved transcript
        scripted.add("you're welcome")
        await client.ask("thanks", toolkit, id="thread-1")
    assert [m["role"] for m in scripted.requests[2].body["messages"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]


async def test_resume_without_id_saves_nothing(scripted):
    store = MemoryStore()
    tool = Deploy()
    async with scripted_client(scripted, store=store) as client:
        result, toolkit = await pending_run(scripted, tool, client)
        scripted.add("done")
        await client.resume(result, make_answer(result.pending, True), toolkit)
    assert store._threads == {}


async def test_two_suspended_calls_resume_one_at_a_time(scripted):
    scripted.add(calling(("deploy", {"target": "a"}), ("deploy", {"target": "b"})))
    tool = Deploy()
    async with scripted_client(scripted) as client:
        toolkit = await tool.toolkit()
        first = await client.run("deploy a and b", toolkit)
        assert first.status == "pending" and first.pending["id"] == "req_a"
        both = tool_messages(first.messages)
        assert [m["pending"]["id"] for m in both] == ["req_a", "req_b"]
        assert_every_call_answered(first.messages)

        # answering the first: still pending, on the second; no model call yet
        second = await client.resume(first, make_answer(first.pending, True, data="A"), toolkit)
        assert len(scripted.requests) == 1
        assert second.status == "pending" and second.pending["id"] == "req_b"
        assert [m["content"] for m in tool_messages(second.messages)] == [
            "deployed a (A)",
            "waiting for the user: deploy b?",
        ]
        assert "pending" not in tool_messages(second.messages)[0]
        assert_every_call_answered(second.messages)

        # answering the second: both real outputs go to the model, the run finishes
        scripted.add("both deployed")
        third = await client.resume(second, make_answer(second.pending, True, data="B"), toolkit)
    assert third.status == "done" and third.pending is None
    assert third.text == "both deployed"
    assert [m["content"] for m in tool_messages(scripted.requests[1].body["messages"])] == [
        "deployed a (A)",
        "deployed b (B)",
    ]
    assert [a and a["id"] for a in tool.answers] == [None, None, "req_a", "req_b"]


async def test_suspended_calls_answered_out_of_order(scripted):
    """Any open request may be answered first; `pending` is then the earliest still open."""
    scripted.add(calling(*[("deploy", {"target": t}) for t in "abc"]))
    tool = Deploy()
    async with scripted_client(scripted) as client:
        toolkit = await tool.toolkit()
        first = await client.run("deploy a, b and c", toolkit)
        assert first.pending["id"] == "req_a"
        second = await client.resume(first, make_answer("req_b", False), toolkit)
        assert second.status == "pending" and second.pending["id"] == "req_a"
        third = await client.resume(second, make_answer("req_a", True), toolkit)
        assert third.status == "pending" and third.pending["id"] == "req_c"
        scripted.add("a and c only")
        fourth = await client.resume(third, make_answer("req_c", True), toolkit)
    assert fourth.status == "done" and len(scripted.requests) == 2
    assert [m["content"] for m in tool_messages(scripted.requests[1].body["messages"])] == [
        "deployed a (None)",
        "Error: declined: deploy b?",
        "deployed c (None)",
    ]


async def test_a_pending_call_next_to_a_plain_one(scripted):
    """Only the suspended call waits; the other call's result is kept as it is."""

    def echo(text: str) -> str:
        """Echo."""
        return f"echo {text}"

    scripted.add(calling(("echo", {"text": "hi"}), ("deploy", {"target": "prod"})))
    tool = Deploy()
    async with scripted_client(scripted) as client:
        toolkit = (await tool.toolkit()).register(define_tool(echo))
        first = await client.run("go", toolkit)
        assert first.status == "pending" and first.pending["id"] == "req_prod"
        assert [m["content"] for m in tool_messages(first.messages)] == [
            "echo hi",
            "waiting for the user: deploy prod?",
        ]
        scripted.add("done")
        resumed = await client.resume(first, make_answer(first.pending, True), toolkit)
    assert resumed.status == "done"
    assert [m["content"] for m in tool_messages(scripted.requests[1].body["messages"])] == [
        "echo hi",
        "deployed prod (None)",
    ]
