"""Client's saving paths: what a run leaves in its thread when it ends, fails or resumes."""

from __future__ import annotations

from typing import Any

from tests.support.scripted import calling, scripted_client, usage
from toolnexus import MemoryStore, ToolContext, create_toolkit, define_tool, make_answer, suspend
from toolnexus.testing import ScriptedCall, ScriptedReply
from toolnexus.testing import failure as failed_call


async def test_resume_sums_usage_keys_only_the_resumed_run_has(scripted):
    def deploy(target: str, ctx: ToolContext) -> Any:
        """Deploy a target."""
        if ctx.answer is None:
            return suspend("approval", f"deploy {target}?", id="req_1")
        return "deployed"

    toolkit = (await create_toolkit()).register(define_tool(deploy))
    scripted.add(
        ScriptedReply(tool_calls=[ScriptedCall("deploy", {"target": "prod"})], usage=usage(10, 5)),
        ScriptedReply(text="done", usage={**usage(20, 4), "reasoning_tokens": 3}),
    )
    async with scripted_client(scripted) as client:
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


async def test_a_turn_whose_tools_ran_is_saved_when_the_final_call_fails(scripted):
    ran: list[str] = []

    def write_note(text: str) -> str:
        """Write a note."""
        ran.append(text)
        return "written"

    toolkit = (await create_toolkit()).register(define_tool(write_note))
    store = MemoryStore()
    scripted.add(
        calling(("write_note", {"text": "hi"})), failed_call(400, "the context is too long")
    )
    async with scripted_client(scripted, store=store) as client:
        try:
            await client.ask("note hi", toolkit, id="t")
        except Exception as exc:  # noqa: BLE001 - the failure is what this test is about
            failure = exc
        saved = await store.get("t")
        assert ran == ["hi"] and "context is too long" in str(failure)
        assert [m["role"] for m in saved] == ["user", "assistant", "tool"]
        assert not any(m.get("dropped") for m in saved)  # what ran is sent next time
        scripted.add("noted")
        await client.ask("did it work?", toolkit, id="t")
    sent = scripted.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2]["content"] == "written"


async def test_a_failed_prompt_is_kept_marked_and_not_sent_again(scripted):
    store = MemoryStore()
    scripted.add("first answer", failed_call(400, "bad request"), "third answer")
    async with scripted_client(scripted, store=store) as client:
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
    assert [m["content"] for m in scripted.requests[-1].body["messages"]] == [
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
