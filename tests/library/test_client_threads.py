"""Client's saving paths: what a run leaves in its thread when it ends, fails or resumes."""

from __future__ import annotations

from typing import Any

from tests.support.resilience_helpers import single_try_client
from tests.support.stub_provider import Reply, openai_text, openai_tool_call
from toolnexus import MemoryStore, ToolContext, create_toolkit, define_tool, make_answer, suspend


def with_reasoning(body: dict, reasoning_tokens: int) -> dict:
    body["usage"]["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return body


async def test_resume_sums_usage_keys_only_the_resumed_run_has(stub):
    def deploy(target: str, ctx: ToolContext) -> Any:
        """Deploy a target."""
        if ctx.answer is None:
            return suspend("approval", f"deploy {target}?", id="req_1")
        return "deployed"

    toolkit = (await create_toolkit()).register(define_tool(deploy))
    stub.script(
        Reply.json(openai_tool_call([("deploy", {"target": "prod"})], usage=(10, 5))),
        Reply.json(with_reasoning(openai_text("done", usage=(20, 4)), 3)),
    )
    async with single_try_client(stub) as client:
        result = await client.run("deploy prod", toolkit)
        assert result.status == "pending" and "reasoning_tokens" not in result.usage
        resumed = await client.resume(result, make_answer("req_1", True), toolkit)
    assert resumed.text == "done"
    assert resumed.usage == {
        "prompt_tokens": 30,
        "completion_tokens": 9,
        "total_tokens": 39,
        "reasoning_tokens": 3,
    }


async def test_a_turn_whose_tools_ran_is_saved_when_the_final_call_fails(stub):
    ran: list[str] = []

    def write_note(text: str) -> str:
        """Write a note."""
        ran.append(text)
        return "written"

    toolkit = (await create_toolkit()).register(define_tool(write_note))
    store = MemoryStore()
    stub.script(
        Reply.json(openai_tool_call([("write_note", {"text": "hi"})])),
        Reply.error(400, "the context is too long"),
    )
    async with single_try_client(stub, store=store) as client:
        try:
            await client.ask("note hi", toolkit, id="t")
        except Exception as exc:  # noqa: BLE001 - the failure is what this test is about
            failure = exc
        saved = await store.get("t")
        assert ran == ["hi"] and "context is too long" in str(failure)
        assert [m["role"] for m in saved] == ["user", "assistant", "tool"]
        assert not any(m.get("dropped") for m in saved)  # what ran is sent next time
        stub.script(Reply.json(openai_text("noted")))
        await client.ask("did it work?", toolkit, id="t")
    sent = stub.requests[-1].json["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2]["content"] == "written"


async def test_a_failed_prompt_is_kept_marked_and_not_sent_again(stub):
    store = MemoryStore()
    stub.script(
        Reply.json(openai_text("first answer")),
        Reply.error(400, "bad request"),
        Reply.json(openai_text("third answer")),
    )
    async with single_try_client(stub, store=store) as client:
        await client.ask("one", None, id="t")
        try:
            await client.ask("two", None, id="t")
        except Exception as exc:  # noqa: BLE001
            assert exc.result.messages[-1] == {
                "role": "user",
                "content": "two",
                "dropped": "failed",
                "failed_with": str(exc),
            }
        await client.ask("three", None, id="t")
    assert [m["content"] for m in stub.requests[-1].json["messages"]] == [
        "one",
        "first answer",
        "three",
    ]
    assert [(m["content"], m.get("dropped")) for m in await store.get("t")] == [
        ("one", None),
        ("first answer", None),
        ("two", "failed"),
        ("three", None),
        ("third answer", None),
    ]
