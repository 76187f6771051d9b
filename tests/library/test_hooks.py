"""Hooks around model and tool calls, and request_params, on toolnexus.testing's scripted
model through the openai and anthropic styles' real encoding."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.scripted import calling, scripted_client
from toolnexus import ToolResult, create_toolkit, define_tool
from toolnexus.hooks import HOOK_NAMES, Hooks

KINDS = ["sync", "async"]


def hook(fn: Callable[[dict[str, Any]], Any], kind: str) -> Callable[[dict[str, Any]], Any]:
    """`fn` as a sync hook, or as an async one that really suspends before answering."""
    if kind == "sync":
        return fn

    async def async_hook(payload: dict[str, Any]) -> Any:
        await asyncio.sleep(0)
        return fn(payload)

    return async_hook


async def add_toolkit(ran: list[dict[str, Any]] | None = None):
    def add(a: int, b: int) -> str:
        """Add two numbers."""
        if ran is not None:
            ran.append({"a": a, "b": b})
        return str(a + b)

    toolkit = await create_toolkit()
    return toolkit.register(define_tool(add))


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


async def run_with(client, prompt: str, toolkit, mode: str):
    """Drive the loop through run() (JSON replies) or stream() (SSE); return (result, events)."""
    if mode == "run":
        return await client.run(prompt, toolkit), None
    events = [e async for e in client.stream(prompt, toolkit)]
    return events[-1]["result"], events


# ----------------------------------------------------------------------------- before_llm


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_before_llm_sees_messages_tools_model_and_turn(scripted, kind, mode):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "3")
    seen: list[dict[str, Any]] = []
    hooks = {"before_llm": hook(lambda p: seen.append(copy.deepcopy(p)), kind)}
    toolkit = await add_toolkit()
    async with scripted_client(scripted, hooks=hooks) as client:
        result, _ = await run_with(client, "add 1 and 2", toolkit, mode)

    assert result.text == "3"
    assert [set(p) for p in seen] == [{"messages", "tools", "model", "turn"}] * 2
    assert [p["turn"] for p in seen] == [1, 2]
    assert all(p["model"] == "m" and p["tools"] == toolkit.to_openai() for p in seen)
    assert seen[0]["messages"] == [{"role": "user", "content": "add 1 and 2"}]
    # turn 2 sees the transcript so far: the call and its result
    assert [m["role"] for m in seen[1]["messages"]] == ["user", "assistant", "tool"]
    assert seen[1]["messages"][2]["content"] == "3"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_before_llm_replacements_change_that_request_only(scripted, kind, mode):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "3")
    rewritten = [{"role": "user", "content": "rewritten prompt"}]

    def before_llm(payload: dict[str, Any]) -> dict[str, Any] | None:
        if payload["turn"] == 1:
            return {"messages": rewritten, "tools": [], "model": "other-model"}
        return None

    toolkit = await add_toolkit()
    async with scripted_client(scripted, hooks={"before_llm": hook(before_llm, kind)}) as client:
        result, _ = await run_with(client, "original prompt", toolkit, mode)

    first, second = scripted.requests[0].body, scripted.requests[1].body
    assert first["model"] == "other-model"
    assert first["messages"] == rewritten
    assert "tools" not in first
    # the next request is built from the real transcript again
    assert second["model"] == "m"
    assert second["tools"] == toolkit.to_openai()
    assert second["messages"][0] == {"role": "user", "content": "original prompt"}
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    # and the transcript handed back never held the replacements
    assert result.messages[0] == {"role": "user", "content": "original prompt"}
    assert all(m.get("content") != "rewritten prompt" for m in result.messages)
    assert result.model == "m"


async def test_before_llm_partial_replacement_keeps_the_rest(scripted):
    scripted.add("ok")
    toolkit = await add_toolkit()
    hooks = {"before_llm": lambda p: {"model": "swapped", "turnip": "ignored"}}
    async with scripted_client(scripted, hooks=hooks) as client:
        await client.run("hello", toolkit)
    body = scripted.requests[0].body
    assert body["model"] == "swapped"
    assert body["messages"] == [{"role": "user", "content": "hello"}]
    assert body["tools"] == toolkit.to_openai()
    assert "turnip" not in body


async def test_before_llm_sees_anthropic_tools_and_replaces_the_anthropic_request(scripted):
    scripted.add(calling(("add", {"a": 2, "b": 2})), "4")
    seen: list[dict[str, Any]] = []

    def before_llm(payload: dict[str, Any]) -> dict[str, Any]:
        seen.append(copy.deepcopy(payload))
        return {"model": f"claude-turn-{payload['turn']}"}

    toolkit = await add_toolkit()
    async with scripted_client(
        scripted, style="anthropic", hooks={"before_llm": before_llm}
    ) as client:
        result = await client.run("2+2", toolkit)
    assert result.text == "4"
    assert seen[0]["tools"] == toolkit.to_anthropic()
    assert [r.body["model"] for r in scripted.requests] == ["claude-turn-1", "claude-turn-2"]


# ----------------------------------------------------------------------------- after_llm


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_after_llm_sees_response_model_and_turn(scripted, kind, mode):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "three")
    seen: list[dict[str, Any]] = []
    hooks = {
        "before_llm": lambda p: {"model": "per-request"} if p["turn"] == 2 else None,
        "after_llm": hook(lambda p: seen.append(copy.deepcopy(p)), kind),
    }
    async with scripted_client(scripted, hooks=hooks) as client:
        result, _ = await run_with(client, "add", await add_toolkit(), mode)

    assert result.text == "three"
    assert [p["turn"] for p in seen] == [1, 2]
    assert all({"response", "model", "turn"} <= set(p) for p in seen)
    # the model the request actually went to
    assert [p["model"] for p in seen] == ["m", "per-request"]
    first, second = seen[0]["response"], seen[1]["response"]
    assert first["role"] == "assistant"
    assert first["tool_calls"][0]["function"]["name"] == "add"
    assert json.loads(first["tool_calls"][0]["function"]["arguments"]) == {"a": 1, "b": 2}
    assert second == result.messages[-1]
    assert second["content"] == "three"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_after_llm_may_replace_the_response(scripted, kind, mode):
    scripted.add("the raw answer")

    def after_llm(payload: dict[str, Any]) -> dict[str, Any]:
        return {"response": {"role": "assistant", "content": "the edited answer"}}

    async with scripted_client(scripted, hooks={"after_llm": hook(after_llm, kind)}) as client:
        result, _ = await run_with(client, "hi", await add_toolkit(), mode)
    assert result.text == "the edited answer"
    assert result.messages[-1] == {"role": "assistant", "content": "the edited answer"}
    assert all(m.get("content") != "the raw answer" for m in result.messages)


async def test_after_llm_replacement_with_a_tool_call_is_acted_on(scripted):
    """The replaced response is what the loop follows: here it turns a plain answer into
    a tool call, so the tool runs and the model gets a second turn."""
    scripted.add("no tools needed", "5")
    call = {
        "id": "call_hook",
        "type": "function",
        "function": {"name": "add", "arguments": json.dumps({"a": 2, "b": 3})},
    }

    def after_llm(payload: dict[str, Any]) -> dict[str, Any] | None:
        if payload["turn"] == 1:
            return {"response": {"role": "assistant", "content": None, "tool_calls": [call]}}
        return None

    ran: list[dict[str, Any]] = []
    async with scripted_client(scripted, hooks={"after_llm": after_llm}) as client:
        result = await client.run("add", await add_toolkit(ran))
    assert ran == [{"a": 2, "b": 3}]
    assert result.text == "5" and result.turns == 2
    sent = scripted.requests[1].body["messages"]
    assert sent[1]["tool_calls"] == [call]
    assert sent[2] == {"role": "tool", "tool_call_id": "call_hook", "content": "5"}


async def test_after_llm_returning_nothing_useful_keeps_the_response(scripted):
    scripted.add("kept")
    hooks = {"after_llm": lambda p: {"unrelated": 1}}
    async with scripted_client(scripted, hooks=hooks) as client:
        result = await client.run("hi", None)
    assert result.text == "kept"


# ----------------------------------------------------------------------------- before_tool


@pytest.mark.parametrize("kind", KINDS)
async def test_before_tool_sees_name_args_id_and_turn(scripted, kind):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "3")
    seen: list[dict[str, Any]] = []
    hooks = {"before_tool": hook(lambda p: seen.append(copy.deepcopy(p)), kind)}
    async with scripted_client(scripted, hooks=hooks) as client:
        await client.run("add", await add_toolkit())
    assert seen == [{"name": "add", "args": {"a": 1, "b": 2}, "id": "call_1", "turn": 1}]


@pytest.mark.parametrize("kind", KINDS)
async def test_before_tool_result_short_circuits_the_tool(scripted, kind):
    scripted.add(
        calling(("add", {"a": 1, "b": 2})),
        "understood",
    )
    ran: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []

    def before_tool(payload: dict[str, Any]) -> dict[str, Any]:
        return {"result": ToolResult("blocked by policy", is_error=True)}

    hooks = {"before_tool": hook(before_tool, kind), "after_tool": lambda p: after.append(p)}
    async with scripted_client(scripted, hooks=hooks) as client:
        events = [e async for e in client.stream("add", await add_toolkit(ran))]

    assert ran == []  # the tool never ran
    results = [e for e in events if e["type"] == "tool_result"]
    assert results == [
        {
            "type": "tool_result",
            "id": "call_1",
            "name": "add",
            "output": "blocked by policy",
            "is_error": True,
        }
    ]
    # the model sees the given result, marked as a failure
    assert tool_messages(scripted.requests[1].body) == [
        {"role": "tool", "tool_call_id": "call_1", "content": "Error: blocked by policy"}
    ]
    transcript = events[-1]["result"].messages
    assert transcript[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "blocked by policy",
        "is_error": True,
    }
    # after_tool still sees what the model will get
    assert after[0]["result"].output == "blocked by policy"


@pytest.mark.parametrize("kind", KINDS)
async def test_before_tool_args_rewrite_runs_the_tool_with_new_args(scripted, kind):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "done")
    ran: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    hooks = {
        "before_tool": hook(lambda p: {"args": {"a": 40, "b": 2}}, kind),
        "after_tool": lambda p: after.append(copy.deepcopy(p)),
    }
    async with scripted_client(scripted, hooks=hooks) as client:
        result = await client.run("add", await add_toolkit(ran))

    assert ran == [{"a": 40, "b": 2}]
    assert tool_messages(scripted.requests[1].body)[0]["content"] == "42"
    assert after[0]["args"] == {"a": 40, "b": 2}
    # the model's own call stays as it made it
    call = result.messages[1]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"a": 1, "b": 2}


async def test_before_tool_returning_none_runs_the_tool_as_called(scripted):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "done")
    ran: list[dict[str, Any]] = []
    async with scripted_client(scripted, hooks={"before_tool": lambda p: None}) as client:
        await client.run("add", await add_toolkit(ran))
    assert ran == [{"a": 1, "b": 2}]
    assert tool_messages(scripted.requests[1].body)[0]["content"] == "3"


# ----------------------------------------------------------------------------- after_tool


@pytest.mark.parametrize("kind", KINDS)
async def test_after_tool_sees_name_args_result_id_and_turn(scripted, kind):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "3")
    seen: list[dict[str, Any]] = []
    async with scripted_client(scripted, hooks={"after_tool": hook(seen.append, kind)}) as client:
        await client.run("add", await add_toolkit())
    assert len(seen) == 1
    payload = seen[0]
    assert set(payload) == {"name", "args", "result", "id", "turn"}
    assert (payload["name"], payload["args"], payload["id"], payload["turn"]) == (
        "add",
        {"a": 1, "b": 2},
        "call_1",
        1,
    )
    assert isinstance(payload["result"], ToolResult)
    assert (payload["result"].output, payload["result"].is_error) == ("3", False)
    assert tool_messages(scripted.requests[1].body)[0]["content"] == "3"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", ["ToolResult", "dict"])
async def test_after_tool_may_replace_the_result(scripted, kind, shape):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "ok")
    ran: list[dict[str, Any]] = []

    def after_tool(payload: dict[str, Any]) -> Any:
        replacement = ToolResult(f"redacted ({payload['result'].output} hidden)", is_error=True)
        return replacement if shape == "ToolResult" else {"result": replacement}

    async with scripted_client(scripted, hooks={"after_tool": hook(after_tool, kind)}) as client:
        events = [e async for e in client.stream("add", await add_toolkit(ran))]

    assert ran == [{"a": 1, "b": 2}]  # the tool did run; its output was replaced
    result_event = next(e for e in events if e["type"] == "tool_result")
    assert (result_event["output"], result_event["is_error"]) == ("redacted (3 hidden)", True)
    assert tool_messages(scripted.requests[1].body)[0]["content"] == "Error: redacted (3 hidden)"
    assert events[-1]["result"].messages[2]["is_error"] is True


@pytest.mark.parametrize(
    "returned", [None, {}, {"logged": True}], ids=["none", "empty-dict", "dict-without-result"]
)
async def test_after_tool_returning_no_replacement_keeps_the_result(scripted, returned):
    """Like before_tool and after_llm, a dict without the "result" key changes nothing
    (it must not become the tool output the model sees)."""
    scripted.add(calling(("add", {"a": 1, "b": 2})), "ok")
    async with scripted_client(scripted, hooks={"after_tool": lambda p: returned}) as client:
        result = await client.run("add", await add_toolkit())
    assert tool_messages(scripted.requests[1].body)[0]["content"] == "3"
    assert result.messages[2]["content"] == "3"


async def test_after_tool_may_return_a_plain_string(scripted):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "ok")
    async with scripted_client(scripted, hooks={"after_tool": lambda p: "three"}) as client:
        await client.run("add", await add_toolkit())
    assert tool_messages(scripted.requests[1].body)[0]["content"] == "three"


# ----------------------------------------------------------------------------- shapes


async def test_all_four_hooks_fire_in_order_with_the_turn(scripted):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "3")
    order: list[tuple[str, int]] = []

    def recorder(name: str) -> Callable[[dict[str, Any]], None]:
        return lambda p: order.append((name, p["turn"]))

    async with scripted_client(scripted, hooks={n: recorder(n) for n in HOOK_NAMES}) as client:
        await client.run("add", await add_toolkit())
    assert order == [
        ("before_llm", 1),
        ("after_llm", 1),
        ("before_tool", 1),
        ("after_tool", 1),
        ("before_llm", 2),
        ("after_llm", 2),
    ]


async def test_hooks_given_as_an_object_with_methods(scripted):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "final")

    class Policy:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def before_llm(self, payload: dict[str, Any]) -> dict[str, Any]:
            self.calls.append("before_llm")
            return {"model": "object-model"}

        async def after_llm(self, payload: dict[str, Any]) -> None:
            self.calls.append("after_llm")

        async def before_tool(self, payload: dict[str, Any]) -> dict[str, Any]:
            self.calls.append("before_tool")
            return {"args": {"a": 10, "b": 10}}

        def after_tool(self, payload: dict[str, Any]) -> ToolResult:
            self.calls.append("after_tool")
            return ToolResult(f"sum={payload['result'].output}")

        def unrelated(self) -> None:  # other attributes are not hooks, and not an error
            raise AssertionError("never called")

    policy = Policy()
    ran: list[dict[str, Any]] = []
    async with scripted_client(scripted, hooks=policy) as client:
        result = await client.run("add", await add_toolkit(ran))
    assert result.text == "final"
    assert policy.calls == [
        "before_llm",
        "after_llm",
        "before_tool",
        "after_tool",
        "before_llm",
        "after_llm",
    ]
    assert ran == [{"a": 10, "b": 10}]
    assert [r.body["model"] for r in scripted.requests] == ["object-model"] * 2
    assert tool_messages(scripted.requests[1].body)[0]["content"] == "sum=20"


async def test_an_object_with_only_some_hooks(scripted):
    scripted.add("hi")

    class OnlyAfter:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def after_llm(self, payload: dict[str, Any]) -> None:
            self.seen.append(payload["response"]["content"])

    only = OnlyAfter()
    hooks = Hooks(only)
    assert "after_llm" in hooks and "before_llm" not in hooks
    async with scripted_client(scripted, hooks=only) as client:
        await client.run("hi", None)
    assert only.seen == ["hi"]


def test_an_unknown_hook_name_is_a_value_error(scripted):
    with pytest.raises(ValueError, match="before_lm"):
        scripted_client(scripted, hooks={"before_lm": lambda p: None})
    with pytest.raises(ValueError, match="on_tool"):
        scripted_client(scripted, hooks={"before_llm": lambda p: None, "on_tool": lambda p: None})
    with pytest.raises(ValueError, match="before_llm, after_llm, before_tool, after_tool"):
        Hooks({"after": lambda p: None})


def test_known_hook_names_are_accepted_and_none_means_no_hooks():
    hooks = Hooks({name: (lambda p: None) for name in HOOK_NAMES})
    assert all(name in hooks for name in HOOK_NAMES)
    assert not any(name in Hooks(None) for name in HOOK_NAMES)
    assert not any(name in Hooks({"before_llm": None}) for name in HOOK_NAMES)


# ----------------------------------------------------------------------------- request_params


@pytest.mark.parametrize("mode", ["run", "stream"])
async def test_request_params_are_merged_into_every_body(scripted, mode):
    scripted.add(calling(("add", {"a": 1, "b": 2})), "3")
    params = {"temperature": 0.2, "top_p": 0.9, "seed": 7}
    async with scripted_client(scripted, request_params=params) as client:
        result, _ = await run_with(client, "add", await add_toolkit(), mode)
    assert result.text == "3"
    assert len(scripted.requests) == 2
    for request in scripted.requests:
        body = request.body
        assert {k: body[k] for k in params} == params
        assert body["model"] == "m" and body["stream"] is (mode == "stream")
        assert body["tools"]  # the loop's own keys are still there


async def test_request_params_merge_into_anthropic_bodies(scripted):
    scripted.add("hi")
    async with scripted_client(
        scripted, style="anthropic", request_params={"temperature": 0, "max_tokens": 77}
    ) as client:
        await client.run("hi", None)
    body = scripted.requests[0].body
    assert body["temperature"] == 0 and body["max_tokens"] == 77


@pytest.mark.parametrize("key", ["messages", "tools", "stream"])
def test_request_params_may_not_set_reserved_keys(scripted, key):
    with pytest.raises(ValueError, match=key):
        scripted_client(scripted, request_params={"temperature": 1, key: []})


# ----------------------------------------------------------------------------- typed payloads


async def test_each_hook_gets_the_keys_its_payload_type_declares(scripted):
    from toolnexus.hooks import AfterLlm, AfterTool, BeforeLlm, BeforeTool

    scripted.add(calling(("add", {"a": 1, "b": 2})), "3")
    keys: dict[str, set[str]] = {}
    hooks = {
        name: (lambda payload, name=name: keys.setdefault(name, set(payload)))
        for name in HOOK_NAMES
    }
    async with scripted_client(scripted, hooks=hooks) as client:
        await client.run("add", await add_toolkit())
    assert keys == {
        "before_llm": set(BeforeLlm.__annotations__),
        "after_llm": set(AfterLlm.__annotations__),
        "before_tool": set(BeforeTool.__annotations__),
        "after_tool": set(AfterTool.__annotations__),
    }
